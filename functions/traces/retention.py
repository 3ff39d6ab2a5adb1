"""Trace retention: how long an experiment keeps its traces, applied as the table's TTL attribute.

An experiment's ``serverless.traceRetention`` tag (MLflow's duration form ``<int><unit>``, unit m/h/d, e.g.
``30d``), else the stack-wide ``TRACE_RETENTION`` setting, gives every trace item (info, locator, spans) an
``expires_at`` of request/start time + retention. Readers treat an expired trace as deleted at once; DynamoDB's
TTL removes its items within days, at no write cost. Without either setting traces are kept until deleted
(``delete_traces`` by ids or by age). MLflow's own ``mlflow.trace.archivalRetention`` moves spans to an archive
and keeps the trace, so it is not reused for deletion here.
"""

from __future__ import annotations

import os
import time

from serverless_mlflow.core.validation import validate_trace_archival_retention_string
from serverless_mlflow.storage import table
from serverless_mlflow.store import experiment_items

RETENTION_TAG = "serverless.traceRetention"
_UNIT_SECONDS = {"m": 60, "h": 3600, "d": 86400}
# A warm function re-reads an experiment's retention at most once a minute (every OTLP request needs it).
_CACHE_SECONDS = 60.0
_cache: dict[str, tuple[float, int | None]] = {}


def parse_seconds(value: str | None) -> int | None:
    if not value:
        return None
    text = validate_trace_archival_retention_string(value, parameter_name=RETENTION_TAG)
    return int(text[:-1]) * _UNIT_SECONDS[text[-1]]


def retention_seconds(experiment_id: str) -> int | None:
    cached = _cache.get(experiment_id)
    now = time.monotonic()
    if cached is not None and now - cached[0] < _CACHE_SECONDS:
        return cached[1]
    tag = table.get(experiment_items.EXPERIMENT_TAG.key(experiment_id=experiment_id, key=RETENTION_TAG))
    try:
        seconds = parse_seconds(tag["value"] if tag else os.environ.get("TRACE_RETENTION"))
    except Exception:
        seconds = None  # an unparsable setting keeps traces (never deletes by mistake)
    _cache[experiment_id] = (now, seconds)
    return seconds


def expires_at(experiment_id: str, start_millis: int) -> int | None:
    """Epoch seconds at which a trace (or span) that started at ``start_millis`` expires, if it does."""
    seconds = retention_seconds(experiment_id)
    return None if seconds is None else start_millis // 1000 + seconds
