"""Issue #39: a trace write throttled at any point leaves the locator and the info agreeing, and the client's retry
(same body) converges: after the indexer drains, every trace sent is listed once and counted once by the Overview.

A 429 is injected at the exact write that stores the trace's info (DynamoDB answers ThrottlingException, as
``tools/throttle_hook`` does), in a span batch (its info made from the spans) and in a ``start_trace`` that moves
the info to an earlier request time (the root span's start, before a child's batch made the info).
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from mlflow import MlflowClient
from mlflow.entities.trace_metrics import AggregationType, MetricAggregation, MetricViewType

from serverless_mlflow.storage import table
from serverless_mlflow.storage.schema import ENTITY_TYPE
from serverless_mlflow.store import trace_partitions
from serverless_mlflow.store import traces as store
from tests.indexer.test_throttled_indexer import _trace_count
from tests.traces.test_spans_only_reference import CHILD, GRANDCHILD, ROOT, Side

pytestmark = pytest.mark.e2e


class _Refused:
    status_code = 400
    headers: dict[str, str] = {}  # noqa: RUF012 (botocore reads it)


def _writes_info(operation: str, body: dict[str, Any], trace_id: str) -> bool:
    """Whether a DynamoDB call writes or deletes the trace's info item (alone or in a transaction)."""

    def names_info(raw: dict[str, Any]) -> bool:
        sk = raw.get("sk", {}).get("S", "")
        return sk.startswith("T#") and sk.endswith(f"#{trace_id}")

    def is_info(raw: dict[str, Any]) -> bool:
        # Its trace id is in its sort key (the stored item leaves the attribute out: schema.KEYED_ATTRIBUTES).
        return names_info(raw) and raw.get(ENTITY_TYPE, {}).get("S") == store.TRACE.name

    if operation == "PutItem":
        return is_info(body.get("Item") or {})
    if operation == "DeleteItem":
        return names_info(body.get("Key") or {})
    if operation == "TransactWriteItems":
        return any(is_info((op.get("Put") or {}).get("Item") or {}) for op in body.get("TransactItems", []))
    return False


@contextmanager
def _throttled(refuse: Callable[[str, dict[str, Any]], bool]) -> Iterator[list[str]]:
    """Every DynamoDB call ``refuse`` picks (operation, request body) is answered ThrottlingException (after
    botocore's retries would have failed too) while the block runs; yields the refused operations."""
    from botocore.client import BaseClient

    original = BaseClient._make_request
    refused: list[str] = []

    def make_request(self, operation_model, request_dict, request_context):  # type: ignore[no-untyped-def]
        if self.meta.service_model.service_name == "dynamodb":
            body = json.loads(request_dict.get("body") or b"{}")
            if refuse(operation_model.name, body):
                refused.append(operation_model.name)
                error = {"Code": "ThrottlingException", "Message": "Rate of requests exceeds the allowed throughput."}
                return _Refused(), {"Error": error, "ResponseMetadata": {"HTTPStatusCode": 400}}
        return original(self, operation_model, request_dict, request_context)

    BaseClient._make_request = make_request
    try:
        yield refused
    finally:
        BaseClient._make_request = original


def _start_trace(side: Side, trace_id: str, request_time: int, spans: int | None = None) -> int:
    """The client's start_trace; ``spans``: the span count it announces (``mlflow.trace.sizeStats``)."""
    return _started(side, trace_id, request_time, spans)[0]


def _started(side: Side, trace_id: str, request_time: int, spans: int | None = None) -> tuple[int, dict[str, Any]]:
    """start_trace's status and answer."""
    metadata = {"from": "start_trace"}
    if spans is not None:
        metadata["mlflow.trace.sizeStats"] = json.dumps({"num_spans": spans})
    body = {
        "trace": {
            "trace_info": {
                "trace_id": trace_id,
                "trace_location": {"type": "MLFLOW_EXPERIMENT", "mlflow_experiment": {"experiment_id": side.experiment_id}},
                "request_time": store.timestamp_json(request_time),
                "execution_duration": "1s",
                "state": "OK",
                "trace_metadata": metadata,
                "tags": {},
            }
        }
    }
    status, answer = side.call("POST", "traces", body)
    assert status in (200, 429), answer
    return status, answer


def _span_count(server: str, experiment_id: str) -> float:
    points = MlflowClient(server)._tracing_client.store.query_trace_metrics(
        experiment_ids=[experiment_id],
        view_type=MetricViewType.SPANS,
        metric_name="span_count",
        aggregations=[MetricAggregation(aggregation_type=AggregationType.COUNT)],
    )
    return sum(point.values["COUNT"] for point in points)


def _drained(runtime: Any, side: Side) -> tuple[list[str], float]:
    """(trace ids listed, traces counted by the Overview) once the indexer has caught up."""
    runtime.indexer_mode = "sync"
    runtime.drain_stream()
    assert not runtime.dead_letters
    runtime.indexer_mode = "paused"
    return [info["trace_id"] for info in side.listed()], _trace_count(runtime.url, side.experiment_id)


def _new_trace() -> tuple[bytes, str]:
    trace_bytes = uuid.uuid4().bytes
    return trace_bytes, "tr-" + trace_bytes.hex()


def test_a_span_batch_throttled_writing_its_info_makes_it_when_retried(paused_runtime: Any) -> None:
    side = Side(paused_runtime.url)
    trace_bytes, trace_id = _new_trace()
    base = int(time.time() * 1000) - 60_000
    batch = [(CHILD, ROOT, base + 10, base + 20, False)]
    with _throttled(lambda operation, body: _writes_info(operation, body, trace_id)) as refused, pytest.raises(AssertionError, match="429"):
        side.export(trace_bytes, batch)
    assert refused == ["PutItem"]
    side.export(trace_bytes, batch)  # the client's retry, same body: its spans are stored already
    assert _drained(paused_runtime, side) == ([trace_id], 1)
    side.export(trace_bytes, [(ROOT, None, base, base + 1000, False)])
    assert _start_trace(side, trace_id, base) == 200
    assert _drained(paused_runtime, side) == ([trace_id], 1)
    assert side.info(trace_id)["trace_metadata"]["from"] == "start_trace"


@pytest.mark.parametrize("point", ["PutItem", "DeleteItem"])
def test_a_start_trace_throttled_moving_the_info_leaves_it_found_and_converges(paused_runtime: Any, point: str) -> None:
    """The info made from a child's batch moves to start_trace's earlier request time: throttled at the new item's
    write or at the old one's delete, then given up (the trace stays listed and counted where it was), then retried."""
    side = Side(paused_runtime.url)
    trace_bytes, trace_id = _new_trace()
    base = int(time.time() * 1000) - 60_000
    side.export(trace_bytes, [(CHILD, ROOT, base + 10, base + 20, False)])

    def refuse(operation: str, body: dict[str, Any]) -> bool:
        # The move's single transaction holds both writes: refusing it stands for either point.
        return _writes_info(operation, body, trace_id) and operation in (point, "TransactWriteItems")

    with _throttled(refuse) as refused:
        assert _start_trace(side, trace_id, base) == 429
    assert refused
    assert _drained(paused_runtime, side) == ([trace_id], 1)
    assert _start_trace(side, trace_id, base) == 200  # the client's retry
    assert _drained(paused_runtime, side) == ([trace_id], 1)
    info = side.info(trace_id)
    assert (info["request_time"], info["trace_metadata"]["from"]) == (store.timestamp_json(base), "start_trace")
    assert store.locate(trace_id)["info_time"] == base
    # No copy left at the child's request time (a stale item the partition would still hold).
    assert table.get(trace_partitions.info_key(side.experiment_id, base + 10, trace_id)) is None


def test_a_start_trace_throttled_before_any_span_leaves_the_spans_to_make_the_info(paused_runtime: Any) -> None:
    """start_trace placed the info's time, then was throttled writing it and given up: the trace's first span batch
    finds no info there and makes it."""
    side = Side(paused_runtime.url)
    trace_bytes, trace_id = _new_trace()
    base = int(time.time() * 1000) - 60_000
    with _throttled(lambda operation, body: _writes_info(operation, body, trace_id)) as refused:
        assert _start_trace(side, trace_id, base) == 429
    assert refused == ["PutItem"]
    side.export(trace_bytes, [(CHILD, ROOT, base + 10, base + 20, False)])
    side.export(trace_bytes, [(ROOT, None, base, base + 1000, False)])
    assert _drained(paused_runtime, side) == ([trace_id], 1)
    info = side.info(trace_id)
    assert (info["request_time"], info["state"], info["execution_duration"]) == (store.timestamp_json(base), "OK", "1s")


def test_a_span_batch_throttled_writing_its_info_and_given_up_leaves_the_root_batch_to_make_it(paused_runtime: Any) -> None:
    side = Side(paused_runtime.url)
    trace_bytes, trace_id = _new_trace()
    base = int(time.time() * 1000) - 60_000
    with _throttled(lambda operation, body: _writes_info(operation, body, trace_id)), pytest.raises(AssertionError, match="429"):
        side.export(trace_bytes, [(CHILD, ROOT, base + 10, base + 20, False)])
    side.export(trace_bytes, [(ROOT, None, base, base + 1000, False)])  # no retry: the client gave up on the child's
    assert _drained(paused_runtime, side) == ([trace_id], 1)
    info = side.info(trace_id)
    assert (info["request_time"], info["state"], info["execution_duration"]) == (store.timestamp_json(base), "OK", "1s")


def test_a_span_batch_throttled_and_given_up_leaves_the_trace_counted_and_its_late_retry_exact(paused_runtime: Any) -> None:
    """The child's batch is answered 429 at its span's write and the client gives it up; the root's batch and
    start_trace (announcing both spans) are served: the trace is listed and counted once, with the spans that came,
    as MLflow counts it. The retry served at last adds the child's span and still counts the trace once."""
    side = Side(paused_runtime.url)
    trace_bytes, trace_id = _new_trace()
    base = int(time.time() * 1000) - 60_000
    child = [(CHILD, ROOT, base + 10, base + 20, False)]

    def writes_span(operation: str, body: dict[str, Any]) -> bool:
        return operation == "PutItem" and (body.get("Item") or {}).get(ENTITY_TYPE, {}).get("S") == store.SPAN.name

    with _throttled(writes_span) as refused, pytest.raises(AssertionError, match="429"):
        side.export(trace_bytes, child)
    assert refused == ["PutItem"]
    side.export(trace_bytes, [(ROOT, None, base, base + 1000, False)])
    assert _start_trace(side, trace_id, base, spans=2) == 200
    assert _drained(paused_runtime, side) == ([trace_id], 1)
    assert _span_count(paused_runtime.url, side.experiment_id) == 1
    side.export(trace_bytes, child)
    assert _drained(paused_runtime, side) == ([trace_id], 1)
    assert _span_count(paused_runtime.url, side.experiment_id) == 2


def _counts_spans(operation: str, body: dict[str, Any], trace_id: str) -> bool:
    """Whether a DynamoDB call is a span batch's update of the trace locator (the batch that places the trace, after
    its spans are stored; an earlier release also counted the spans there)."""
    key = table.to_item(store.LOCATOR.key(trace_id=trace_id))
    return operation == "UpdateItem" and body.get("Key") == key


def test_a_span_batch_throttled_counting_its_stored_span_leaves_start_trace_answering_every_span_stored(paused_runtime: Any) -> None:
    """The child's span is stored, then the batch is throttled writing the locator (it counted the span there in an
    earlier release); the client's retry finds the span stored already. start_trace (announcing both spans, after both are stored) answers that the
    tracking store holds every span, so the client reads the trace from its spans: before, the count stayed one
    short, start_trace waited for a span that had come, answered without the tag, and the trace read from a
    ``traces.json`` the client may never upload (a storm's give-ups left such traces unreadable)."""
    side = Side(paused_runtime.url)
    trace_bytes, trace_id = _new_trace()
    base = int(time.time() * 1000) - 60_000
    child = [(CHILD, ROOT, base + 10, base + 20, False)]
    with (
        _throttled(lambda operation, body: _counts_spans(operation, body, trace_id)) as refused,
        pytest.raises(AssertionError, match="429"),
    ):
        side.export(trace_bytes, child)
    assert refused == ["UpdateItem"]
    side.export(trace_bytes, child)  # the client's retry, same body
    side.export(trace_bytes, [(ROOT, None, base, base + 1000, False)])
    status, answer = _started(side, trace_id, base, spans=2)
    assert status == 200
    assert answer["trace"]["trace_info"]["tags"].get(store.SPANS_LOCATION_TAG) == store.TRACKING_STORE
    assert _drained(paused_runtime, side) == ([trace_id], 1)
    assert _span_count(paused_runtime.url, side.experiment_id) == 2


def test_the_last_span_after_start_trace_marks_the_trace_whole_when_a_retry_left_the_count_short(paused_runtime: Any) -> None:
    """start_trace came before the root's span (an asynchronous client): it answered without the tag. The child's
    batch had been throttled counting its span and retried; the root's batch completes the trace and sets the tag
    on the info, as when the count is exact."""
    side = Side(paused_runtime.url)
    trace_bytes, trace_id = _new_trace()
    base = int(time.time() * 1000) - 60_000
    child = [(CHILD, ROOT, base + 10, base + 20, False)]
    with _throttled(lambda operation, body: _counts_spans(operation, body, trace_id)), pytest.raises(AssertionError, match="429"):
        side.export(trace_bytes, child)
    side.export(trace_bytes, child)
    status, answer = _started(side, trace_id, base, spans=2)
    assert status == 200
    assert store.SPANS_LOCATION_TAG not in answer["trace"]["trace_info"]["tags"]  # the root's span is still to come
    side.export(trace_bytes, [(ROOT, None, base, base + 1000, False)])
    assert side.info(trace_id)["tags"].get(store.SPANS_LOCATION_TAG) == store.TRACKING_STORE


def test_a_span_batch_after_a_claiming_batch_given_up_makes_the_info(paused_runtime: Any) -> None:
    """The trace's first batch placed the info's time, was throttled writing the info and given up; the next
    child's batch is served, then the client gives up the root's batch and start_trace too (a long storm). MLflow
    lists a trace any stored span batch made: so does the store (before, only the root's batch or start_trace
    looked for an info placed but never written, and the trace's stored spans were listed and counted nowhere)."""
    side = Side(paused_runtime.url)
    trace_bytes, trace_id = _new_trace()
    base = int(time.time() * 1000) - 60_000
    with _throttled(lambda operation, body: _writes_info(operation, body, trace_id)), pytest.raises(AssertionError, match="429"):
        side.export(trace_bytes, [(CHILD, ROOT, base + 10, base + 20, False)])
    side.export(trace_bytes, [(GRANDCHILD, ROOT, base + 30, base + 40, False)])
    assert _drained(paused_runtime, side) == ([trace_id], 1)
    info = side.info(trace_id)
    assert (info["request_time"], info["state"]) == (store.timestamp_json(base + 10), "IN_PROGRESS")
