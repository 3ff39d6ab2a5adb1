"""The v2 trace routes of mlflow 2.x clients: the v2 ``TraceInfo`` shape, and start/end of a trace.

An mlflow 2.x client starts a trace with ``POST /api/2.0/mlflow/traces`` (the server picks the request id),
uploads the spans as ``traces.json`` to the trace's artifact location, then ends it with
``PATCH /api/2.0/mlflow/traces/<request_id>``. Both go through ``ingest.start_trace``, the one writer of trace
infos, as SqlAlchemyStore's ``deprecated_start_trace_v2`` / ``deprecated_end_trace_v2`` do.
"""

from __future__ import annotations

import uuid
from typing import Any

from serverless_mlflow.core.deferred import deferred
from serverless_mlflow.core.errors import invalid
from serverless_mlflow.store import traces as store

# The trace writer imports protobuf (OTLP): loaded by the v2 start/end routes, not by the handler's cold start.
ingest = deferred("traces.ingest")

# TraceStatus (v2) names and numbers -> TraceState (v3).
_STATUS_STATES = {"TRACE_STATUS_UNSPECIFIED": "STATE_UNSPECIFIED", "OK": "OK", "ERROR": "ERROR", "IN_PROGRESS": "IN_PROGRESS"}
_STATUS_NUMBERS = dict(enumerate(_STATUS_STATES))


def info_v2(info: dict[str, Any]) -> dict[str, Any]:
    """TraceInfoV3 JSON -> TraceInfo (v2) JSON: request_id, timestamps in ms, key/value lists."""
    status = {"OK": "OK", "ERROR": "ERROR", "IN_PROGRESS": "IN_PROGRESS"}.get(info.get("state", ""), "TRACE_STATUS_UNSPECIFIED")
    out: dict[str, Any] = {
        "request_id": info["trace_id"],
        "experiment_id": info["trace_location"]["mlflow_experiment"]["experiment_id"],
        "timestamp_ms": store.parse_timestamp_ms(info.get("request_time"), "request_time"),
        "status": status,
    }
    # TraceInfoV2.from_v3 keeps an unknown duration unset (proto2 optional), as a started trace has.
    if info.get("execution_duration") is not None:
        out["execution_time_ms"] = store.parse_duration_ms(info["execution_duration"], "execution_duration")
    metadata = info.get("trace_metadata") or {}
    if metadata:
        out["request_metadata"] = [{"key": k, "value": v} for k, v in metadata.items()]
    tags = store.tags_of(info)
    if tags:
        out["tags"] = [{"key": k, "value": v} for k, v in tags.items()]
    return out


def _pairs(entries: list[dict[str, Any]] | None) -> dict[str, str]:
    return {entry["key"]: entry.get("value") or "" for entry in entries or []}


def _location(experiment_id: str) -> dict[str, Any]:
    return {"type": "MLFLOW_EXPERIMENT", "mlflow_experiment": {"experiment_id": experiment_id}}


def start_trace(
    experiment_id: str, timestamp_ms: int, metadata: list[dict[str, Any]] | None, tags: list[dict[str, Any]] | None
) -> dict[str, Any]:
    """``deprecated_start_trace_v2``: a new IN_PROGRESS trace whose id the server picks (a uuid4 hex)."""
    info = ingest.start_trace(
        {
            "trace_id": uuid.uuid4().hex,
            "trace_location": _location(experiment_id),
            "request_time": store.parse_timestamp_ms(int(timestamp_ms or 0), "timestamp_ms"),
            "state": "IN_PROGRESS",
            "trace_metadata": _pairs(metadata),
            "tags": _pairs(tags),
        },
        finalized=False,
    )
    return info_v2(info)


def state_of(status: Any) -> str:
    if isinstance(status, int) and not isinstance(status, bool):
        state = _STATUS_STATES.get(_STATUS_NUMBERS.get(status, ""))
    else:
        state = _STATUS_STATES.get(str(status or "TRACE_STATUS_UNSPECIFIED"))
    if state is None:
        raise invalid(f"Invalid value {status!r} for parameter 'status' supplied.")
    return state


def end_trace(
    request_id: str, timestamp_ms: int, status: Any, metadata: list[dict[str, Any]] | None, tags: list[dict[str, Any]] | None
) -> dict[str, Any]:
    """``deprecated_end_trace_v2``: duration from the start, the status, metadata and tags merged into the trace's."""
    item = store.get_info_item(request_id)
    ended_tags = _pairs(tags)
    if store.TRACE_NAME_TAG not in ended_tags and item.get("trace_name") is not None:
        ended_tags[store.TRACE_NAME_TAG] = item["trace_name"]
    request_time = int(item.get("request_time") or 0)
    info = ingest.start_trace(
        {
            "trace_id": request_id,
            "trace_location": _location(item["experiment_id"]),
            "request_time": request_time,
            "execution_duration": store.parse_timestamp_ms(int(timestamp_ms or 0), "timestamp_ms") - request_time,
            "state": state_of(status),
            "client_request_id": item.get("client_request_id"),
            "request_preview": item.get("request_preview"),
            "response_preview": item.get("response_preview"),
            "trace_metadata": _pairs(metadata),
            "tags": ended_tags,
        },
        finalized=False,
    )
    return info_v2(info)
