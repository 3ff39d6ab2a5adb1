"""Logged models through the local runtime with the real mlflow client."""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request
from typing import Any

import mlflow
import pytest
from mlflow.entities import LoggedModelStatus
from mlflow.exceptions import MlflowException

from tests.conftest import unique

pytestmark = pytest.mark.e2e


def call(server: str, method: str, path: str, body: dict[str, Any] | None = None) -> tuple[int, dict[str, Any]]:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(f"{server}/api/2.0/mlflow/{path}", data=data, method=method)
    if data is not None:
        request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request) as response:
            return response.status, json.loads(response.read() or b"{}")
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"{}")


@pytest.fixture
def experiment_id(client: mlflow.MlflowClient) -> str:
    return client.create_experiment(unique("lm"))


def test_create_get_finalize(client: mlflow.MlflowClient, experiment_id: str) -> None:
    model = client.create_logged_model(experiment_id, name="my_model", params={"alpha": "0.5"}, tags={"t": "1"}, model_type="sklearn")
    assert re.fullmatch(r"m-[0-9a-f]{32}", model.model_id)
    assert model.status == LoggedModelStatus.PENDING
    assert model.experiment_id == experiment_id
    assert model.artifact_location == f"mlflow-artifacts:/{experiment_id}/models/{model.model_id}/artifacts"
    assert model.params == {"alpha": "0.5"} and model.tags == {"t": "1"} and model.model_type == "sklearn"
    fetched = client.get_logged_model(model.model_id)
    assert (fetched.name, fetched.creation_timestamp, fetched.params, fetched.tags) == (
        "my_model",
        model.creation_timestamp,
        model.params,
        model.tags,
    )
    finalized = client.finalize_logged_model(model.model_id, LoggedModelStatus.READY)
    assert finalized.status == LoggedModelStatus.READY
    assert finalized.last_updated_timestamp >= model.last_updated_timestamp
    assert client.get_logged_model(model.model_id).status == LoggedModelStatus.READY


def test_random_name_when_none(client: mlflow.MlflowClient, experiment_id: str) -> None:
    model = client.create_logged_model(experiment_id)
    assert re.fullmatch(r"[a-z]+-[a-z]+-\d+", model.name)


def test_tags_and_params(client: mlflow.MlflowClient, experiment_id: str, server: str) -> None:
    model = client.create_logged_model(experiment_id, params={"a": "1"})
    client.set_logged_model_tags(model.model_id, {"x": "1", "y#/ü": "2"})
    client.set_logged_model_tags(model.model_id, {"x": "3"})
    assert client.get_logged_model(model.model_id).tags == {"x": "3", "y#/ü": "2"}
    client.delete_logged_model_tag(model.model_id, "x")
    assert client.get_logged_model(model.model_id).tags == {"y#/ü": "2"}
    status, body = call(server, "DELETE", f"logged-models/{model.model_id}/tags/x")
    assert (status, body) == (
        404,
        {
            "error_code": "RESOURCE_DOES_NOT_EXIST",
            "message": f"No tag with key 'x' found for model with ID '{model.model_id}'.",
            "sqlstate": "KAM00",
            "error_class": "RESOURCE_NOT_FOUND",
        },
    )
    client.log_model_params(model.model_id, {"b": "2", "c": "3"})
    assert client.get_logged_model(model.model_id).params == {"a": "1", "b": "2", "c": "3"}
    # Params are immutable (SqlAlchemyStore: UNIQUE constraint -> BAD_REQUEST), even with the same value.
    status, body = call(
        server, "POST", f"logged-models/{model.model_id}/params", {"model_id": model.model_id, "params": [{"key": "a", "value": "1"}]}
    )
    assert status == 400 and body["error_code"] == "BAD_REQUEST"


def test_not_found_and_validation(client: mlflow.MlflowClient, experiment_id: str, server: str) -> None:
    missing = "m-" + "0" * 32
    with pytest.raises(MlflowException) as error:
        client.get_logged_model(missing)
    assert error.value.error_code == "RESOURCE_DOES_NOT_EXIST"
    assert call(server, "GET", f"logged-models/{missing}") == (
        404,
        {
            "error_code": "RESOURCE_DOES_NOT_EXIST",
            "message": f"Logged model with ID '{missing}' not found.",
            "sqlstate": "KAM00",
            "error_class": "RESOURCE_NOT_FOUND",
        },
    )
    status, body = call(server, "POST", "logged-models", {"experiment_id": experiment_id, "name": "a.b"})
    assert status == 400 and body["message"].startswith("Invalid model name ('a.b') provided.")
    assert call(server, "POST", "logged-models", {"experiment_id": "999999"})[0] == 404
    status, body = call(server, "POST", "logged-models", {"experiment_id": "x"})
    assert (status, body["message"]) == (400, "Invalid experiment ID 'x'. Experiment ID must be a valid integer.")
    status, body = call(
        server,
        "POST",
        "logged-models",
        {"experiment_id": experiment_id, "params": [{"key": "p", "value": "1"}, {"key": "p", "value": "2"}]},
    )
    assert status == 400 and body["error_code"] == "BAD_REQUEST"


def test_create_in_deleted_experiment_is_rejected(client: mlflow.MlflowClient) -> None:
    experiment_id = client.create_experiment(unique("lmdel"))
    client.delete_experiment(experiment_id)
    with pytest.raises(MlflowException) as error:
        client.create_logged_model(experiment_id)
    assert "must be in the 'active' state" in error.value.message


def test_delete(client: mlflow.MlflowClient, experiment_id: str, server: str) -> None:
    model = client.create_logged_model(experiment_id)
    client.delete_logged_model(model.model_id)
    with pytest.raises(MlflowException):
        client.get_logged_model(model.model_id)
    status, body = call(server, "GET", f"logged-models/{model.model_id}?allow_deleted=true")
    assert status == 200 and body["model"]["info"]["model_id"] == model.model_id
    assert client.search_logged_models(experiment_ids=[experiment_id]) == []


def test_search(client: mlflow.MlflowClient, experiment_id: str) -> None:
    models = [
        client.create_logged_model(experiment_id, name=f"m{i}", params={"i": str(i)}, tags={"even": str(i % 2 == 0)}) for i in range(5)
    ]
    found = client.search_logged_models(experiment_ids=[experiment_id])
    # Default order: creation_timestamp DESC, then model_id ASC.
    expected = sorted(models, key=lambda m: (-m.creation_timestamp, m.model_id))
    assert [m.model_id for m in found] == [m.model_id for m in expected]
    even = client.search_logged_models(
        experiment_ids=[experiment_id], filter_string="tags.even = 'True'", order_by=[{"field_name": "name", "ascending": True}]
    )
    assert [m.name for m in even] == ["m0", "m2", "m4"]
    by_param = client.search_logged_models(experiment_ids=[experiment_id], filter_string="params.i = '3'")
    assert [m.name for m in by_param] == ["m3"]
    page = client.search_logged_models(experiment_ids=[experiment_id], max_results=2, order_by=[{"field_name": "name", "ascending": False}])
    names = [m.name for m in page]
    while page.token:
        page = client.search_logged_models(
            experiment_ids=[experiment_id], max_results=2, order_by=[{"field_name": "name", "ascending": False}], page_token=page.token
        )
        names += [m.name for m in page]
    assert names == ["m4", "m3", "m2", "m1", "m0"]


def test_metrics_logged_against_a_model(client: mlflow.MlflowClient, experiment_id: str) -> None:
    model = client.create_logged_model(experiment_id, name="scored")
    run = client.create_run(experiment_id)
    client.log_metric(run.info.run_id, "acc", 0.9, step=1, model_id=model.model_id)
    fetched = client.get_logged_model(model.model_id)
    assert [(m.key, m.value, m.step, m.run_id) for m in fetched.metrics] == [("acc", 0.9, 1, run.info.run_id)]
    ranked = client.search_logged_models(experiment_ids=[experiment_id], filter_string="metrics.acc > 0.5")
    assert [m.model_id for m in ranked] == [model.model_id]


def test_log_model_metadata_path(client: mlflow.MlflowClient, experiment_id: str) -> None:
    """mlflow.<flavor>.log_model creates then finalizes its logged model (artifacts through presigned S3)."""
    from sklearn import linear_model

    mlflow.set_experiment(experiment_id=experiment_id)
    with mlflow.start_run() as run:
        info = mlflow.sklearn.log_model(linear_model.LinearRegression(), name="model")
    model = client.get_logged_model(info.model_id)
    assert model.status == LoggedModelStatus.READY
    assert model.source_run_id == run.info.run_id
