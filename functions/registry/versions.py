"""Model versions: create (atomic numbering), get, update, stages, tags, delete, download URI."""

from __future__ import annotations

import os
import random
import re
import time
import urllib.parse
from collections.abc import Callable
from typing import Any

from serverless_mlflow import clock, registry_events, table
from serverless_mlflow.errors import MlflowError, invalid, not_found, retry_later
from serverless_mlflow.request import key_values_of
from serverless_mlflow.store import logged_models
from serverless_mlflow.validation import (
    validate_model_alias_name,
    validate_model_name,
    validate_model_version_tag,
    validate_tag_name,
)

from . import reads, sources
from .items import (
    ACTIVE_STAGES,
    ALL_STAGES,
    IS_PROMPT_TAG_KEY,
    MV,
    NO_MARKERS,
    READY,
    STAGE_ARCHIVED,
    STAGE_NONE,
    VERSION_LIVE,
    aliases_query,
    meta_key,
    scope,
    version_item,
    version_json,
    version_key,
    version_tag_item,
    version_tags_query,
)

MAX_ALLOCATION_ATTEMPTS = 50
TAGS_IN_CREATE_TRANSACTION = 98


def canonical_stage(stage: str) -> str:
    mapping = {s.lower(): s for s in ALL_STAGES}
    if stage.lower() not in mapping:
        raise invalid(f"Invalid Model Version stage: {stage}. Value must be one of {', '.join(ALL_STAGES)}.")
    return mapping[stage.lower()]


def tags_dict(tags: list[Any] | None) -> dict[str, str]:
    """Request tags as MLflow's proto sees them: unset strings are "", the last duplicate wins.

    A tag that is not a message, or a key/value that is not a string, is refused (MLflow's server turns
    some of these into an empty key, others into an empty value)."""
    return {pair["key"]: pair["value"] for pair in key_values_of(tags or [], "tags")}


def is_prompt_tags(tags: dict[str, str]) -> bool:
    return tags.get(IS_PROMPT_TAG_KEY, "false").lower() == "true"


# --- create ---------------------------------------------------------------------------------------


def create_model_version(message: dict[str, Any]) -> dict[str, Any]:
    name: str = message.get("name", "")
    source: str = message.get("source", "")
    run_id: str | None = message.get("run_id", "")
    model_id: str | None = message.get("model_id", "")
    description: str = message.get("description", "")
    run_link: str = message.get("run_link", "")
    tags = tags_dict(message.get("tags"))

    regex = os.environ.get("MLFLOW_CREATE_MODEL_VERSION_SOURCE_VALIDATION_REGEX")
    if source and regex and not re.search(regex, source):
        raise invalid(f"Invalid model version source: '{source}'.")
    is_prompt = is_prompt_tags(tags)
    if is_prompt:
        sources.validate_prompt_source(source)
    else:
        source, run_id, model_id = resolve_lineage(source, run_id, model_id, "run_id" in message, "model_id" in message)
        if model_id:
            sources.validate_source_model(source, model_id)
        else:
            sources.validate_source_run(source, run_id)

    # The store's own checks (SqlAlchemyStore.create_model_version), still before any write.
    validate_model_name(name)
    for key, value in tags.items():
        validate_model_version_tag(key, value)
    storage_location, run_id = storage_location_for(source, run_id)
    if not run_id and model_id:
        run_id = sources.get_logged_model(model_id).get("source_run_id")

    attributes = {
        "name": name,
        "description": description,
        "current_stage": STAGE_NONE,
        "source": source,
        "run_id": run_id,
        "run_link": run_link,
        "status": READY,
        "storage_location": storage_location,
        "model_id": model_id or None,
    }
    # A version registered from a logged model is listed in that model's mlflow.modelVersions tag (MLflow's
    # server does this right after creating the version; here it is part of the same transaction).
    link = (lambda number: logged_models.model_versions_tag_op(model_id, name, number)) if model_id and not is_prompt else None

    def event(number: int) -> dict[str, Any]:
        entity, payload = registry_events.version_created(name, number, source, run_id, tags, description, is_prompt)
        return registry_events.event_op(entity, "created", payload, name)

    item = allocate_and_put(name, attributes, tags, link, event)
    return version_json(item, tags, [])


def allocate_and_put(
    name: str,
    attributes: dict[str, Any],
    tags: dict[str, str],
    link: Callable[[int], dict[str, Any] | None] | None = None,
    event: Callable[[int], dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """Take the next version number and write the version in one transaction.

    The transaction increments META's ``next_version`` only if it still holds the value read, so two
    concurrent creates can never write the same number: the loser's condition fails and it retries
    with the next number. The version put is also conditioned on the key being free. ``link(number)``
    gives one more (conditioned) write of the same transaction, rebuilt from fresh reads on every attempt;
    ``event(number)`` the registry event (outbox item) of the new version, last in the transaction.
    """
    tag_items = list(tags.items())
    for attempt in range(MAX_ALLOCATION_ATTEMPTS):
        meta = reads.require_meta(name)
        number = int(meta.get("next_version") or 1)
        now = clock.now_millis()
        item = version_item({**attributes, "version": number, "creation_timestamp": now, "last_updated_timestamp": now})
        linked = link(number) if link else None
        announced = event(number) if event else None
        in_transaction = TAGS_IN_CREATE_TRANSACTION - (1 if linked else 0) - (1 if announced else 0)
        operations = [
            table.update_op(
                meta_key(name),
                "SET next_version = :next, last_updated_timestamp = :now",
                values={":next": number + 1, ":now": now, ":expected": number},
                condition=f"{NO_MARKERS} AND (next_version = :expected OR attribute_not_exists(next_version))",
            ),
            table.put_op(item, condition="attribute_not_exists(pk)"),
            *(table.put_op(version_tag_item(name, number, k, v)) for k, v in tag_items[:in_transaction]),
            *([linked] if linked else []),
            *([announced] if announced else []),
        ]
        try:
            table.transact(operations)
        except table.ConditionFailed:
            time.sleep(min(0.5, 0.01 * (2 ** min(attempt, 6))) * random.random())
            continue
        # Tags beyond one transaction's capacity (rare) follow in guarded batches.
        for key, value in tag_items[in_transaction:]:
            _guarded_version_write(name, number, [table.put_op(version_tag_item(name, number, key, value))])
        return item
    raise retry_later(f"Model Version creation error (name={name}). Giving up after {MAX_ALLOCATION_ATTEMPTS} attempts.")


def resolve_lineage(
    source: str, run_id: str | None, model_id: str | None, has_run_id: bool, has_model_id: bool
) -> tuple[str, str | None, str | None]:
    """``models:/<name>/<version|stage|latest>`` and ``models:/<name>@<alias>`` sources (copy_model_version)."""
    parsed = urllib.parse.urlparse(source)
    if parsed.scheme != "models":
        return source, run_id, model_id
    if parsed.netloc:
        raise invalid(f"Invalid model version source: '{source}'. Registered model sources must use the active model registry.")
    uri = sources.parse_model_uri(source) if _parses(source) else None
    if uri is None:
        raise sources.invalid_source(source, "model_id")
    if uri.model_id is not None:
        return source, run_id, model_id
    head = reads.require_head(uri.name or "")
    if head.tags.get(IS_PROMPT_TAG_KEY, "false").lower() == "true":
        raise invalid(f"Invalid model version source: '{source}'. Prompt versions cannot be used as model version sources.")
    name, version = model_name_and_version(uri)
    source_version, _ = require_version(name, version)
    if (has_run_id and (run_id or "") != (source_version.get("run_id") or "")) or (
        has_model_id and (model_id or "") != (source_version.get("model_id") or "")
    ):
        raise invalid(
            f"Invalid model version source: '{source}'. The run_id and model_id request parameters must match the referenced model version."
        )
    return (
        f"models:/{name}/{source_version['version']}",
        run_id if has_run_id else source_version.get("run_id"),
        model_id if has_model_id else source_version.get("model_id"),
    )


def _parses(source: str) -> bool:
    try:
        sources.parse_model_uri(source)
    except MlflowError:
        return False
    return True


def model_name_and_version(uri: sources.ParsedModelUri) -> tuple[str, str]:
    name = uri.name or ""
    if uri.version is not None:
        return name, uri.version
    if uri.alias is not None:
        return name, get_model_version_by_alias(name, uri.alias)["version"]
    stages = (canonical_stage(uri.stage),) if uri.stage is not None else ALL_STAGES
    reads.require_head(name, with_tags=False)
    latest = reads.latest_versions(name, stages)
    if not latest:
        stage_str = "" if uri.stage is None else f" and stage '{uri.stage}'"
        raise invalid(f"No versions of model with name '{name}'{stage_str} found")  # MLflow: a 500
    return name, str(max(int(v["version"]) for v in latest))


def storage_location_for(source: str, run_id: str | None) -> tuple[str, str | None]:
    """(storage_location, run_id) as SqlAlchemyStore.create_model_version resolves them."""
    scheme = urllib.parse.urlparse(source).scheme
    if scheme == "models":
        try:
            uri = sources.parse_model_uri(source)
            if uri.model_id is not None:
                model = sources.get_logged_model(uri.model_id)
                return sources.logged_model_location(model), run_id or model.get("source_run_id")
            return get_model_version_download_uri(uri.name or "", uri.version)["artifact_uri"], run_id
        except MlflowError as error:
            raise invalid(  # MLflow raises it without an error code (a 500 from its server)
                f"Unable to fetch model from model URI source artifact location '{source}'.Error: {error.message}"
            ) from error
    if scheme == "runs":
        source_run_id, artifact_path = sources.parse_runs_uri(source)
        try:
            run = sources.get_run(source_run_id)
        except MlflowError:
            return source, run_id
        return sources.join_uri(run.get("artifact_uri") or "", artifact_path), run_id
    return source, run_id


# --- reads ----------------------------------------------------------------------------------------


def require_version(name: str, version: Any) -> tuple[dict[str, Any], dict[str, str]]:
    validate_model_name(name)
    number = reads.version_number(name, version)
    found = reads.read_version(name, number)
    if found is None:
        raise reads.version_not_found(name, number)
    return found


def get_model_version(name: str, version: Any) -> dict[str, Any]:
    validate_model_name(name)
    number = reads.version_number(name, version)
    head = reads.read_head(name, with_tags=False)
    found = reads.read_version(name, number) if head is not None else None
    if head is None or found is None:
        raise reads.version_not_found(name, number)
    item, tags = found
    return version_json(item, tags, head.aliases_of(number))


def get_model_version_download_uri(name: str, version: Any) -> dict[str, str]:
    validate_model_name(name)
    number = reads.version_number(name, version)
    if reads.read_head(name, with_tags=False) is None:
        raise reads.version_not_found(name, number)
    found = reads.read_version(name, number)
    if found is None:
        raise reads.version_not_found(name, number)
    item = found[0]
    return {"artifact_uri": item.get("storage_location") or item.get("source") or ""}


def get_model_version_by_alias(name: str, alias: str) -> dict[str, Any]:
    validate_model_name(name)
    validate_model_alias_name(alias)
    if alias.lower() == "latest":
        latest = get_latest_versions(name, None)
        if not latest:
            raise not_found(f"Latest version not found for model {name}.")
        return max(latest, key=lambda v: int(v["version"]))
    head = reads.require_head(name, with_tags=False)
    if alias not in head.aliases:
        raise invalid(f"Registered model alias {alias} not found.")
    number = head.aliases[alias]
    found = reads.read_version(name, number)
    if found is None:
        raise reads.version_not_found(name, number)
    item, tags = found
    return version_json(item, tags, head.aliases_of(number))


def get_latest_versions(name: str, stages: list[str] | None) -> list[dict[str, Any]]:
    validate_model_name(name)
    head = reads.require_head(name, with_tags=False)
    wanted = tuple(dict.fromkeys(canonical_stage(s) for s in stages)) if stages else ALL_STAGES
    return reads.latest_versions(name, wanted, aliases=head)


# --- writes ---------------------------------------------------------------------------------------


def _guarded_version_write(name: str, number: int, operations: list[dict[str, Any]]) -> None:
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
    _guarded_version_write(name, number, [table.put_op(version_tag_item(name, number, key, value)), event])


def delete_model_version_tag(name: str, version: Any, key: str) -> None:
    validate_model_name(name)
    number = reads.version_number(name, version)
    validate_tag_name(key)
    tag_key = version_tag_item(name, number, key, "")
    payload = {"name": name, "version": str(version), "key": key}
    event = registry_events.event_op("model_version_tag", "deleted", payload, name, prompt_aware=True)
    _guarded_version_write(name, number, [table.delete_op({"pk": tag_key["pk"], "sk": tag_key["sk"]}), event])


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
    return get_model_version(name, number)


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
    target = canonical_stage(stage)
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
    return get_model_version(name, number)


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
