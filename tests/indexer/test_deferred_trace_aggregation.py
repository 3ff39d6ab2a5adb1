"""A young trace in progress is aggregated after a delay (``index/trace_deferral.py``), through the indexer's SQS
deferral queue (moto, which honours DelaySeconds): a trace that ends within the delay is aggregated once,
finished, and one whose client stops before its root is counted in progress once the delay has passed, as
MLflow's server counts it at once. The same OTLP batches go to MLflow's own server.

The runtime's indexer is paused: the test delivers the stream itself (``follower.drain``: the indexer invoked with
the deferral delay, as in async mode and deployed) and the deferred messages (``deferrals.settle``).
"""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

import boto3
import pytest

from serverless_mlflow.index import trace_aggregates, trace_deferral
from serverless_mlflow.storage import table
from tests.indexer.test_partial_trace_metrics import _metrics, _start_trace, _total
from tests.mlflow_reference import asgi_reference_server
from tests.traces.test_spans_only_reference import CHILD, GRANDCHILD, ROOT, Side

pytestmark = pytest.mark.e2e

DELAY_SECONDS = 5
COUNTS = 4  # the count queries of ``QUERIES`` come first


def _record(trace_id: str) -> dict[str, Any] | None:
    return table.get(trace_aggregates.RECORD.key(trace_id=trace_id))


def _sides(runtime: Any) -> tuple[Side, Side]:
    runtime.deferrals.delay_seconds = DELAY_SECONDS
    return Side(runtime.url), Side(asgi_reference_server().url)


def _children(t0: int) -> list[list[tuple[bytes, bytes | None, int, int, bool]]]:
    return [[(GRANDCHILD, CHILD, t0 + 20, t0 + 30, True)], [(CHILD, ROOT, t0 + 10, t0 + 40, False)]]


def _index(runtime: Any) -> None:
    """The stream delivered as the deployed mapping does (the indexer defers young traces in progress)."""
    assert runtime.follower.drain() > 0
    assert not runtime.dead_letters


def test_a_trace_whose_client_stops_before_its_root_is_counted_in_progress_after_the_delay(paused_runtime: Any) -> None:
    sides = _sides(paused_runtime)
    trace_bytes = uuid.uuid4().bytes
    trace_id = "tr-" + trace_bytes.hex()
    t0 = int(time.time() * 1000) - 60_000
    for side in sides:
        for batch in _children(t0):
            side.export(trace_bytes, batch)
    _index(paused_runtime)

    # Deferred: not aggregated yet, its id waits in the queue for the delay (moto, as SQS, keeps it back).
    sqs = boto3.client("sqs", endpoint_url=paused_runtime.deferrals.endpoint)
    counts = sqs.get_queue_attributes(QueueUrl=paused_runtime.deferrals.source.queue_url, AttributeNames=["All"])["Attributes"]
    assert (counts["ApproximateNumberOfMessagesDelayed"], counts["ApproximateNumberOfMessages"]) == ("1", "0")
    assert _record(trace_id) is None
    ours, theirs = _metrics(sides[0]), _metrics(sides[1])
    assert (_total(ours[0]), _total(theirs[0])) == (0, 1)

    paused_runtime.deferrals.settle()
    record = _record(trace_id)
    assert record is not None and record["in_progress"] and int(record["rev"]) == 1
    # Counts as MLflow's (latencies differ in progress: a span-only info keeps its first batch's times, a
    # write-path difference of its own, not the aggregation's).
    ours = _metrics(sides[0])
    assert ours[:COUNTS] == _metrics(sides[1])[:COUNTS]
    assert (_total(ours[0]), _total(ours[2])) == (1, 2)  # the trace and both spans, in progress as MLflow counts them

    # Its root comes at last: aggregated again, finished, and equal to MLflow's.
    for side in sides:
        side.export(trace_bytes, [(ROOT, None, t0, t0 + 50, False)])
    _index(paused_runtime)
    record = _record(trace_id)
    assert record is not None and not record["in_progress"]
    assert _metrics(sides[0]) == _metrics(sides[1])


def test_a_trace_that_ends_within_the_delay_is_aggregated_once_finished(paused_runtime: Any) -> None:
    sides = _sides(paused_runtime)
    trace_bytes = uuid.uuid4().bytes
    trace_id = "tr-" + trace_bytes.hex()
    t0 = int(time.time() * 1000) - 60_000
    for side in sides:
        for batch in _children(t0):
            side.export(trace_bytes, batch)
    _index(paused_runtime)
    assert _record(trace_id) is None
    for side in sides:
        side.export(trace_bytes, [(ROOT, None, t0, t0 + 50, False)])
        _start_trace(side, trace_id, t0, spans=3)
    _index(paused_runtime)
    record = _record(trace_id)
    assert record is not None and not record["in_progress"] and int(record["rev"]) == 1

    # The deferred message finds the trace aggregated, finished: nothing is written.
    paused_runtime.deferrals.settle()
    assert _record(trace_id) == record
    ours = _metrics(sides[0])
    assert ours == _metrics(sides[1])
    assert (_total(ours[0]), _total(ours[2])) == (1, 3)


def test_a_deferral_that_cannot_be_sent_is_aggregated_at_once(paused_runtime: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    sides = _sides(paused_runtime)
    trace_bytes = uuid.uuid4().bytes
    trace_id = "tr-" + trace_bytes.hex()
    t0 = int(time.time() * 1000) - 60_000
    for batch in _children(t0):
        sides[0].export(trace_bytes, batch)
    gone = paused_runtime.deferrals.source.queue_url + "-gone"
    monkeypatch.setenv(trace_deferral.QUEUE_URL, gone)  # SendMessage fails: no such queue
    _index(paused_runtime)
    record = _record(trace_id)
    assert record is not None and record["in_progress"]
    assert _total(_metrics(sides[0])[0]) == 1


def test_a_deferral_message_is_an_sqs_event_of_the_indexer(paused_runtime: Any) -> None:
    """What the deferral queue delivers names traces; a body the indexer did not write fails nothing."""
    answer = paused_runtime._invoke_indexer_with(
        {
            "Records": [
                {"messageId": "a", "eventSource": "aws:sqs", "body": json.dumps({"traces": ["tr-" + "0" * 32]})},
                {"messageId": "b", "eventSource": "aws:sqs", "body": "not json"},
            ]
        }
    )
    assert answer == {"batchItemFailures": []}
