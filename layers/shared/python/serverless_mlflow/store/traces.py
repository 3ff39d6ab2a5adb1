"""Trace items: the info item (tags, metadata, assessments inside), the locator, spans, and MLflow's JSON.

Keys (schema.py): the info in its trace partition ``TB#<exp>#<hour>#<shard> / T#<request time>#<trace_id>``
(``trace_partitions``), the locator ``TRACE#<trace_id> / TRACE`` naming the experiment and the request time the
info's key was made with (``info_time``), and each span next to the locator at ``TRACE#<trace_id> / S#<span_id>``.
A table from before the layout change may still hold layout 1 items (info ``EXP#<exp> / T#<trace_id>``, spans
``EXP#<exp> / T#<trace_id>#S#<span_id>``) until the ``traces_v2`` migration moved them; while it may, readers
look there too, layout 1 first, so an item the migration moves meanwhile is found in one place or the other.
Times are kept in milliseconds and answered as protobuf ``Timestamp``/``Duration`` JSON, as MLflow's trace
handlers do.
"""

from __future__ import annotations

from typing import Any

from serverless_mlflow.core import clock
from serverless_mlflow.core.errors import MlflowError, invalid, not_found
from serverless_mlflow.storage import layout, table
from serverless_mlflow.storage.schema import ENTITY_TYPE, PK, SK, TTL_ATTRIBUTE, entity
from serverless_mlflow.store import experiments, trace_partitions

TRACE = entity("trace")
TRACE_V1 = entity("trace_v1")
LOCATOR = entity("trace_locator")
SPAN = entity("trace_spans")
SPAN_V1 = entity("trace_spans_v1")

ARTIFACT_LOCATION_TAG = "mlflow.artifactLocation"
SPANS_LOCATION_TAG = "mlflow.trace.spansLocation"
TRACKING_STORE = "TRACKING_STORE"
TRACE_NAME_TAG = "mlflow.traceName"
SIZE_STATS_METADATA = "mlflow.trace.sizeStats"
INFO_FINALIZED_METADATA = "mlflow.trace.infoFinalized"
TRACE_FOLDER = "traces"
ARTIFACTS_FOLDER = "artifacts"
STATES = ("STATE_UNSPECIFIED", "OK", "ERROR", "IN_PROGRESS")


# An info whose artifact-location tag was deleted (it is composed, not stored: ``tags_of``) is marked so.
ARTIFACT_TAG_DELETED = "no_artifact_tag"
# (table, experiment id) -> the experiment's artifact location: fixed when the experiment is created.
_experiment_locations: dict[tuple[str, str], str | None] = {}


def trace_not_found(trace_id: str) -> MlflowError:
    # SqlAlchemyStore._get_sql_trace_info: "Trace with ID '<id>' not found."
    return not_found(f"Trace with ID '{trace_id}' not found.")


# --- protobuf well-known types ----------------------------------------------------------------


# What protobuf's Timestamp (years 1 to 9999) and Duration (+-10,000 years) can hold, in milliseconds.
TIMESTAMP_MS_RANGE = (-62_135_596_800_000, 253_402_300_799_999)
DURATION_MS_RANGE = (-315_576_000_000_000, 315_576_000_000_000)


def _clamped(millis: int, bounds: tuple[int, int]) -> int:
    return min(max(int(millis), bounds[0]), bounds[1])


def timestamp_json(millis: int) -> str:
    from google.protobuf.timestamp_pb2 import Timestamp  # protobuf: only for routes that write or read trace infos

    stamp = Timestamp()
    # Clamped: an info stored before times were checked (parse_timestamp_ms) still reads.
    stamp.FromMilliseconds(_clamped(millis, TIMESTAMP_MS_RANGE))
    return stamp.ToJsonString()


def duration_json(millis: int) -> str:
    from google.protobuf.duration_pb2 import Duration

    span = Duration()
    # Clamped: a v2 end with a time far past its start stored a duration protobuf cannot write (issue 41).
    span.FromMilliseconds(_clamped(millis, DURATION_MS_RANGE))
    return span.ToJsonString()


def _in_range(value: int, field: str, bounds: tuple[int, int], what: str) -> int:
    if not bounds[0] <= value <= bounds[1]:
        raise invalid(
            f"Invalid value {value} for parameter '{field}' supplied: {what} must be within [{bounds[0]}, {bounds[1]}] milliseconds."
        )
    return value


def parse_timestamp_ms(value: Any, field: str) -> int:
    if value is None or value == "":
        return 0
    if isinstance(value, int) and not isinstance(value, bool):
        return _in_range(value, field, TIMESTAMP_MS_RANGE, "a time (years 1 to 9999)")
    from google.protobuf.timestamp_pb2 import Timestamp

    stamp = Timestamp()
    try:
        stamp.FromJsonString(str(value))
    except ValueError:
        raise invalid(f"Invalid value for {field}: {value!r}") from None
    return stamp.ToMilliseconds()


def parse_duration_ms(value: Any, field: str) -> int:
    if value is None or value == "":
        return 0
    if isinstance(value, int) and not isinstance(value, bool):
        return _in_range(value, field, DURATION_MS_RANGE, "a duration (up to 10,000 years)")
    from google.protobuf.duration_pb2 import Duration

    span = Duration()
    try:
        span.FromJsonString(str(value))
    except ValueError:
        raise invalid(f"Invalid value for {field}: {value!r}") from None
    return span.ToMilliseconds()


# --- reading ---------------------------------------------------------------------------------------


def locate(trace_id: str) -> dict[str, Any] | None:
    return table.get(LOCATOR.key(trace_id=trace_id))


def is_placed(locator: dict[str, Any]) -> bool:
    """Whether a locator names a trace: a span or info was written. A locator holding only ``pending_runs``
    (link-to-run before the trace arrived) has no experiment: the trace does not exist yet."""
    return locator.get("experiment_id") is not None


def locator_trace_id(locator: dict[str, Any]) -> str:
    return LOCATOR.parse_pk(locator[PK])["trace_id"]


def info_key(locator: dict[str, Any], trace_id: str) -> dict[str, str] | None:
    """Where the locator says the info is: its trace partition, else layout 1 while the table may hold it.
    None for a locator that only holds run links waiting for their trace (``pending_runs``: no experiment)."""
    if not is_placed(locator):
        return None
    if locator.get("info_time") is not None:
        return trace_partitions.info_key(str(locator["experiment_id"]), int(locator["info_time"]), trace_id)
    if layout.layout1_traces_possible():
        return TRACE_V1.key(experiment_id=str(locator["experiment_id"]), trace_id=trace_id)
    return None


def info_keys(locator: dict[str, Any], trace_id: str) -> list[dict[str, str]]:
    """Every key the locator's info may be at, most likely first: ``info_key``, then its key under the earlier
    shard count (an info written before the shards grew stays where it was)."""
    if not is_placed(locator) or locator.get("info_time") is None:
        key = info_key(locator, trace_id)
        return [key] if key else []
    return trace_partitions.info_keys(str(locator["experiment_id"]), int(locator["info_time"]), trace_id)


def read_info(locator: dict[str, Any], trace_id: str, projection: str | None = None) -> dict[str, Any] | None:
    """The info item where the locator (already read) says it is, or None (not written yet, or moved since)."""
    for key in info_keys(locator, trace_id):
        item = table.get(key, projection=projection)
        if item is not None:
            return item
    return None


def entity_of(item: dict[str, Any]) -> Any:
    """The schema entity (layout 2 ``trace`` or layout 1 ``trace_v1``) whose keys an info item has."""
    return TRACE_V1 if item[SK] == TRACE_V1.sk.render({"trace_id": item["trace_id"]}) else TRACE


def info_item_or_none(trace_id: str) -> dict[str, Any] | None:
    """The info item of ``trace_id`` (None when there is none). A miss re-reads the locator once: an info that
    moved meanwhile (the migration, or a start_trace with another request time) is read where it went."""
    if not trace_id:
        return None
    locator = locate(trace_id)
    if locator is not None and not is_placed(locator):
        return None  # only run links waiting for the trace: no trace yet
    if locator is not None and not experiments.in_request_workspace(str(locator["experiment_id"])):
        return None  # a trace of another workspace's experiment does not exist for this request
    for _ in range(3):
        if locator is None:
            return None
        item = read_info(locator, trace_id)
        if item is not None:
            return None if is_expired(item) else item
        again = locate(trace_id)
        if again is None or again.get("info_time") == locator.get("info_time"):
            return None
        locator = again
    return None


def get_info_item(trace_id: str) -> dict[str, Any]:
    """The info item of ``trace_id`` (404 as MLflow when there is none)."""
    item = info_item_or_none(trace_id)
    if item is None:
        raise trace_not_found(trace_id)
    return item


def is_expired(item: dict[str, Any]) -> bool:
    # TTL deletion lags expiry by up to days: an expired trace is already gone for readers.
    expires = item.get(TTL_ATTRIBUTE)
    return isinstance(expires, int) and expires <= clock.now_seconds()


def info_items(trace_ids: list[str]) -> list[dict[str, Any]]:
    """Info items of the ids that exist (any order): locators then infos, two batch reads (again for a moved one)."""
    wanted = list(dict.fromkeys(t for t in trace_ids if t))
    locators = {
        locator_trace_id(loc): loc
        for loc in table.batch_get([LOCATOR.key(trace_id=t) for t in wanted])
        if is_placed(loc) and experiments.in_request_workspace(str(loc["experiment_id"]))
    }
    found: dict[str, dict[str, Any]] = {}
    for _ in range(3):
        keys = {t: info_key(loc, t) for t, loc in locators.items()}
        got = {(i[PK], i[SK]): i for i in table.batch_get([k for k in keys.values() if k])}
        legacy = {t: info_keys(loc, t)[1:] for t, loc in locators.items() if not got.get(_pair(keys[t]))}
        got.update({(i[PK], i[SK]): i for i in table.batch_get([k for ks in legacy.values() for k in ks])})
        missing = []
        for t, key in keys.items():
            item = next((got[_pair(k)] for k in [key, *legacy.get(t, [])] if _pair(k) in got), None)
            if item is None:
                missing.append(t)
            else:
                found[t] = item
        if not missing:
            break
        again = {locator_trace_id(loc): loc for loc in table.batch_get([LOCATOR.key(trace_id=t) for t in missing])}
        locators = {t: loc for t, loc in again.items() if loc.get("info_time") != locators[t].get("info_time")}
        if not locators:
            break
    return [item for item in found.values() if not is_expired(item)]


def _pair(key: dict[str, str] | None) -> tuple[str, str] | None:
    return (key[PK], key[SK]) if key else None


def span_id_of(item: dict[str, Any]) -> str:
    template = SPAN if item[SK].startswith(SPAN.sk_prefix()) else SPAN_V1
    return template.parse(item[SK], fields=("span_id",))["span_id"]


def span_items(experiment_id: str, trace_id: str) -> list[dict[str, Any]]:
    """Every stored span item of a trace, once each (layout 1 read first while the table may hold it)."""
    out: dict[str, dict[str, Any]] = {}
    if layout.layout1_traces_possible():
        for item in table.query(**SPAN_V1.query("of_trace", experiment_id=experiment_id, trace_id=trace_id)):
            out[span_id_of(item)] = item
    for item in table.query(**SPAN.query("of_trace", trace_id=trace_id)):
        out.setdefault(span_id_of(item), item)
    return list(out.values())


def span_count(experiment_id: str, trace_id: str, consistent: bool = True) -> int:
    """How many distinct spans of the trace are stored: keys-only Queries of its span partition (and of layout 1's
    while the table may hold it). Span batches write no count: whoever needs it (start_trace waiting for spans in
    flight, the indexer's doubling rule) counts what is there, in read units, not one write per span batch: about
    one read unit per 4 KB of span items (half that with ``consistent=False``)."""
    queries = [SPAN.query("of_trace", trace_id=trace_id)]
    if layout.layout1_traces_possible():
        queries.append(SPAN_V1.query("of_trace", experiment_id=experiment_id, trace_id=trace_id))
    return len({span_id_of(key) for query in queries for key in table.query(**query, keys_only=True, consistent=consistent)})


def info_and_spans(trace_id: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The info item and span items of a trace (404 as MLflow when there is no info): the locator and the spans
    in one Query of the trace's partition, then the info."""
    if layout.layout1_traces_possible():
        info = get_info_item(trace_id)
        return info, span_items(info["experiment_id"], trace_id)
    items = table.query(**LOCATOR.query("with_spans", trace_id=trace_id)) if trace_id else []
    locator = next((item for item in items if item.get(ENTITY_TYPE) == LOCATOR.name), None)
    info = read_info(locator, trace_id) if locator is not None else None
    if info is None and locator is not None:
        info = info_item_or_none(trace_id)  # moved since the locator was read
    if info is None or is_expired(info) or not experiments.in_request_workspace(str(info["experiment_id"])):
        raise trace_not_found(trace_id)
    return info, [item for item in items if item.get(ENTITY_TYPE) == SPAN.name]


# --- MLflow's JSON --------------------------------------------------------------------------------


def artifact_location(experiment_location: str, trace_id: str) -> str:
    """A trace's artifact location, composed from its experiment's as SqlAlchemyStore.start_trace does."""
    return "/".join([experiment_location.rstrip("/"), TRACE_FOLDER, trace_id, ARTIFACTS_FOLDER])


def tags_of(item: dict[str, Any]) -> dict[str, str]:
    """An info's tags as MLflow holds them: the stored ones and its artifact location. Infos leave that tag out
    (it is its experiment's location and its id: about 100 bytes that would take the item past 1 KB, so every
    write of it and of its three LSI entries would cost two write units); an older info's stored tag is kept."""
    tags = dict(item.get("tags") or {})
    if ARTIFACT_LOCATION_TAG in tags or item.get(ARTIFACT_TAG_DELETED) or not item.get("trace_id") or item.get("experiment_id") is None:
        return tags
    location = _experiment_location(str(item["experiment_id"]))
    if location is not None:
        tags[ARTIFACT_LOCATION_TAG] = artifact_location(location, item["trace_id"])
    return tags


def with_tags(item: dict[str, Any]) -> dict[str, Any]:
    """The info with ``tags_of`` as its tags (for matching filters on tags as MLflow does)."""
    return {**item, "tags": tags_of(item)}


def _experiment_location(experiment_id: str) -> str | None:
    cache_key = (table.table_name(), experiment_id)
    if cache_key not in _experiment_locations:
        found = table.get(experiments.meta_key(experiment_id), projection="artifact_location")
        if found is None:
            return None  # not cached: an experiment being created is found once it exists
        _experiment_locations[cache_key] = found.get("artifact_location")
    return _experiment_locations[cache_key]


def info_json(item: dict[str, Any]) -> dict[str, Any]:
    """TraceInfoV3 as MLflow's handlers write it (Timestamp/Duration JSON, proto3 omits empties)."""
    out: dict[str, Any] = {
        "trace_id": item["trace_id"],
        "trace_location": {"type": "MLFLOW_EXPERIMENT", "mlflow_experiment": {"experiment_id": item["experiment_id"]}},
        "request_time": timestamp_json(item.get("request_time", 0)),
        "state": item.get("state", "STATE_UNSPECIFIED"),
    }
    if item.get("client_request_id"):
        out["client_request_id"] = item["client_request_id"]
    if item.get("request_preview"):
        out["request_preview"] = item["request_preview"]
    if item.get("response_preview"):
        out["response_preview"] = item["response_preview"]
    if item.get("execution_duration") is not None:
        out["execution_duration"] = duration_json(item["execution_duration"])
    metadata = dict(item.get("trace_metadata") or {})
    if metadata:
        out["trace_metadata"] = metadata
    tags = tags_of(item)
    if item.get("trace_name") is not None:
        tags[TRACE_NAME_TAG] = item["trace_name"]
    if tags:
        out["tags"] = tags
    assessments = assessments_of(item)
    if assessments:
        out["assessments"] = assessments
    return out


def assessments_of(item: dict[str, Any]) -> list[dict[str, Any]]:
    import json

    stored = item.get("assessments") or {}
    parsed = [json.loads(value) for value in stored.values()]
    # SqlAlchemyStore returns a trace's assessments in creation order.
    return sorted(parsed, key=lambda a: (a.get("create_time", ""), a.get("assessment_id", "")))
