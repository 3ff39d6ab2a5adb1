"""Traces that used to break the indexer's aggregation: one OTLP request carrying a 10,000-span trace (more rollup
items than one DynamoDB transaction holds), and a span whose name is 500,000 characters. Each is ingested and
aggregated exactly (traces/metrics counts it, as MLflow does), nothing is dead-lettered, and other writes go on.
"""

from __future__ import annotations

import statistics
from typing import Any

import mlflow
import pytest
import requests
from mlflow import MlflowClient
from mlflow.entities.trace_metrics import AggregationType, MetricAggregation, MetricViewType
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from serverless_mlflow.storage import table
from serverless_mlflow.storage.schema import ENTITY
from tests.conftest import unique

pytestmark = pytest.mark.e2e

SPAN = ENTITY["trace_spans"]
BASE_NS = 1_700_000_000_000_000_000


def _request(trace_byte: int, spans: int, names: int, name_of: Any = None) -> tuple[bytes, list[int]]:
    """One OTLP request with a whole trace: a root and ``spans - 1`` children named ``step-<i % names>``; the
    spans' latencies (ms) in order."""
    request = ExportTraceServiceRequest()
    out = request.resource_spans.add().scope_spans.add().spans
    trace_id = bytes([trace_byte]) * 16
    latencies = []
    for i in range(spans):
        span = out.add()
        span.trace_id, span.span_id = trace_id, (i + 1).to_bytes(8, "big")
        span.name = "root" if i == 0 else (name_of(i) if name_of else f"step-{i % names}")
        if i:
            span.parent_span_id = (1).to_bytes(8, "big")
        start = BASE_NS + i * 1_000_000
        duration_ms = 5000 if i == 0 else 1 + i % 7
        span.start_time_unix_nano, span.end_time_unix_nano = start, start + duration_ms * 1_000_000
        latencies.append(duration_ms)
    return request.SerializeToString(), latencies


def _post(server: str, experiment_id: str, body: bytes) -> requests.Response:
    headers = {"Content-Type": "application/x-protobuf", "x-mlflow-experiment-id": experiment_id}
    return requests.post(f"{server}/v1/traces", data=body, headers=headers, timeout=3600)


def _metric(experiment_id: str, view: MetricViewType, name: str, *kinds: str) -> dict[str, float]:
    store = MlflowClient()._tracing_client.store
    aggregations = [MetricAggregation(aggregation_type=AggregationType(k)) for k in kinds]
    window = {"start_time_ms": BASE_NS // 1_000_000 - 3_600_000, "end_time_ms": BASE_NS // 1_000_000 + 2 * 3_600_000}
    points = store.query_trace_metrics(
        experiment_ids=[experiment_id], view_type=view, metric_name=name, aggregations=aggregations, **window
    )
    assert len(points) == 1, points
    return dict(points[0].values)


def _dead_letters(local_runtime: Any) -> int:
    return len(local_runtime.dead_letters)


# The 10,000-span case takes minutes on a shared 2-core box (10,000 span writes, then 101 indexer batches, all
# before the request's answer in the runtime's synchronous mode): `make test-long`.
@pytest.mark.parametrize(("spans", "names"), [(1_000, 1_000), pytest.param(10_000, 1_500, marks=pytest.mark.long)])
def test_one_request_carrying_a_huge_trace_is_aggregated_exactly(server: str, local_runtime: Any, spans: int, names: int) -> None:
    mlflow.set_tracking_uri(server)
    experiment_id = mlflow.create_experiment(unique("huge-trace"))
    dead_before = _dead_letters(local_runtime)
    body, latencies = _request(0x10 + spans // 1000, spans, names)
    assert _post(server, experiment_id, body).status_code == 200

    assert _metric(experiment_id, MetricViewType.TRACES, "trace_count", "COUNT") == {"COUNT": 1.0}
    assert _metric(experiment_id, MetricViewType.SPANS, "span_count", "COUNT") == {"COUNT": float(spans)}
    # Every span's latency is in the rollups (the whole hour is read from them: no raw span is read).
    assert _metric(experiment_id, MetricViewType.SPANS, "latency", "AVG") == {"AVG": pytest.approx(statistics.fmean(latencies))}
    assert _dead_letters(local_runtime) == dead_before
    # Other writes go on, and are indexed (a name search reads the index).
    run = MlflowClient().create_run(experiment_id, run_name="after-the-huge-trace")
    found = MlflowClient().search_runs([experiment_id], filter_string="attributes.run_name LIKE '%huge-trace'")
    assert [r.info.run_id for r in found] == [run.info.run_id]


def test_a_span_named_with_half_a_million_characters_is_refused_whole(server: str, local_runtime: Any) -> None:
    # A span name is a metrics dimension (it must fit a rollup item with its summaries), and MLflow's own column
    # holds 65,535 bytes on MySQL: longer is refused with a 400 before anything is written, as a bad span is.
    mlflow.set_tracking_uri(server)
    experiment_id = mlflow.create_experiment(unique("long-name"))
    dead_before = _dead_letters(local_runtime)
    body, _ = _request(0x31, 3, 3, name_of=lambda i: "n" * 500_000 if i == 1 else "short")
    response = _post(server, experiment_id, body)
    assert response.status_code == 400 and "Span name" in response.json()["detail"], response.text
    assert _metric(experiment_id, MetricViewType.TRACES, "trace_count", "COUNT") == {"COUNT": 0.0}
    assert mlflow.search_traces(locations=[experiment_id], return_type="list") == []
    assert table.query(SPAN.pk.render({"trace_id": "tr-" + "31" * 16})) == []  # not one span (nor locator) stored
    # A name at the limit is stored and counted under its name.
    at_limit = "n" * 65_535
    body, _ = _request(0x32, 3, 3, name_of=lambda i: at_limit if i == 1 else "short")
    assert _post(server, experiment_id, body).status_code == 200
    store = MlflowClient()._tracing_client.store
    by_name = store.query_trace_metrics(
        experiment_ids=[experiment_id],
        view_type=MetricViewType.SPANS,
        metric_name="span_count",
        aggregations=[MetricAggregation(aggregation_type=AggregationType.COUNT)],
        dimensions=["span_name"],
        start_time_ms=BASE_NS // 1_000_000 - 3_600_000,
        end_time_ms=BASE_NS // 1_000_000 + 2 * 3_600_000,
    )
    assert sorted((p.dimensions["span_name"], p.values["COUNT"]) for p in by_name) == [(at_limit, 1.0), ("root", 1.0), ("short", 1.0)]
    assert _dead_letters(local_runtime) == dead_before
