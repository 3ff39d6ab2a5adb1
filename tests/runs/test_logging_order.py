"""A run's params, metrics, tags and dataset inputs come back in the order they were first logged, as MLflow's SqlAlchemyStore answers
them (its rows' insertion order; setting a tag again keeps its place), from get_run and search_runs, before and after
the indexer's pass (summaries, metric digests). Compared with MLflow's server on sqlite (issue 42 item 6)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import unique
from tests.mlflow_reference import reference_server

pytestmark = pytest.mark.e2e


def _log(url: str) -> tuple[Any, str]:
    import mlflow
    from mlflow.entities import Metric, Param, RunTag

    client = mlflow.MlflowClient(url)
    experiment_id = client.create_experiment(unique("order"))
    run_id = client.create_run(experiment_id, tags={"team": "ui", "owner": "ann", "area": "order"}, run_name="first").info.run_id
    for key in ("zeta", "alpha", "mid"):
        client.log_param(run_id, key, "1")
    for step in range(2):
        for key in ("val_loss", "accuracy", "loss"):
            client.log_metric(run_id, key, 1.0 + step, step=step, timestamp=1000 + step)
    client.log_batch(
        run_id,
        params=[Param("batch_z", "1"), Param("batch_a", "1"), Param("alpha", "1")],
        metrics=[Metric("m_z", 1.0, 0, 0), Metric("m_a", 1.0, 0, 0), Metric("accuracy", 9.0, 5000, 9)],
        tags=[RunTag("tag_z", "1"), RunTag("tag_a", "1"), RunTag("team", "again")],
    )
    client.set_tag(run_id, "late", "x")
    client.set_tag(run_id, "owner", "changed")  # set again: keeps its place
    client.set_tag(run_id, "mlflow.runName", "renamed")
    client.log_inputs(run_id, datasets=[_input("z_data"), _input("a_data")])
    client.log_inputs(run_id, datasets=[_input("m_data"), _input("z_data")])
    return client, run_id


def _input(name: str) -> Any:
    from mlflow.entities import Dataset, DatasetInput

    return DatasetInput(Dataset(name=name, digest=f"{name}-digest", source_type="local", source="/tmp/x"))


def _orders(client: Any, run_id: str) -> dict[str, list[str]]:
    run = client.get_run(run_id)
    (found,) = client.search_runs([run.info.experiment_id])
    orders = {}
    for source, data in (("get", run.data), ("search", found.data)):
        orders[f"{source} params"] = list(data.params)
        orders[f"{source} metrics"] = list(data.metrics)
        orders[f"{source} tags"] = [key for key in data.tags if key == "mlflow.runName" or not key.startswith("mlflow.")]
    orders["get inputs"] = [entry.dataset.name for entry in run.inputs.dataset_inputs]
    orders["search inputs"] = [entry.dataset.name for entry in found.inputs.dataset_inputs]
    return orders


def test_run_data_in_logging_order_as_mlflow(server: str, local_runtime: Any) -> None:
    ours, our_run = _log(server)
    theirs, their_run = _log(reference_server().url)
    expected = _orders(theirs, their_run)
    assert expected["get params"] == ["zeta", "alpha", "mid", "batch_z", "batch_a"]
    assert expected["get tags"] == ["team", "owner", "area", "mlflow.runName", "tag_z", "tag_a", "late"]
    assert expected["get inputs"] == ["z_data", "a_data", "m_data"]
    assert _orders(ours, our_run) == expected
    local_runtime.drain_stream()  # indexed: searches read the run's summary, its metrics the indexer's digest
    assert _orders(ours, our_run) == expected
