"""A trace whose aggregation fails makes the indexer report its own stream records only: every other trace of
the batch is aggregated, and nothing else is retried or dead-lettered (partial batch responses, per trace).

Real writers (the stock client over HTTP on a runtime whose indexer is paused), then one batch of the stream's
records delivered to the real handler, as Lambda does. One trace's span item is made unreadable (bytes that are
not a span: what a bug or a bad migration could leave); its records are the only ones reported, and once it is
repaired the retried records aggregate it.
"""

from __future__ import annotations

import os
from typing import Any

import mlflow
import pytest
from mlflow import MlflowClient
from mlflow.entities.trace_metrics import AggregationType, MetricAggregation, MetricViewType

from local.streams import needs_indexing
from serverless_mlflow.index.trace_aggregates import RECORD
from serverless_mlflow.storage import table
from serverless_mlflow.storage.schema import ENTITY, ENTITY_TYPE
from tests.indexer.support import Stream, invoke_indexer

pytestmark = pytest.mark.e2e
SPAN = ENTITY["trace_spans"]


def _trace(name: str) -> str:
    with mlflow.start_span(name=name) as root:
        with mlflow.start_span(name=f"{name}-child") as child:
            child.set_inputs({"q": name})
        root.set_outputs("done")
    return root.trace_id


def _trace_of(record: dict[str, Any]) -> str | None:
    image = table.from_item(record["dynamodb"].get("NewImage") or record["dynamodb"].get("OldImage") or {})
    if image.get(ENTITY_TYPE) == "trace":
        return str(image["trace_id"])
    if image.get(ENTITY_TYPE) == SPAN.name:
        return str(SPAN.parse_pk(image["pk"], fields=("trace_id",))["trace_id"])
    return None


def _trace_count(server: str, experiment_id: str) -> float:
    store = MlflowClient(server)._tracing_client.store
    points = store.query_trace_metrics(
        experiment_ids=[experiment_id],
        view_type=MetricViewType.TRACES,
        metric_name="trace_count",
        aggregations=[MetricAggregation(aggregation_type=AggregationType.COUNT)],
    )
    return points[0].values["COUNT"]


def test_a_failing_trace_reports_only_its_own_records(paused_runtime: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MLFLOW_ENABLE_ASYNC_TRACE_LOGGING", "false")
    mlflow.set_tracking_uri(paused_runtime.url)
    experiment_id = mlflow.create_experiment("partial-batches")
    mlflow.set_experiment(experiment_id=experiment_id)
    good, bad, other = _trace("good"), _trace("bad"), _trace("other")
    spans = table.query(SPAN.pk.render({"trace_id": bad}), SPAN.sk_prefix())
    broken = spans[0]
    table.put({**broken, "span": b"\xff\xff\xff\xff"})  # not a protobuf span: parsing it fails

    stream = Stream(os.environ["DYNAMODB_ENDPOINT_URL"], os.environ["TABLE_NAME"])
    records = [r for r in stream.read_new() if needs_indexing(r)]
    by_trace: dict[str | None, set[str]] = {}
    for record in records:
        by_trace.setdefault(_trace_of(record), set()).add(record["dynamodb"]["SequenceNumber"])
    result = invoke_indexer(records)

    reported = {f["itemIdentifier"] for f in result["batchItemFailures"]}
    assert reported == by_trace[bad], (reported, by_trace[bad])
    for trace_id in (good, other):
        assert table.get(RECORD.key(trace_id=trace_id)) is not None
    assert table.get(RECORD.key(trace_id=bad)) is None
    assert _trace_count(paused_runtime.url, experiment_id) == 2.0  # until its records are retried

    table.put(broken)  # repaired: Lambda's retry of the reported records aggregates it
    retried = [r for r in records if r["dynamodb"]["SequenceNumber"] in reported]
    assert invoke_indexer(retried)["batchItemFailures"] == []
    assert table.get(RECORD.key(trace_id=bad)) is not None
    assert _trace_count(paused_runtime.url, experiment_id) == 3.0
