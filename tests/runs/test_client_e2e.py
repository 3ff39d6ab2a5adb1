"""A data scientist's tracking workflow through the local runtime with the real mlflow client."""

from __future__ import annotations

import math

import mlflow
import pandas as pd
import pytest
from mlflow.entities import Dataset, DatasetInput, InputTag, Metric, Param, RunStatus, RunTag, ViewType
from mlflow.exceptions import MlflowException

from tests.conftest import unique

pytestmark = pytest.mark.e2e

MAX_DOUBLE = 1.7976931348623157e308


def test_tracking_workflow(client: mlflow.MlflowClient) -> None:
    experiment = mlflow.set_experiment(unique("workflow"))
    frame = pd.DataFrame({"x": [1.0, 2.0, 3.0], "y": [0, 1, 0]})
    dataset = mlflow.data.from_pandas(frame, source="s3://bucket/frame.csv", name="frame", targets="y")
    with mlflow.start_run(run_name="parent") as parent:
        mlflow.log_param("alpha", 0.5)
        mlflow.log_params({"depth": 3, "kernel": "rbf"})
        for step in range(5):
            mlflow.log_metric("loss", 1.0 / (step + 1), step=step)
        mlflow.log_metrics({"acc": 0.9, "f1": 0.8}, step=7)
        mlflow.set_tag("team", "a")
        mlflow.set_tags({"stage": "dev", "owner": "me"})
        mlflow.log_input(dataset, context="training", tags={"split": "train"})
        with mlflow.start_run(run_name="child", nested=True) as child:
            mlflow.log_metric("loss", 0.1)
    run = client.get_run(parent.info.run_id)
    assert run.info.status == "FINISHED" and run.info.end_time >= run.info.start_time
    assert run.info.run_name == "parent" and run.info.lifecycle_stage == "active"
    assert run.info.artifact_uri == f"mlflow-artifacts:/{experiment.experiment_id}/{parent.info.run_id}/artifacts"
    assert run.data.params == {"alpha": "0.5", "depth": "3", "kernel": "rbf"}
    assert run.data.metrics == {"loss": 0.2, "acc": 0.9, "f1": 0.8}
    assert {"team": "a", "stage": "dev", "owner": "me", "mlflow.runName": "parent"}.items() <= run.data.tags.items()
    [dataset_input] = run.inputs.dataset_inputs
    assert dataset_input.dataset.name == "frame" and dataset_input.dataset.digest == dataset.digest
    assert dataset_input.dataset.source_type == "code" or dataset_input.dataset.source_type
    assert dataset_input.dataset.schema == dataset.to_dict()["schema"]
    assert {t.key: t.value for t in dataset_input.tags} == {"mlflow.data.context": "training", "split": "train"}

    child_run = client.get_run(child.info.run_id)
    assert child_run.data.tags["mlflow.parentRunId"] == parent.info.run_id

    history = client.get_metric_history(parent.info.run_id, "loss")
    assert [(m.step, m.value) for m in history] == [(s, 1.0 / (s + 1)) for s in range(5)]

    df = mlflow.search_runs(experiment_ids=[experiment.experiment_id], order_by=["metrics.loss ASC"])
    assert isinstance(df, pd.DataFrame)
    assert list(df["run_id"]) == [child.info.run_id, parent.info.run_id]
    assert df.loc[df["run_id"] == parent.info.run_id, "params.kernel"].item() == "rbf"
    assert df.loc[df["run_id"] == parent.info.run_id, "metrics.acc"].item() == 0.9
    filtered = mlflow.search_runs(
        experiment_ids=[experiment.experiment_id],
        filter_string="params.kernel = 'rbf' and metrics.loss < 1 and datasets.context = 'training'",
    )
    assert list(filtered["run_id"]) == [parent.info.run_id]
    by_name = client.search_runs([experiment.experiment_id], "attributes.run_name = 'child'")
    assert [r.info.run_id for r in by_name] == [child.info.run_id]


def test_search_right_after_write_sees_it(client: mlflow.MlflowClient) -> None:
    experiment_id = client.create_experiment(unique("read-after-write"))
    run = client.create_run(experiment_id)
    client.log_metric(run.info.run_id, "m", 3.0)
    found = client.search_runs([experiment_id], "metrics.m = 3")
    assert [r.info.run_id for r in found] == [run.info.run_id]
    client.set_tag(run.info.run_id, "t", "x")
    assert [r.info.run_id for r in client.search_runs([experiment_id], "tags.t = 'x'")] == [run.info.run_id]


def test_delete_restore_and_writes_to_deleted_run(client: mlflow.MlflowClient) -> None:
    experiment_id = client.create_experiment(unique("lifecycle"))
    run = client.create_run(experiment_id)
    run_id = run.info.run_id
    client.delete_run(run_id)
    assert client.get_run(run_id).info.lifecycle_stage == "deleted"
    assert client.search_runs([experiment_id]) == []
    assert [r.info.run_id for r in client.search_runs([experiment_id], run_view_type=ViewType.DELETED_ONLY)] == [run_id]
    for write in (
        lambda: client.log_metric(run_id, "m", 1.0),
        lambda: client.log_param(run_id, "p", "v"),
        lambda: client.set_tag(run_id, "t", "v"),
        lambda: client.log_batch(run_id, metrics=[Metric("m", 1.0, 1, 0)]),
        lambda: client.set_terminated(run_id),
    ):
        with pytest.raises(MlflowException) as error:
            write()
        assert error.value.error_code == "INVALID_PARAMETER_VALUE"
        assert f"The run {run_id} must be in the 'active' state. Current state is deleted." in error.value.message
    client.restore_run(run_id)
    assert client.get_run(run_id).info.lifecycle_stage == "active"
    client.log_metric(run_id, "m", 1.0)
    assert [r.info.run_id for r in client.search_runs([experiment_id])] == [run_id]


def test_changing_a_param_is_rejected(client: mlflow.MlflowClient) -> None:
    run = client.create_run(client.create_experiment(unique("params")))
    client.log_param(run.info.run_id, "p", "1")
    client.log_param(run.info.run_id, "p", "1")  # same value: fine
    with pytest.raises(MlflowException) as error:
        client.log_param(run.info.run_id, "p", "2")
    assert error.value.error_code == "INVALID_PARAMETER_VALUE"
    assert "Changing param values is not allowed. Param with key='p' was already logged with value='1'" in error.value.message
    with pytest.raises(MlflowException) as error:
        client.log_batch(run.info.run_id, params=[Param("q", "1"), Param("p", "3")])
    assert "Params were already logged='[{'key': 'p', 'old_value': '1', 'new_value': '3'}]'" in error.value.message
    # All or nothing: q was not written either.
    assert client.get_run(run.info.run_id).data.params == {"p": "1"}


def test_unknown_run_is_resource_does_not_exist(client: mlflow.MlflowClient) -> None:
    for run_id in ("deadbeef", "0" * 32):
        with pytest.raises(MlflowException) as error:
            client.get_run(run_id)
        assert error.value.error_code == "RESOURCE_DOES_NOT_EXIST"
        assert error.value.message.endswith(f"Run with id={run_id} not found")
    with pytest.raises(MlflowException) as error:
        client.log_metric("0" * 32, "m", 1.0)
    assert error.value.error_code == "RESOURCE_DOES_NOT_EXIST"
    # Like MLflow's server: history of an unknown run is simply empty.
    assert client.get_metric_history("0" * 32, "m") == []


def test_nan_infinity_negative_and_huge_steps(client: mlflow.MlflowClient) -> None:
    run_id = client.create_run(client.create_experiment(unique("special"))).info.run_id
    client.log_batch(
        run_id,
        metrics=[
            Metric("nan", float("nan"), 1, 0),
            Metric("pinf", float("inf"), 1, 0),
            Metric("ninf", float("-inf"), 1, 0),
            Metric("steps", 1.0, 1, -5),
            Metric("steps", 2.0, 1, 2**60),
            Metric("steps", 3.0, 1, 2**53 + 1),
        ],
    )
    metrics = client.get_run(run_id).data.metrics
    assert math.isnan(metrics["nan"])
    # MLflow's SQL store keeps +-inf as +-max double, and so does its server's answer.
    assert metrics["pinf"] == MAX_DOUBLE and metrics["ninf"] == -MAX_DOUBLE
    assert metrics["steps"] == 2.0
    history = client.get_metric_history(run_id, "steps")
    assert [(m.step, m.value) for m in history] == [(-5, 1.0), (2**53 + 1, 3.0), (2**60, 2.0)]
    assert math.isnan(client.get_metric_history(run_id, "nan")[0].value)
    assert [r.info.run_id for r in client.search_runs([client.get_run(run_id).info.experiment_id], "metrics.pinf > 1e308")] == [run_id]


def test_update_run_and_run_name_tag(client: mlflow.MlflowClient) -> None:
    run = client.create_run(client.create_experiment(unique("update")), run_name="first")
    run_id = run.info.run_id
    client.update_run(run_id, name="second")
    fetched = client.get_run(run_id)
    assert fetched.info.run_name == "second" and fetched.data.tags["mlflow.runName"] == "second"
    client.set_tag(run_id, "mlflow.runName", "third")
    assert client.get_run(run_id).info.run_name == "third"
    client.set_terminated(run_id, status="KILLED", end_time=1234)
    info = client.get_run(run_id).info
    assert info.status == "KILLED" and info.end_time == 1234
    assert RunStatus.is_terminated(RunStatus.from_string(info.status))
    client.delete_tag(run_id, "mlflow.runName")
    assert "mlflow.runName" not in client.get_run(run_id).data.tags
    with pytest.raises(MlflowException) as error:
        client.delete_tag(run_id, "missing")
    assert error.value.error_code == "RESOURCE_DOES_NOT_EXIST"
    assert error.value.message.endswith(f"No tag with name: missing in run with id {run_id}")


def test_metric_history_pages(client: mlflow.MlflowClient, server: str) -> None:
    import requests

    run_id = client.create_run(client.create_experiment(unique("history"))).info.run_id
    client.log_batch(run_id, metrics=[Metric("m", float(i), 1000 - i, i) for i in range(7)])
    seen, token = [], None
    while True:
        params = {"run_id": run_id, "metric_key": "m", "max_results": 3, **({"page_token": token} if token else {})}
        body = requests.get(f"{server}/api/2.0/mlflow/metrics/get-history", params=params, timeout=30).json()
        seen += [m["step"] for m in body.get("metrics", [])]
        token = body.get("next_page_token")
        if not token:
            break
    # Ordered by timestamp, then step, then value (MLflow's get-history order).
    assert seen == [6, 5, 4, 3, 2, 1, 0]


def test_log_model_outputs_and_model_inputs(client: mlflow.MlflowClient, server: str) -> None:
    import requests

    run_id = client.create_run(client.create_experiment(unique("outputs"))).info.run_id
    api = f"{server}/api/2.0/mlflow"
    assert (
        requests.post(f"{api}/runs/outputs", json={"run_id": run_id, "models": [{"model_id": "m-1", "step": 4}]}, timeout=30).status_code
        == 200
    )
    assert requests.post(f"{api}/runs/log-inputs", json={"run_id": run_id, "models": [{"model_id": "m-2"}]}, timeout=30).status_code == 200
    run = client.get_run(run_id)
    assert [(o.model_id, o.step) for o in run.outputs.model_outputs] == [("m-1", 4)]
    assert [i.model_id for i in run.inputs.model_inputs] == ["m-2"]
    model_json = (
        '{"artifact_path": "model", "flavors": {"python_function": {"config": {"a": 1}, "loader_module": "x"}}, '
        f'"utc_time_created": "2024-01-01 00:00:00.000000", "run_id": "{run_id}"}}'
    )
    for _ in range(2):
        assert requests.post(f"{api}/runs/log-model", json={"run_id": run_id, "model_json": model_json}, timeout=30).status_code == 200
    history = client.get_run(run_id).data.tags["mlflow.log-model.history"]
    import json

    assert (
        json.loads(history)
        == [
            {
                "run_id": run_id,
                "artifact_path": "model",
                "utc_time_created": "2024-01-01 00:00:00.000000",
                "model_uuid": None,
                "flavors": {"python_function": {"loader_module": "x"}},
            }
        ]
        * 2
    )


def test_log_batch_with_run_name_tag_renames(client: mlflow.MlflowClient) -> None:
    run_id = client.create_run(client.create_experiment(unique("batch-name"))).info.run_id
    client.log_batch(run_id, tags=[RunTag("mlflow.runName", "renamed"), RunTag("a", "1"), RunTag("a", "2")])
    run = client.get_run(run_id)
    assert run.info.run_name == "renamed"
    assert run.data.tags["a"] == "2"


def test_large_dataset_profile_round_trips(client: mlflow.MlflowClient, server: str) -> None:
    """A dataset larger than a DynamoDB item (400 KB) is split into parts and read back whole."""
    import requests

    experiment_id = client.create_experiment(unique("large-dataset"))
    first, second = client.create_run(experiment_id).info.run_id, client.create_run(experiment_id).info.run_id
    profile = "".join(chr(0x4E00 + i % 500) for i in range(450_000))  # 1.35 MB of UTF-8
    schema = '{"mlflow_colspec": [' + ", ".join(f'{{"name": "c{i}", "type": "double"}}' for i in range(2000)) + "]}"
    big = Dataset("big", "digest1", "s3", "s3://bucket/big", schema=schema, profile=profile)
    client.log_inputs(first, [DatasetInput(big, [InputTag("mlflow.data.context", "train")])])
    # Same name and digest from another run: the experiment's stored (large) copy is linked.
    client.log_inputs(second, [DatasetInput(Dataset("big", "digest1", "s3", "s3://other", profile="{}"), [])])
    for run_id in (first, second):
        [dataset_input] = client.get_run(run_id).inputs.dataset_inputs
        assert dataset_input.dataset.profile == profile and dataset_input.dataset.schema == schema
        assert dataset_input.dataset.source == "s3://bucket/big"
    found = client.search_runs([experiment_id], "datasets.name = 'big' and datasets.context = 'train'")
    assert [r.info.run_id for r in found] == [first]
    assert found[0].inputs.dataset_inputs[0].dataset.profile == profile
    assert requests.get(f"{server}/api/2.0/mlflow/runs/get", params={"run_id": second}, timeout=60).status_code == 200
