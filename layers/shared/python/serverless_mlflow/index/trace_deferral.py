"""The delay the stream lacks: young traces in progress are aggregated after ``TRACE_DEFERRAL_SECONDS``.

A client exports each span as it ends, so most traces reach the indexer first without their root (IN_PROGRESS,
which MLflow's trace metrics count) and again, finished, a moment later. Aggregating both moves every span
slice twice (the slices key the trace's status), about half of a trace's rollup writes. So a batch's traces in
progress that were never aggregated are not aggregated now: their ids go, one message per batch, to an SQS
queue with a delivery delay, and the indexer (that queue's event source) refreshes them when it comes. A trace
that ended meanwhile was aggregated once, finished, by its root's batch, and the refresh finds nothing to write;
one still in progress (or whose client stopped before its root) is aggregated in progress then, as MLflow
counts it. Meanwhile the trace metrics lag for it by the delay; search and the trace itself do not.

Without a queue (``TRACE_DEFERRAL_QUEUE_URL`` unset) or with a delay of 0, traces are aggregated at once.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Iterable
from typing import Any

log = logging.getLogger(__name__)

QUEUE_URL = "TRACE_DEFERRAL_QUEUE_URL"
DELAY = "TRACE_DEFERRAL_SECONDS"
# Long enough for a request's trace to end (API Gateway answers within 29 s, so an app behind it does too), short
# enough that the Overview shows a trace in progress within half a minute of its first spans.
DEFAULT_DELAY_SECONDS = 30
MAX_DELAY_SECONDS = 900  # SQS's DelaySeconds ceiling
# Trace ids per message: 32 hex characters and JSON's quotes and comma, well under SQS's 256 KiB body.
IDS_PER_MESSAGE = 5000

_clients: dict[str | None, Any] = {}
_lock = threading.Lock()


def delay_seconds() -> int:
    """The delay to aggregate young traces in progress after (0: at once, no queue)."""
    if not os.environ.get(QUEUE_URL):
        return 0
    return max(0, min(MAX_DELAY_SECONDS, int(os.environ.get(DELAY) or DEFAULT_DELAY_SECONDS)))


def _client() -> Any:
    endpoint = os.environ.get("SQS_ENDPOINT_URL") or None
    with _lock:
        if endpoint not in _clients:
            import boto3

            _clients[endpoint] = boto3.client("sqs", endpoint_url=endpoint)
        return _clients[endpoint]


def send(trace_ids: Iterable[str], delay: int) -> None:
    """One message per ``IDS_PER_MESSAGE`` traces (one per indexer batch), delivered after ``delay`` seconds."""
    ids = sorted(set(trace_ids))
    for start in range(0, len(ids), IDS_PER_MESSAGE):
        body = json.dumps({"traces": ids[start : start + IDS_PER_MESSAGE]}, separators=(",", ":"))
        _client().send_message(QueueUrl=os.environ[QUEUE_URL], MessageBody=body, DelaySeconds=delay)


def is_deferral_event(records: list[dict[str, Any]]) -> bool:
    return bool(records) and records[0].get("eventSource") == "aws:sqs"


def traces_of(record: dict[str, Any]) -> list[str]:
    """The trace ids a delivered message names (none for a body this module did not write: nothing to retry)."""
    try:
        ids = json.loads(record.get("body") or "")["traces"]
    except (ValueError, TypeError, KeyError):
        log.error("a trace deferral message is not one this indexer sent: dropped (%r)", (record.get("body") or "")[:200])
        return []
    return [str(trace_id) for trace_id in ids]
