"""Trace items: the info item (tags, metadata, assessments inside), the locator, spans, and MLflow's JSON.

Keys (schema.py): the info at ``EXP#<exp> / T#<trace_id>``, each span at ``T#<trace_id>#S#<span_id>`` in the
same partition, and ``TRACE#<trace_id>`` locating the experiment. Times are kept in milliseconds and answered
as protobuf ``Timestamp``/``Duration`` JSON, as MLflow's trace handlers do.
"""

from __future__ import annotations

from typing import Any

from serverless_mlflow import clock, table
from serverless_mlflow.errors import MlflowError, invalid, not_found
from serverless_mlflow.schema import TTL_ATTRIBUTE, entity

TRACE = entity("trace")
LOCATOR = entity("trace_locator")
SPAN = entity("trace_spans")

ARTIFACT_LOCATION_TAG = "mlflow.artifactLocation"
SPANS_LOCATION_TAG = "mlflow.trace.spansLocation"
TRACKING_STORE = "TRACKING_STORE"
TRACE_NAME_TAG = "mlflow.traceName"
SIZE_STATS_METADATA = "mlflow.trace.sizeStats"
INFO_FINALIZED_METADATA = "mlflow.trace.infoFinalized"
TRACE_FOLDER = "traces"
ARTIFACTS_FOLDER = "artifacts"
STATES = ("STATE_UNSPECIFIED", "OK", "ERROR", "IN_PROGRESS")


def trace_not_found(trace_id: str) -> MlflowError:
    # SqlAlchemyStore._get_sql_trace_info: "Trace with ID '<id>' not found."
    return not_found(f"Trace with ID '{trace_id}' not found.")


# --- protobuf well-known types ----------------------------------------------------------------


def timestamp_json(millis: int) -> str:
    from google.protobuf.timestamp_pb2 import Timestamp  # protobuf: only for routes that write or read trace infos

    stamp = Timestamp()
    stamp.FromMilliseconds(int(millis))
    return stamp.ToJsonString()


def duration_json(millis: int) -> str:
    from google.protobuf.duration_pb2 import Duration

    span = Duration()
    span.FromMilliseconds(int(millis))
    return span.ToJsonString()


def parse_timestamp_ms(value: Any, field: str) -> int:
    if value is None or value == "":
        return 0
    if isinstance(value, int) and not isinstance(value, bool):
        return value
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
        return value
    from google.protobuf.duration_pb2 import Duration

    span = Duration()
    try:
        span.FromJsonString(str(value))
    except ValueError:
        raise invalid(f"Invalid value for {field}: {value!r}") from None
    return span.ToMilliseconds()


# --- reading ------------------------------------------------------------------------------------


def locate(trace_id: str) -> dict[str, Any] | None:
    return table.get(LOCATOR.key(trace_id=trace_id))


def get_info_item(trace_id: str) -> dict[str, Any]:
    """The info item of ``trace_id`` (404 as MLflow when there is none)."""
    locator = locate(trace_id) if trace_id else None
    if locator is None:
        raise trace_not_found(trace_id)
    item = table.get(TRACE.key(experiment_id=locator["experiment_id"], trace_id=trace_id))
    if item is None or is_expired(item):
        raise trace_not_found(trace_id)
    return item


def is_expired(item: dict[str, Any]) -> bool:
    # TTL deletion lags expiry by up to days: an expired trace is already gone for readers.
    expires = item.get(TTL_ATTRIBUTE)
    return isinstance(expires, int) and expires <= clock.now_seconds()


def info_items(trace_ids: list[str]) -> list[dict[str, Any]]:
    """Info items of the ids that exist (any order): locators then infos, two batch reads."""
    locators = table.batch_get([LOCATOR.key(trace_id=t) for t in dict.fromkeys(trace_ids)])
    keys = [TRACE.key(experiment_id=loc["experiment_id"], trace_id=LOCATOR.parse_pk(loc["pk"])["trace_id"]) for loc in locators]
    return [item for item in table.batch_get(keys) if not is_expired(item)]


def span_items(experiment_id: str, trace_id: str) -> list[dict[str, Any]]:
    return table.query(**SPAN.query("of_trace", experiment_id=experiment_id, trace_id=trace_id))


# --- MLflow's JSON --------------------------------------------------------------------------------


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
    tags = dict(item.get("tags") or {})
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
