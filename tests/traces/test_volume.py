"""Large and concurrent traces arrive whole: 1,000 spans carrying 5 MB, a span over the item limit, 50 at once."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import mlflow
import pytest
from mlflow import MlflowClient

from serverless_mlflow.storage import s3, table
from serverless_mlflow.storage.item_size import MAX_ITEM_BYTES, item_bytes
from serverless_mlflow.storage.schema import ENTITY, PK, SK
from tests.conftest import unique

SPANS = 1000
SPAN = ENTITY["trace_spans"]
PAYLOAD_PER_SPAN = 5 * 1024 * 1024 // SPANS  # 1,000 spans carrying 5 MB together


def _experiment(server: str) -> str:
    mlflow.set_tracking_uri(server)
    experiment_id = mlflow.create_experiment(unique("volume"))
    mlflow.set_experiment(experiment_id=experiment_id)
    return experiment_id


def _stored_span_items(trace_id: str) -> list[dict]:
    """The raw span items in the trace's own partition (wire format, as DynamoDB stores them)."""
    raw = table.client().query(
        TableName=table.table_name(),
        KeyConditionExpression="#pk = :pk AND begins_with(#sk, :prefix)",
        ExpressionAttributeNames={"#pk": PK, "#sk": SK},
        ExpressionAttributeValues={":pk": {"S": SPAN.pk.render({"trace_id": trace_id})}, ":prefix": {"S": SPAN.sk_prefix()}},
    )
    return raw["Items"]


@pytest.mark.long
@pytest.mark.usefixtures("tracing")
def test_thousand_spans_carrying_five_megabytes_round_trip(server: str) -> None:
    experiment_id = _experiment(server)
    with mlflow.start_span(name="root") as root:
        for i in range(SPANS - 1):
            with mlflow.start_span(name=f"step-{i}") as span:
                span.set_inputs({"i": i, "blob": chr(65 + i % 26) * PAYLOAD_PER_SPAN})
        root.set_outputs("done")
    trace_id = root.trace_id
    trace = MlflowClient().get_trace(trace_id)
    assert trace.info.tags["mlflow.trace.spansLocation"] == "TRACKING_STORE"
    assert len(trace.data.spans) == SPANS
    by_name = {span.name: span for span in trace.data.spans}
    for i in range(SPANS - 1):
        inputs = by_name[f"step-{i}"].inputs
        assert inputs == {"i": i, "blob": chr(65 + i % 26) * PAYLOAD_PER_SPAN}
        assert by_name[f"step-{i}"].parent_id == by_name["root"].span_id
    listed = mlflow.search_traces(locations=[experiment_id], return_type="list")
    assert [len(t.data.spans) for t in listed] == [SPANS]


@pytest.mark.usefixtures("tracing")
def test_span_over_the_item_limit_is_spilled_to_s3_and_reads_back(server: str) -> None:
    experiment_id = _experiment(server)
    # 4 MB: the largest span whose OTLP request still fits Lambda's 6 MB invoke payload once base64-encoded.
    payload = "0123456789abcdef" * (4 * 1024 * 1024 // 16)

    @mlflow.trace
    def big(text: str) -> int:
        return len(text)

    big(payload)
    trace_id = mlflow.get_last_active_trace_id()
    trace = MlflowClient().get_trace(trace_id)
    assert trace.data.spans[0].inputs == {"text": payload}
    assert trace.data.spans[0].outputs == len(payload)
    items = _stored_span_items(trace_id)
    assert len(items) == 1
    assert "spill_key" in items[0] and "span" not in items[0]
    assert item_bytes(items[0]) < MAX_ITEM_BYTES

    # Deleting the trace removes the spilled object too.
    spill_key = items[0]["spill_key"]["S"]
    assert s3.client().head_object(Bucket=s3.bucket_name(), Key=spill_key)["ContentLength"] > 4 * 1024 * 1024
    assert MlflowClient().delete_traces(experiment_id, trace_ids=[trace_id]) == 1
    with pytest.raises(Exception) as missing:
        s3.client().head_object(Bucket=s3.bucket_name(), Key=spill_key)
    assert s3.error_code(missing.value) in ("404", "NoSuchKey")
    assert _stored_span_items(trace_id) == []


def test_fifty_traces_logged_concurrently_all_arrive(server: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # The client's default export: asynchronous, spans and trace infos from a worker pool.
    monkeypatch.delenv("MLFLOW_ENABLE_ASYNC_TRACE_LOGGING", raising=False)
    experiment_id = _experiment(server)
    barrier = threading.Barrier(10)

    @mlflow.trace
    def child(i: int) -> int:
        return i * i

    @mlflow.trace
    def handle(i: int) -> int:
        return child(i) + 1

    def call(i: int) -> None:
        if i < 10:
            barrier.wait()
        with mlflow.start_span(name=f"request-{i}") as span:
            span.set_inputs({"i": i})
            handle(i)

    with ThreadPoolExecutor(max_workers=10) as pool:
        list(pool.map(call, range(50)))
    mlflow.flush_trace_async_logging(terminate=False)
    traces = mlflow.search_traces(locations=[experiment_id], return_type="list", max_results=100)
    names = sorted(next(s.name for s in t.data.spans if s.parent_id is None) for t in traces)
    assert names == sorted(f"request-{i}" for i in range(50))
    assert all(len(t.data.spans) == 3 for t in traces)
