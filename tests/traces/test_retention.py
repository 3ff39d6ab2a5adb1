"""Trace retention: an experiment's retention setting gives trace items the table's TTL; expired traces are gone."""

from __future__ import annotations

import time

import mlflow
import pytest
from mlflow import MlflowClient
from mlflow.exceptions import MlflowException

from serverless_mlflow.storage import table
from serverless_mlflow.storage.schema import TTL_ATTRIBUTE, trace_bucket, trace_shard
from serverless_mlflow.store import trace_partitions
from serverless_mlflow.store import traces as store
from tests.conftest import unique

pytestmark = pytest.mark.usefixtures("tracing")


def _trace_started(minutes_ago: float, name: str) -> str:
    start_ns = time.time_ns() - int(minutes_ago * 60 * 1e9)
    root = mlflow.start_span_no_context(name=name, start_time_ns=start_ns, inputs={"q": name})
    child = mlflow.start_span_no_context(name="child", parent_span=root, start_time_ns=start_ns + 1000)
    child.end()
    root.end(outputs="ok")
    return root.trace_id


def _items(experiment_id: str, trace_id: str) -> list[dict]:
    """The trace's info, spans and locator, and the directory entry of the info's partition."""
    locator = store.locate(trace_id)
    info = table.get(store.info_key(locator, trace_id))
    directory = table.get(
        trace_partitions.BUCKET.key(experiment_id=experiment_id, bucket=trace_bucket(info["request_time"]), shard=trace_shard(trace_id))
    )
    return [info, *table.query(**store.SPAN.query("of_trace", trace_id=trace_id)), locator, directory]


def test_experiment_retention_expires_old_traces_and_sets_ttl(server: str) -> None:
    mlflow.set_tracking_uri(server)
    client = MlflowClient()
    experiment_id = mlflow.create_experiment(unique("retention"))
    client.set_experiment_tag(experiment_id, "serverless.traceRetention", "30m")
    mlflow.set_experiment(experiment_id=experiment_id)
    old = _trace_started(60, "old")
    fresh = _trace_started(1, "fresh")

    listed = mlflow.search_traces(locations=[experiment_id], return_type="list")
    assert [t.info.trace_id for t in listed] == [fresh]
    with pytest.raises(MlflowException) as gone:
        client.get_trace(old)
    assert gone.value.error_code == "RESOURCE_DOES_NOT_EXIST"
    assert len(client.get_trace(fresh).data.spans) == 2

    # Every item of both traces (info, spans, locator) carries the TTL attribute DynamoDB deletes by.
    now = time.time()
    for trace_id, minutes_left in ((old, -30), (fresh, 29)):
        info, *others, directory = _items(experiment_id, trace_id)
        assert len(others) == 3
        for item in (info, *others):
            assert abs(item[TTL_ATTRIBUTE] - (now + minutes_left * 60)) < 120, item["sk"]
        # The directory entry outlives every trace its hour can hold (same retention).
        assert info[TTL_ATTRIBUTE] <= directory[TTL_ATTRIBUTE] <= info[TTL_ATTRIBUTE] + 3600


def test_without_retention_traces_do_not_expire(server: str) -> None:
    mlflow.set_tracking_uri(server)
    experiment_id = mlflow.create_experiment(unique("keep"))
    mlflow.set_experiment(experiment_id=experiment_id)
    trace_id = _trace_started(60 * 24 * 400, "ancient")
    assert [t.info.trace_id for t in mlflow.search_traces(locations=[experiment_id], return_type="list")] == [trace_id]
    assert all(TTL_ATTRIBUTE not in item for item in _items(experiment_id, trace_id))
