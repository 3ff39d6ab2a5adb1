"""A trace whose client gave up on a span batch (after 429s) is counted by traces/metrics as MLflow counts it.

The client announces the trace's spans (``mlflow.trace.sizeStats``) in start_trace; one child's batch never
came, so the locator counts fewer spans than announced. SqlAlchemyStore counts the trace (its info row) and the
spans it got; ours must too, and a batch arriving late (the client's retry finally served) or sent twice keeps
every count exact. The same OTLP batches and start_trace go to MLflow's own server (FastAPI app: OTLP + REST).

Ours runs with its indexer paused while the trace is written, as under a storm the indexer lags: it first sees the
trace when start_trace has announced more spans than arrived.
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import asdict
from typing import Any

import pytest
from mlflow import MlflowClient
from mlflow.entities.trace_metrics import AggregationType, MetricAggregation, MetricViewType

from serverless_mlflow.store import traces as store
from tests.mlflow_reference import asgi_reference_server
from tests.traces.test_spans_only_reference import CHILD, GRANDCHILD, ROOT, Side
from tools import admin

pytestmark = pytest.mark.e2e

COUNT = [MetricAggregation(aggregation_type=AggregationType.COUNT)]
QUERIES: list[dict[str, Any]] = [
    {"view_type": MetricViewType.TRACES, "metric_name": "trace_count", "aggregations": COUNT},
    {"view_type": MetricViewType.TRACES, "metric_name": "trace_count", "aggregations": COUNT, "dimensions": ["trace_status"]},
    {"view_type": MetricViewType.SPANS, "metric_name": "span_count", "aggregations": COUNT, "dimensions": ["span_name"]},
    {"view_type": MetricViewType.SPANS, "metric_name": "span_count", "aggregations": COUNT, "dimensions": ["span_status"]},
    {
        "view_type": MetricViewType.TRACES,
        "metric_name": "latency",
        "aggregations": [MetricAggregation(aggregation_type=AggregationType.AVG)],
    },
    {
        "view_type": MetricViewType.SPANS,
        "metric_name": "latency",
        "aggregations": [MetricAggregation(aggregation_type=AggregationType.MAX)],
    },
]


def _start_trace(side: Side, trace_id: str, request_time: int, spans: int) -> dict[str, Any]:
    """The client's start_trace once its root ended: it announces ``spans`` spans."""
    info = {
        "trace_id": trace_id,
        "trace_location": {"type": "MLFLOW_EXPERIMENT", "mlflow_experiment": {"experiment_id": side.experiment_id}},
        "request_time": store.timestamp_json(request_time),
        "execution_duration": "0.050s",
        "state": "OK",
        "trace_metadata": {"mlflow.trace.sizeStats": json.dumps({"num_spans": spans})},
        "tags": {},
    }
    status, answer = side.call("POST", "traces", {"trace": {"trace_info": info}})
    assert status == 200, answer
    return answer["trace"]["trace_info"]


def _metrics(side: Side) -> list[Any]:
    tracing = MlflowClient(side.url)._tracing_client.store
    out = []
    for query in QUERIES:
        points = tracing.query_trace_metrics(experiment_ids=[side.experiment_id], **query)
        out.append(sorted(json.dumps(asdict(p), sort_keys=True) for p in points))
    return out


def _total(answer: list[str]) -> float:
    return sum(json.loads(point)["values"]["COUNT"] for point in answer)


def _drain(runtime: Any) -> None:
    """Deliver the stream; then the trace's content signature is the one ``admin verify`` recomputes (not deferred)."""
    runtime.indexer_mode = "sync"
    runtime.drain_stream()
    assert not runtime.dead_letters
    runtime.indexer_mode = "paused"
    report = admin.verify()
    assert report.differences == 0 and report.pending == 0, report.summary()


@pytest.mark.parametrize("given_up", ["grandchild", "root"])
def test_a_trace_missing_a_batch_is_counted_as_in_mlflow_and_a_late_batch_keeps_it_exact(paused_runtime: Any, given_up: str) -> None:
    sides = (Side(paused_runtime.url), Side(asgi_reference_server().url))
    trace_bytes = uuid.uuid4().bytes
    trace_id = "tr-" + trace_bytes.hex()
    t0 = int(time.time() * 1000) - 60_000
    batches = {  # in the order the client sends them (each span as it ends, the root last)
        "grandchild": [(GRANDCHILD, CHILD, t0 + 20, t0 + 30, True)],
        "child": [(CHILD, ROOT, t0 + 10, t0 + 40, False)],
        "root": [(ROOT, None, t0, t0 + 50, False)],
    }
    late = batches.pop(given_up)
    seen: dict[str, tuple[Any, Any]] = {}

    answers = []
    for side in sides:
        for batch in batches.values():
            side.export(trace_bytes, batch)
        answers.append(_start_trace(side, trace_id, t0, spans=3))
    # Ours tells the client its spans are not all stored, so it uploads traces.json too (MLflow's tags any trace
    # it got spans for): 2 of the 3 announced are stored.
    assert "mlflow.trace.spansLocation" not in answers[0]["tags"]
    assert (store.span_count(sides[0].experiment_id, trace_id), store.locate(trace_id)["expected_spans"]) == (2, 3)
    _drain(paused_runtime)
    seen["partial"] = (_metrics(sides[0]), _metrics(sides[1]))
    for side in sides:
        side.export(trace_bytes, late)  # the client's retry of the given-up batch, served at last
    _drain(paused_runtime)
    seen["late batch"] = (_metrics(sides[0]), _metrics(sides[1]))
    for side in sides:
        side.export(trace_bytes, late)  # sent again: a stored span is overwritten, never counted twice
    _drain(paused_runtime)
    seen["late batch again"] = (_metrics(sides[0]), _metrics(sides[1]))

    for step, (ours, theirs) in seen.items():
        assert ours == theirs, step
    partial, complete = seen["partial"][0], seen["late batch"][0]
    assert (_total(partial[0]), _total(partial[2])) == (1, 2)
    assert (_total(complete[0]), _total(complete[2])) == (1, 3)
