"""Model version changes: tags, description, stage transitions and delete, each guarded so that it lands only
while the model has no rename/delete in progress and the version is live."""

from __future__ import annotations

from typing import Any

from serverless_mlflow.core import clock
from serverless_mlflow.core.errors import MlflowError, invalid
from serverless_mlflow.core.validation import validate_model_name, validate_model_version_tag, validate_tag_name
from serverless_mlflow.storage import table
from serverless_mlflow.store import registry_events

from . import reads, versions
from .items import (
    ACTIVE_STAGES,
    MV,
    NO_MARKERS,
    STAGE_ARCHIVED,
    VERSION_LIVE,
    aliases_query,
    meta_key,
    scope,
    version_key,
    version_tag_item,
    version_tags_query,
)


def guarded_version_write(name: str, number: int, operations: list[dict[str, Any]]) -> None:
    """Write ``operations`` only while the model has no rename/delete marker and the version is live."""
    for _ in range(3):
        try:
            table.transact(
                [table.check_op(meta_key(name), NO_MARKERS), table.check_op(version_key(name, number), VERSION_LIVE), *operations]
            )
            return
        except table.ConditionFailed as failure:
            _after_failed_guard(name, number, failure)
    raise reads.version_not_found(name, number)


def _after_failed_guard(name: str, number: int, failure: table.ConditionFailed) -> None:
    """A guarded version write failed: 404 for a missing version, else finish the model's job and retry."""
    reasons = failure.reasons or []
    if len(reasons) > 1 and reasons[1] == "ConditionalCheckFailed":
        raise reads.version_not_found(name, number) from None
    try:
        reads.require_meta(name)  # finishes a rename/delete in progress
    except MlflowError:
        raise reads.version_not_found(name, number) from None


def set_model_version_tag(name: str, version: Any, key: str, value: str) -> None:
    validate_model_name(name)
    number = reads.version_number(name, version)
    validate_model_version_tag(key, value)
    payload = {"name": name, "version": str(version), "key": key, "value": value}
    event = registry_events.event_op("model_version_tag", "set", payload, name, prompt_aware=True)
    guarded_version_write(name, number, [table.put_op(version_tag_item(name, number, key, value)), event])


def delete_model_version_tag(name: str, version: Any, key: str) -> None:
    validate_model_name(name)
    number = reads.version_number(name, version)
    validate_tag_name(key)
    tag_key = version_tag_item(name, number, key, "")
    payload = {"name": name, "version": str(version), "key": key}
    event = registry_events.event_op("model_version_tag", "deleted", payload, name, prompt_aware=True)
    guarded_version_write(name, number, [table.delete_op({"pk": tag_key["pk"], "sk": tag_key["sk"]}), event])


def update_model_version(name: str, version: Any, description: str | None) -> dict[str, Any]:
    validate_model_name(name)
    number = reads.version_number(name, version)
    now = clock.now_millis()
    if description is None:
        update = table.update_op(version_key(name, number), "SET last_updated_timestamp = :now REMOVE description", values={":now": now})
    else:
        update = table.update_op(
            version_key(name, number), "SET last_updated_timestamp = :now, description = :d", values={":now": now, ":d": description}
        )
    _guarded_update(name, number, [update])
    return versions.get_model_version(name, number)


def _guarded_update(name: str, number: int, updates: list[dict[str, Any]], touch_model: int | None = None) -> None:
    """Updates of version items (first one is ``number``): META check (or touch), version live."""
    for _ in range(3):
        if touch_model is not None:
            guard = table.update_op(meta_key(name), "SET last_updated_timestamp = :now", values={":now": touch_model}, condition=NO_MARKERS)
        else:
            guard = table.check_op(meta_key(name), NO_MARKERS)
        first = dict(updates[0]["Update"])
        first["ConditionExpression"] = VERSION_LIVE
        try:
            table.transact([guard, {"Update": first}, *updates[1:]])
            return
        except table.ConditionFailed as failure:
            _after_failed_guard(name, number, failure)
    raise reads.version_not_found(name, number)


def transition_model_version_stage(name: str, version: Any, stage: str, archive_existing_versions: bool) -> dict[str, Any]:
    target = versions.canonical_stage(stage)
    if archive_existing_versions and target not in ACTIVE_STAGES:
        raise invalid(  # MLflow raises it without an error code (a 500 from its server)
            "Model version transition cannot archive existing model versions "
            f"because '{stage}' is not an Active stage. Valid stages are {list(ACTIVE_STAGES)}"
        )
    validate_model_name(name)
    number = reads.version_number(name, version)
    now = clock.now_millis()
    updates = [_stage_update(name, number, target, now)]
    if archive_existing_versions:
        in_stage = table.query(**MV.query("by_stage", model_name=name, model_scope=scope(), current_stage=target))
        updates += [
            _stage_update(name, item["version"], STAGE_ARCHIVED, now)
            for item in in_stage
            if item["version"] != number and not item.get("deleting")
        ]
    # One transaction holds 100 operations; a model with more versions in one stage archives them in
    # follow-up transactions (each item update is idempotent).
    _guarded_update(name, number, updates[:98], touch_model=now)
    for start in range(98, len(updates), 98):
        table.transact(updates[start : start + 98])
    return versions.get_model_version(name, number)


def _stage_update(name: str, number: int, stage: str, now: int) -> dict[str, Any]:
    by_stage = MV.patterns["by_stage"]
    lsi_sk = MV.index_sk(by_stage.index, model_name=name, version=number, current_stage=stage)
    # The condition keeps an update from creating a stub item for a version deleted meanwhile.
    return table.update_op(
        version_key(name, number),
        "SET current_stage = :stage, last_updated_timestamp = :now, #stage_sk = :lsi",
        names={"#stage_sk": by_stage.sk_attr},
        values={":stage": stage, ":now": now, ":lsi": lsi_sk},
        condition="attribute_exists(pk)",
    )


def delete_model_version(name: str, version: Any) -> None:
    """Mark the version (it disappears from every read), remove its tags and aliases, then the version.

    A retried request finds the mark and finishes the job; nothing can attach to a marked version.
    """
    validate_model_name(name)
    number = reads.version_number(name, version)
    now = clock.now_millis()
    mark = table.update_op(version_key(name, number), "SET deleting = if_not_exists(deleting, :now)", values={":now": now})
    mark["Update"]["ConditionExpression"] = "attribute_exists(pk)"
    for _ in range(3):
        try:
            table.transact([table.check_op(meta_key(name), NO_MARKERS), mark])
            break
        except table.ConditionFailed as failure:
            _after_failed_guard(name, number, failure)
    else:
        raise reads.version_not_found(name, number)
    finish_version_delete(name, number, now)


def finish_version_delete(name: str, number: int, now: int) -> None:
    doomed = [i for i in table.query(**version_tags_query(name, number))]
    aliases = table.query(**aliases_query(name))
    doomed += [i for i in aliases if i.get("version") == number]
    deletes = [table.delete_op({"pk": i["pk"], "sk": i["sk"]}) for i in doomed]
    # An alias that splits traffic onto the deleted version keeps its primary version and loses the split.
    for alias in aliases:
        if alias.get("version") != number and alias.get("secondary_version") == number:
            try:
                table.update(
                    {"pk": alias["pk"], "sk": alias["sk"]},
                    "REMOVE secondary_version, secondary_weight",
                    values={":n": number},
                    condition="secondary_version = :n",
                )
            except table.ConditionFailed:
                pass  # the alias was moved or deleted meanwhile
    guard = table.check_op(meta_key(name), NO_MARKERS)
    while len(deletes) > 97:
        try:
            table.transact([guard, *deletes[:97]])
        except table.ConditionFailed:
            reads.require_meta(name)  # a rename/delete took over: it drops half-deleted versions
            return
        deletes = deletes[97:]
    version_delete = table.delete_op(version_key(name, number), condition="attribute_exists(deleting)")
    touch = table.update_op(meta_key(name), "SET last_updated_timestamp = :now", values={":now": now}, condition=NO_MARKERS)
    try:
        table.transact([touch, version_delete, *deletes])
    except table.ConditionFailed:
        # Another request finished the delete, or a rename/delete of the model took over (it drops
        # half-deleted versions); either way the version is gone once that job completes.
        reads.require_meta(name)
