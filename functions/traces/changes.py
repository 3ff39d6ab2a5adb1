"""Changing traces: tags, deletion (by ids or by age), run and prompt links and assessments (SqlAlchemyStore semantics).

Tags and assessments are map entries of the trace's info item, so each change is one conditional UpdateItem
(``trace_writes.update_info``: atomic, following the info if it moved, and refused whole (400) if it would push
the item past DynamoDB's 400 KB).
"""

from __future__ import annotations

import json
from typing import Any

from serverless_mlflow.core import clock
from serverless_mlflow.core.deferred import deferred
from serverless_mlflow.core.errors import MlflowError, invalid, not_found
from serverless_mlflow.core.validation import validate_trace_tag
from serverless_mlflow.request import NestedParseError, to_string, type_error
from serverless_mlflow.request import workspace as request_workspace
from serverless_mlflow.storage import s3, table
from serverless_mlflow.storage.schema import COLLECTIONS, PK, SK, TTL_ATTRIBUTE
from serverless_mlflow.store import experiments as experiment_store
from serverless_mlflow.store import review_queues, trace_archive, trace_names, trace_writes
from serverless_mlflow.store import runs as run_store
from serverless_mlflow.store import traces as store

from . import run_links

# The search grammar (sqlparse) is for deletes by age only: kept out of the cold start of tag and assessment routes.
search = deferred("traces.search")
# Assessments are normalized through protobuf messages: imported by the assessment routes only.
assessments = deferred("serverless_mlflow.store.assessments")

MAX_TRACE_LINKS_PER_REQUEST = 100
# The trace name keys the name index and sets the "not yet indexed" flag of trace-name FTS.
_FLAG_SK = COLLECTIONS["unindexed"].sk_attr
_IMMUTABLE_TAGS = frozenset({store.SPANS_LOCATION_TAG, "mlflow.trace.archiveLocation", "mlflow.trace.archivalFailure"})


def _update_info(
    item: dict[str, Any], expression: str, names: dict[str, str], values: dict[str, Any] | None = None, condition: str | None = None
) -> None:
    if trace_writes.update_info(item, expression, names, values, condition) is None:
        raise store.trace_not_found(item["trace_id"])


# --- tags ------------------------------------------------------------------------------------------


def check_tag_mutation(key: str, operation: str) -> None:
    if key in _IMMUTABLE_TAGS and not (operation == "deleted" and key == "mlflow.trace.archivalFailure"):
        raise invalid(f"Tag '{key}' is immutable and cannot be {operation} on a trace.")


def set_trace_tag(trace_id: str, key: str, value: str) -> None:
    key, value = validate_trace_tag(key, value)
    assert key is not None
    try:
        item = store.get_info_item(trace_id)
    except MlflowError:
        # The workspace-aware store checks the trace is in the request's workspace first (_validate_trace_accessible).
        if key == store.TRACE_NAME_TAG or request_workspace.enabled():
            raise
        # SqlAlchemyStore inserts the tag row and the foreign key to the trace refuses it.
        raise MlflowError("FOREIGN KEY constraint failed", "BAD_REQUEST") from None
    if key == store.TRACE_NAME_TAG:
        _set_trace_name(item, value or "")
        return
    set_map_entries(item, "tags", {key: value or ""})


def _set_trace_name(item: dict[str, Any], name: str) -> None:
    """The name is its own attribute: it keys the name index (lsi4), and the partition lists it (``trace_names``,
    before the info names it). A layout 1 info still feeds trace-name FTS: it gets the "not yet indexed" flag."""
    entity = store.entity_of(item)
    legacy = entity is store.TRACE_V1
    if not legacy:
        trace_names.ensure(str(item["experiment_id"]), int(item.get("request_time", 0)), item["trace_id"], name, item.get(TTL_ATTRIBUTE))
    name_sk = entity.patterns["by_name"].sk_attr
    index_keys = entity.index_keys(
        experiment_id=item["experiment_id"],
        trace_id=item["trace_id"],
        request_time=item.get("request_time", 0),
        trace_name=name,
        changed_at=clock.now_millis() if legacy else None,
    )
    expression, names, values = "SET trace_name = :v, #name_sk = :k", {"#name_sk": name_sk}, {":v": name, ":k": index_keys[name_sk]}
    if legacy:
        expression, names["#flag_sk"], values[":f"] = expression + ", #flag_sk = :f", _FLAG_SK, index_keys[_FLAG_SK]
    _update_info(item, expression, names, values)


def delete_trace_tag(trace_id: str, key: str) -> None:
    item = store.get_info_item(trace_id)
    missing = MlflowError(f"No trace tag with key '{key}' for trace with ID '{trace_id}'", "RESOURCE_DOES_NOT_EXIST")
    if key == store.TRACE_NAME_TAG:
        if item.get("trace_name") is None:
            raise missing
        _update_info(item, "REMOVE trace_name, #name_sk", {"#name_sk": store.entity_of(item).patterns["by_name"].sk_attr})
        return
    if key not in store.tags_of(item):
        raise missing
    if key == store.ARTIFACT_LOCATION_TAG and key not in (item.get("tags") or {}):
        _update_info(item, "SET #d = :t", {"#d": store.ARTIFACT_TAG_DELETED}, {":t": True})  # composed, not stored
        return
    _update_info(item, "REMOVE tags.#k", {"#k": key})


# --- deletion ---------------------------------------------------------------------------------------


def delete_traces(experiment_id: str, max_timestamp_millis: int | None, max_traces: int | None, trace_ids: list[str] | None) -> int:
    if max_timestamp_millis is None and not trace_ids:
        raise invalid("Either `max_timestamp_millis` or `trace_ids` must be specified.")
    if max_timestamp_millis is not None and trace_ids:
        raise invalid("Only one of `max_timestamp_millis` and `trace_ids` can be specified.")
    if trace_ids and max_traces is not None:
        raise invalid("`max_traces` can't be specified if `trace_ids` is specified.")
    if max_traces is not None and max_traces <= 0:
        raise invalid(f"`max_traces` must be a positive integer, received {max_traces}.")
    normalized = str(experiment_store.normalize_experiment_id(experiment_id))
    if trace_ids:
        victims = [item for item in store.info_items(trace_ids) if item["experiment_id"] == normalized]
    else:
        # MLflow deletes the oldest first: (timestamp, request id) ascending, at most max_traces.
        victims = search.oldest(normalized, max_timestamp_millis, max_traces)
    for item in victims:
        delete_trace_items(item)
    return len(victims)


def delete_trace_items(info: dict[str, Any]) -> None:
    """Review queue items, spans (and their spilled S3 objects), then the info, then the locator: a retry
    finishes the job."""
    review_queues.forget_items([info["trace_id"]])
    spans = store.span_items(info["experiment_id"], info["trace_id"])
    spilled = [span["spill_key"] for span in spans if span.get("spill_key")]
    if trace_archive.is_archived(info):
        # MLflow deletes an archived trace's payload with it (_delete_archived_trace_payloads).
        spilled.append(trace_archive.object_key(info["tags"][trace_archive.ARCHIVE_LOCATION_TAG]))
    if spilled:
        client = s3.client()
        for start in range(0, len(spilled), 1000):
            client.delete_objects(
                Bucket=s3.bucket_name(), Delete={"Objects": [{"Key": k} for k in spilled[start : start + 1000]], "Quiet": True}
            )
    table.batch_write(deletes=[{PK: s[PK], SK: s[SK]} for s in spans])
    table.delete({PK: info[PK], SK: info[SK]})
    table.delete(store.LOCATOR.key(trace_id=info["trace_id"]))


# --- run links ----------------------------------------------------------------------------------------


def link_traces_to_run(trace_ids: list[str], run_id: str) -> None:
    if not trace_ids:
        return
    if len(trace_ids) > MAX_TRACE_LINKS_PER_REQUEST:
        raise invalid(
            f"Cannot link more than {MAX_TRACE_LINKS_PER_REQUEST} traces to a run in a single request. Provided {len(trace_ids)} traces."
        )
    run_store.get_run_item(run_id)
    found = store.info_items(trace_ids)
    for item in found:
        _update_info(item, "ADD linked_runs :r", {}, {":r": {run_id}})
    if request_workspace.enabled():
        return  # the workspace-aware store links only traces of the request's workspace (_filter_entity_ids)
    # SqlAlchemyStore keeps a link to a trace it does not have yet (the client exports traces asynchronously):
    # held until the trace's info is written.
    linked = {item["trace_id"] for item in found}
    run_links.hold(list(dict.fromkeys(t for t in trace_ids if t and t not in linked)), run_id)


# --- prompt links ---------------------------------------------------------------------------------------


def prompt_version_ids(refs: list[Any]) -> list[str]:
    """``LinkPromptsToTrace.PromptVersionRef`` messages as MLflow's store names the linked versions:
    ``"<name>/<version>"``, the version read as an integer (the handler's ``int(pv.version)``)."""
    ids = []
    for index, ref in enumerate(refs):
        if not isinstance(ref, dict):
            raise type_error(f"prompt_versions[{index}]", ref)
        fields = {}
        for name in ("name", "version"):
            value = ref.get(name)
            try:
                fields[name] = "" if value is None else to_string(value)
            except NestedParseError:
                raise type_error(f"prompt_versions[{index}].{name}", value) from None
        try:
            version = int(fields["version"])
        except ValueError:
            # MLflow's handler fails here with a 500 (int() of the version string).
            raise invalid(f"Invalid prompt version {fields['version']!r} in prompt_versions[{index}]: a version is an integer.") from None
        ids.append(f"{fields['name']}/{version}")
    return ids


def link_prompts_to_trace(trace_id: str, prompt_version_ids: list[str]) -> None:
    """SqlAlchemyStore.link_prompts_to_trace: an association per (trace, prompt version), kept once; the trace
    must exist, the prompt versions need not. Stored as a set on the trace's info (the search filter
    ``prompt = "name/version"`` reads it); the ``mlflow.linkedPrompts`` tag is the client's to write, as with
    MLflow's server."""
    if not prompt_version_ids:
        return
    _update_info(store.get_info_item(trace_id), "ADD linked_prompts :p", {}, {":p": set(prompt_version_ids)})


# --- assessments ----------------------------------------------------------------------------------------
# Stored as MLflow's answer (serverless_mlflow.store.assessments.canonical), one JSON string per id in the info item.


def _assessment_not_found(trace_id: str, assessment_id: str) -> MlflowError:
    return not_found(f"Assessment with ID '{assessment_id}' not found for trace '{trace_id}'")


def _assessment_item(trace_id: str) -> dict[str, Any]:
    """The info item for get/update, answered as SqlAlchemyStore._get_sql_assessment words a missing trace."""
    try:
        return store.get_info_item(trace_id)
    except MlflowError:
        raise not_found(f"Trace with request_id '{trace_id}' not found") from None


def _load(item: dict[str, Any], assessment_id: str) -> dict[str, Any]:
    stored = (item.get("assessments") or {}).get(assessment_id)
    if stored is None:
        raise _assessment_not_found(item["trace_id"], assessment_id)
    return json.loads(stored)


def _store_assessment(item: dict[str, Any], assessment: dict[str, Any], extra: dict[str, dict[str, Any]] | None = None) -> None:
    entries = {assessment["assessment_id"]: assessment, **(extra or {})}
    set_map_entries(item, "assessments", assessments.stored(entries))


def set_map_entries(item: dict[str, Any], attribute: str, entries: dict[str, str]) -> None:
    """SET <attribute>.<key> for each entry, creating the map when the item has none yet (one UpdateItem)."""
    names = {"#m": attribute, **{f"#k{i}": key for i, key in enumerate(entries)}}
    values = {f":v{i}": value for i, value in enumerate(entries.values())}
    expression = "SET " + ", ".join(f"#m.#k{i} = :v{i}" for i in range(len(entries)))
    for _ in range(3):
        try:
            _update_info(item, expression, names, values, "attribute_exists(#m)")
            return
        except table.ConditionFailed:
            pass
        try:
            _update_info(item, "SET #m = :whole", {"#m": attribute}, {":whole": dict(entries)}, "attribute_not_exists(#m)")
            return
        except table.ConditionFailed:
            pass  # the map appeared meanwhile: look again
    raise store.trace_not_found(item["trace_id"])


def create_assessment(trace_id: str, assessment: Any) -> dict[str, Any]:
    item = store.get_info_item(trace_id)
    created = assessments.canonical(assessment, trace_id, clock.now_millis())
    extra = {}
    if overrides := created.get("overrides"):
        previous = (item.get("assessments") or {}).get(overrides)
        if previous is None:
            raise _assessment_not_found(trace_id, overrides)
        extra[overrides] = {**json.loads(previous), "valid": False}
    _store_assessment(item, created, extra)
    return created


def get_assessment(trace_id: str, assessment_id: str) -> dict[str, Any]:
    return _load(_assessment_item(trace_id), assessment_id)


def update_assessment(trace_id: str, assessment_id: str, changes: Any, paths: list[str]) -> dict[str, Any]:
    item = _assessment_item(trace_id)
    existing = _load(item, assessment_id)
    updated = assessments.updated(existing, changes, paths, trace_id, clock.now_millis())
    _store_assessment(item, updated)
    return updated


def delete_assessment(trace_id: str, assessment_id: str) -> None:
    """SqlAlchemyStore.delete_assessment: a no-op for an unknown trace or id."""
    try:
        item = store.get_info_item(trace_id)
    except MlflowError:
        return
    existing = (item.get("assessments") or {}).get(assessment_id)
    if existing is None:
        return
    parsed = json.loads(existing)
    names = {"#a": assessment_id}
    expression = "REMOVE assessments.#a"
    values: dict[str, Any] | None = None
    # Deleting an override restores the assessment it overrode (SqlAlchemyStore does the same).
    if (overrides := parsed.get("overrides")) and overrides in (item.get("assessments") or {}):
        restored = {**json.loads(item["assessments"][overrides]), "valid": True}
        names["#o"] = overrides
        values = {":o": assessments.dumps(restored)}
        expression = "SET assessments.#o = :o REMOVE assessments.#a"
    _update_info(item, expression, names, values)
