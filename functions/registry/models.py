"""Registered models: create, get, update, rename, delete, tags, aliases."""

from __future__ import annotations

from typing import Any

from serverless_mlflow.core import clock
from serverless_mlflow.core.errors import MlflowError, already_exists, invalid, retry_later
from serverless_mlflow.core.validation import (
    validate_model_alias_name,
    validate_model_alias_name_reserved,
    validate_model_name,
    validate_model_renaming,
    validate_registered_model_tag,
    validate_tag_name,
)
from serverless_mlflow.request.workspace import DEFAULT_WORKSPACE
from serverless_mlflow.storage import table
from serverless_mlflow.store import registry_events, workspaces

from . import lifecycle, reads
from .items import (
    IS_PROMPT_TAG_KEY,
    NO_MARKERS,
    RM_TAG,
    VERSION_LIVE,
    alias_item,
    entry_item,
    has_marker,
    meta_item,
    meta_key,
    model_json,
    model_tag_item,
    scope,
    version_key,
    workspace,
)

# META + name-list entry + tags + the event: one transaction holds 100 operations.
TAGS_IN_CREATE_TRANSACTION = 96
# The seeds' canary alias: the secondary version takes 0-99 % of the traffic, the primary the rest.
MAX_SECONDARY_WEIGHT = 99


def _is_prompt_value(value: str | None) -> bool:
    # MLflow's SQL store excludes prompts with tag value = 'true' (exact comparison).
    return value == "true"


def create_registered_model(name: str, tags: dict[str, str], description: str) -> dict[str, Any]:
    validate_model_name(name)
    for key, value in tags.items():
        validate_registered_model_tag(key, value)
    now = clock.now_millis()
    is_prompt = _is_prompt_value(tags.get(IS_PROMPT_TAG_KEY))
    meta = meta_item(
        {
            "name": name,
            "description": description,
            "creation_timestamp": now,
            "last_updated_timestamp": now,
            "next_version": 1,
            "workspace": workspace(),
            "is_prompt": is_prompt,
        }
    )
    tag_items = [model_tag_item(name, k, v) for k, v in tags.items()]
    entity, payload = registry_events.model_created(name, tags, description)
    operations = [
        table.put_op(meta, condition="attribute_not_exists(pk)"),
        table.put_op(entry_item(name, is_prompt)),
        *(table.put_op(item) for item in tag_items[:TAGS_IN_CREATE_TRANSACTION]),
        registry_events.event_op(entity, "created", payload, name),
    ]
    guard_workspace = workspace() != DEFAULT_WORKSPACE
    if guard_workspace:
        operations.append(workspaces.exists_check(workspace()))  # not while the workspace is being deleted
    try:
        # The conditional put on the model's own META key is the name-uniqueness check.
        table.transact(operations)
    except table.ConditionFailed as failure:
        reasons = failure.reasons
        if guard_workspace and reasons[-1:] == ["ConditionalCheckFailed"] and reasons[:1] != ["ConditionalCheckFailed"]:
            raise workspaces.missing(workspace()) from None
        raise _name_taken(name, IS_PROMPT_TAG_KEY in tags) from None
    for item in tag_items[TAGS_IN_CREATE_TRANSACTION:]:
        _guarded_model_write(name, [table.put_op(item)])
    return model_json(meta, tags, {}, [])


def _name_taken(name: str, new_is_prompt: bool) -> MlflowError:
    """MLflow's handle_resource_already_exist_error: the message depends on prompt vs model."""
    existing_prompt = table.get(RM_TAG.key(model_name=name, model_scope=scope(), key=IS_PROMPT_TAG_KEY)) is not None
    old_entity = "Prompt" if existing_prompt else "Registered Model"
    new_entity = "Prompt" if new_is_prompt else "Registered Model"
    if old_entity != new_entity:
        return already_exists(
            f"Tried to create a {new_entity.lower()} with name {name!r}, but the name is "
            f"already taken by a {old_entity.lower()}. MLflow does not allow creating a "
            "model and a prompt with the same name."
        )
    return already_exists(f"{new_entity} (name={name}) already exists.")


def get_registered_model(name: str) -> dict[str, Any]:
    validate_model_name(name)
    head = reads.require_head(name)
    return model_json(head.meta, head.tags, head.aliases, reads.latest_versions(name), head.splits)


def update_registered_model(name: str, description: str) -> dict[str, Any]:
    validate_model_name(name)
    for _ in range(3):
        try:
            table.update(
                meta_key(name),
                "SET description = :d, last_updated_timestamp = :now",
                values={":d": description, ":now": clock.now_millis()},
                condition=NO_MARKERS,
            )
            break
        except table.ConditionFailed:
            reads.require_meta(name)
    return get_registered_model(name)


def rename_registered_model(name: str, new_name: str, stop_after: int | None = None) -> dict[str, Any]:
    validate_model_renaming(new_name)
    validate_model_name(name)
    for _ in range(lifecycle.MAX_SETTLE_ROUNDS):
        meta = table.get(meta_key(name))
        if meta is None:
            raise reads.model_not_found(name)
        if meta.get("renaming_to") == new_name:
            # A retry of a rename that died half way: finish it and answer as the first try would.
            lifecycle.finish(meta, stop_after)
            return get_registered_model(new_name)
        if has_marker(meta):
            lifecycle.finish(meta)
            continue
        if name == new_name:
            return update_touch(name)
        try:
            lifecycle.start_rename(meta, new_name, clock.now_millis())
        except table.ConditionFailed as failure:
            reasons = failure.reasons or []
            if len(reasons) > 1 and reasons[1] == "ConditionalCheckFailed":
                raise already_exists(f"Registered Model (name={new_name}) already exists.") from None
            continue  # the source changed (a marker appeared): settle and retry
        meta = table.get(meta_key(name)) or {}
        lifecycle.finish(meta, stop_after)
        return get_registered_model(new_name)
    raise retry_later(f"Registered Model (name={name}) is busy; retry the request.")


def update_touch(name: str) -> dict[str, Any]:
    """Renaming a model to its own name: MLflow just bumps last_updated_timestamp."""
    table.update(meta_key(name), "SET last_updated_timestamp = :now", values={":now": clock.now_millis()}, condition=NO_MARKERS)
    return get_registered_model(name)


def delete_registered_model(name: str, stop_after: int | None = None) -> None:
    validate_model_name(name)
    for _ in range(lifecycle.MAX_SETTLE_ROUNDS):
        meta = table.get(meta_key(name))
        if meta is None:
            raise reads.model_not_found(name)
        if meta.get("deleting"):
            lifecycle.finish(meta, stop_after)  # a retry of a delete that died half way
            return
        if has_marker(meta):
            lifecycle.finish(meta)
            continue
        try:
            lifecycle.start_delete(name, clock.now_millis())
        except table.ConditionFailed:
            continue
        lifecycle.finish_delete(name, stop_after)
        return
    raise retry_later(f"Registered Model (name={name}) is busy; retry the request.")


# --- tags and aliases ---------------------------------------------------------------------------


def _guarded_model_write(name: str, operations: list[dict[str, Any]], guard: dict[str, Any] | None = None) -> None:
    """Write sub-items of a model only while it exists without a rename/delete marker."""
    for _ in range(3):
        try:
            table.transact([guard or table.check_op(meta_key(name), NO_MARKERS), *operations])
            return
        except table.ConditionFailed:
            reads.require_meta(name)  # 404 for a missing model; finishes a job in progress
    raise retry_later(f"Registered Model (name={name}) is busy; retry the request.")


def _prompt_flag_ops(name: str, is_prompt: bool) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """META guard that also records the prompt flag, plus the matching name-list entry update."""
    guard = table.update_op(meta_key(name), "SET is_prompt = :p", values={":p": is_prompt}, condition=NO_MARKERS)
    return guard, [table.put_op(entry_item(name, is_prompt))]


def set_registered_model_tag(name: str, key: str, value: str) -> None:
    validate_model_name(name)
    validate_registered_model_tag(key, value)
    operations = [table.put_op(model_tag_item(name, key, value))]
    guard = None
    if key == IS_PROMPT_TAG_KEY:
        guard, extra = _prompt_flag_ops(name, _is_prompt_value(value))
        operations += extra
    event = registry_events.event_op("registered_model_tag", "set", {"name": name, "key": key, "value": value}, name, prompt_aware=True)
    _guarded_model_write(name, [*operations, event], guard)


def delete_registered_model_tag(name: str, key: str) -> None:
    validate_model_name(name)
    validate_tag_name(key)
    tag = model_tag_item(name, key, "")
    operations = [table.delete_op({"pk": tag["pk"], "sk": tag["sk"]})]
    guard = None
    if key == IS_PROMPT_TAG_KEY:
        guard, extra = _prompt_flag_ops(name, False)
        operations += extra
    event = registry_events.event_op("registered_model_tag", "deleted", {"name": name, "key": key}, name, prompt_aware=True)
    _guarded_model_write(name, [*operations, event], guard)


def set_registered_model_alias(name: str, alias: str, version: Any, split: tuple[Any, Any] | None = None) -> None:
    """Point ``alias`` at ``version``; ``split`` (secondary version, weight 0-99) is the traffic-split extension."""
    validate_model_name(name)
    validate_model_alias_name(alias)
    validate_model_alias_name_reserved(alias)
    number = reads.version_number(name, version)
    secondary = _validated_split(name, number, split)
    checks = [table.check_op(meta_key(name), NO_MARKERS), table.check_op(version_key(name, number), VERSION_LIVE)]
    if secondary is not None:
        checks.append(table.check_op(version_key(name, secondary[0]), VERSION_LIVE))
    payload = {"name": name, "alias": alias, "version": str(version)}
    split_detail = {"secondary_version": str(secondary[0]), "secondary_version_weight": secondary[1]} if secondary else None
    event = registry_events.event_op("model_version_alias", "created", payload, name, prompt_aware=True, split=split_detail)
    for _ in range(3):
        try:
            table.transact([*checks, table.put_op(alias_item(name, alias, number, secondary)), event])
            return
        except table.ConditionFailed as failure:
            reasons = failure.reasons or []
            if len(reasons) > 1 and reasons[1] == "ConditionalCheckFailed":
                raise reads.version_not_found(name, number) from None
            if secondary is not None and len(reasons) > 2 and reasons[2] == "ConditionalCheckFailed":
                raise reads.version_not_found(name, secondary[0]) from None
            try:
                reads.require_meta(name)
            except MlflowError:
                raise reads.version_not_found(name, number) from None
    raise reads.version_not_found(name, number)


def _validated_split(name: str, primary: int, split: tuple[Any, Any] | None) -> tuple[int, int] | None:
    if split is None or split == (None, None):
        return None
    secondary, weight = split
    if secondary is None or weight is None:
        raise invalid("secondary_version and secondary_version_weight must be given together.")
    number = reads.version_number(name, secondary)
    if number == primary:
        raise invalid("secondary_version must differ from the alias's version.")
    if isinstance(weight, bool) or not isinstance(weight, int) or not 0 <= weight <= MAX_SECONDARY_WEIGHT:
        raise invalid(f"secondary_version_weight must be an integer from 0 to {MAX_SECONDARY_WEIGHT}, got {weight!r}.")
    return number, weight


def delete_registered_model_alias(name: str, alias: str) -> None:
    validate_model_name(name)
    validate_model_alias_name(alias)
    item = alias_item(name, alias, 0)
    event = registry_events.event_op("model_version_alias", "deleted", {"name": name, "alias": alias}, name, prompt_aware=True)
    _guarded_model_write(name, [table.delete_op({"pk": item["pk"], "sk": item["sk"]}), event])
