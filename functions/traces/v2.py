"""The v2 trace info shape (``TraceInfo``) for the v2 routes older clients fall back to."""

from __future__ import annotations

from typing import Any

from serverless_mlflow.store import traces as store


def info_v2(info: dict[str, Any]) -> dict[str, Any]:
    """TraceInfoV3 JSON -> TraceInfo (v2) JSON: request_id, timestamps in ms, key/value lists."""
    status = {"OK": "OK", "ERROR": "ERROR", "IN_PROGRESS": "IN_PROGRESS"}.get(info.get("state", ""), "TRACE_STATUS_UNSPECIFIED")
    out: dict[str, Any] = {
        "request_id": info["trace_id"],
        "experiment_id": info["trace_location"]["mlflow_experiment"]["experiment_id"],
        "timestamp_ms": store.parse_timestamp_ms(info.get("request_time"), "request_time"),
        "execution_time_ms": store.parse_duration_ms(info.get("execution_duration"), "execution_duration"),
        "status": status,
    }
    metadata = info.get("trace_metadata") or {}
    if metadata:
        out["request_metadata"] = [{"key": k, "value": v} for k, v in metadata.items()]
    tags = info.get("tags") or {}
    if tags:
        out["tags"] = [{"key": k, "value": v} for k, v in tags.items()]
    return out
