"""Trace infos written under the earlier shard count (``LEGACY_TRACE_SHARDS``) stay where they are: they are still
read, searched, changed and deleted, and a repeated start_trace moves such an info (nothing lost, no second copy)."""

from __future__ import annotations

import mlflow
import pytest
from mlflow import MlflowClient
from mlflow.entities import AssessmentSource

from serverless_mlflow.storage import table
from serverless_mlflow.storage.schema import LEGACY_TRACE_SHARDS, PK, SK, trace_shard
from serverless_mlflow.store import trace_partitions
from serverless_mlflow.store import traces as store
from tests.conftest import unique

pytestmark = pytest.mark.usefixtures("tracing")


def _traced(i: int) -> str:
    with mlflow.start_span(name=f"agent-{i}") as root:
        root.set_inputs({"q": i})
        with mlflow.start_span(name="step") as child:
            child.set_outputs({"ok": True})
        root.set_outputs({"a": i})
    return root.trace_id


def _legacy_trace() -> str:
    """A trace whose shards differ under the two counts, its info moved where the previous release wrote it."""
    for i in range(40):
        trace_id = _traced(i)
        legacy = trace_shard(trace_id, LEGACY_TRACE_SHARDS)
        if legacy != trace_shard(trace_id):
            break
    else:
        raise AssertionError("no trace id with distinct shards in 40 tries")
    info = store.read_info(store.locate(trace_id), trace_id)
    assert info is not None and trace_partitions.of_item(info).shard == trace_shard(trace_id)
    partition = trace_partitions.Partition(str(info["experiment_id"]), trace_partitions.of_item(info).bucket, legacy)
    table.put({**info, PK: partition.pk})
    table.delete({PK: info[PK], SK: info[SK]})
    entry = {"bucket": partition.bucket, "shard": legacy}
    table.put(trace_partitions.BUCKET.item(entry, experiment_id=partition.experiment_id, **entry))
    return trace_id


def _infos(trace_id: str) -> list[dict]:
    """Every stored info item of the trace, at either shard."""
    locator = store.locate(trace_id) or {}
    if locator.get("info_time") is None:
        return []
    return [item for key in store.info_keys(locator, trace_id) if (item := table.get(key))]


def test_an_info_at_its_legacy_shard_is_read_searched_changed_and_deleted(server: str) -> None:
    mlflow.set_tracking_uri(server)
    client = MlflowClient()
    experiment_id = mlflow.create_experiment(unique("legacy-shards"))
    mlflow.set_experiment(experiment_id=experiment_id)
    trace_id = _legacy_trace()
    before = client.get_trace(trace_id)
    assert [trace_partitions.of_item(i).shard for i in _infos(trace_id)] == [trace_shard(trace_id, LEGACY_TRACE_SHARDS)]

    # Read: by id (with its spans), in a batch, and by every kind of search.
    assert len(before.data.spans) == 2 and str(before.info.state) == "OK"
    listed = mlflow.search_traces(locations=[experiment_id], return_type="list")
    assert trace_id in [t.info.trace_id for t in listed]
    for filter_string, order_by in [
        ("trace.status = 'OK'", None),
        (None, ["execution_time_ms DESC"]),
        (f"trace.name = '{before.info.tags['mlflow.traceName']}'", None),
    ]:
        found = client.search_traces(locations=[experiment_id], filter_string=filter_string, order_by=order_by)
        assert trace_id in [t.info.trace_id for t in found], (filter_string, order_by)

    # Changed where it is: no copy appears at the current shard.
    client.set_trace_tag(trace_id, "team", "t1")
    mlflow.log_feedback(trace_id=trace_id, name="good", value=True, source=AssessmentSource(source_type="HUMAN", source_id="u"))
    again = client.get_trace(trace_id)
    assert again.info.tags["team"] == "t1"
    assert [a.name for a in again.info.assessments] == ["good"]
    assert len(_infos(trace_id)) == 1

    # A repeated start_trace (a client retry) moves it to its current shard, keeping what was added.
    tracing_store = client._tracing_client.store
    restarted = tracing_store.start_trace(again.info)
    assert restarted.tags["team"] == "t1"
    (only,) = _infos(trace_id)
    assert trace_partitions.of_item(only).shard == trace_shard(trace_id)
    assert client.get_trace(trace_id).info.tags["team"] == "t1"

    # Deleted by id.
    assert client.delete_traces(experiment_id, trace_ids=[trace_id]) == 1
    assert _infos(trace_id) == []
    assert trace_id not in [t.info.trace_id for t in mlflow.search_traces(locations=[experiment_id], return_type="list")]


def test_delete_finds_an_info_at_its_legacy_shard(server: str) -> None:
    mlflow.set_tracking_uri(server)
    client = MlflowClient()
    experiment_id = mlflow.create_experiment(unique("legacy-shards"))
    mlflow.set_experiment(experiment_id=experiment_id)
    trace_id = _legacy_trace()
    assert client.delete_traces(experiment_id, trace_ids=[trace_id]) == 1
    assert _infos(trace_id) == []
    with pytest.raises(mlflow.exceptions.MlflowException):
        client.get_trace(trace_id)
