"""Issue 39: throttling of the indexer's DynamoDB calls delays traces' rollup contributions, never loses them.

Real writers (the stock client over HTTP on a runtime whose indexer is paused), then the stream drained into the
real indexer while a share of its DynamoDB calls fail as DynamoDB's throttling once botocore's retries are spent
(``tools/throttle_hook``, scope ``indexer``). Once the throttling stops and the stream is drained, the Overview
counts every trace, search_traces lists every trace, and no stream record was dead-lettered.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import mlflow
import pytest
from mlflow import MlflowClient
from mlflow.entities.trace_metrics import AggregationType, MetricAggregation, MetricViewType

from tools.throttle_hook import sitecustomize as throttle_hook

pytestmark = pytest.mark.e2e

TRACES = 12
# A share of the indexer's calls throttled: an invocation makes dozens, so nearly every one of them meets one.
RATE = 0.15


def _trace(i: int) -> str:
    with mlflow.start_span(name=f"agent-{i % 3}") as root:
        for j in range(3):
            with mlflow.start_span(name=f"step-{j}") as span:
                span.set_inputs({"i": i, "j": j})
        root.set_outputs({"answer": i})
    return root.trace_id


def _trace_count(server: str, experiment_id: str) -> float:
    store = MlflowClient(server)._tracing_client.store
    points = store.query_trace_metrics(
        experiment_ids=[experiment_id],
        view_type=MetricViewType.TRACES,
        metric_name="trace_count",
        aggregations=[MetricAggregation(aggregation_type=AggregationType.COUNT)],
    )
    return sum(point.values["COUNT"] for point in points)


def test_a_throttled_indexer_loses_no_trace_contribution(paused_runtime: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("MLFLOW_ENABLE_ASYNC_TRACE_LOGGING", "false")
    mlflow.set_tracking_uri(paused_runtime.url)
    experiment_id = mlflow.create_experiment("throttled-indexer")
    mlflow.set_experiment(experiment_id=experiment_id)
    sent = {_trace(i) for i in range(TRACES)}

    setting = tmp_path / "throttle"
    setting.write_text(f"{RATE} indexer")
    random.seed(39)
    uninstall = throttle_hook.install(str(setting))
    try:
        paused_runtime.indexer_mode = "sync"
        paused_runtime.drain_stream()
    finally:
        uninstall()
        setting.write_text("0")
    injected = len((tmp_path / "throttle.count").read_text().split())
    assert injected > 0  # the indexer was throttled (else this test proves nothing)
    paused_runtime.drain_stream()

    assert len(paused_runtime.dead_letters) == 0
    listed = {trace.info.trace_id for trace in MlflowClient(paused_runtime.url).search_traces(locations=[experiment_id], max_results=100)}
    assert listed == sent
    assert _trace_count(paused_runtime.url, experiment_id) == TRACES
