"""Creating a model version with ``model_id`` lists it in the logged model's ``mlflow.modelVersions`` tag.

MLflow's server does this in ``_create_model_version`` (``set_model_versions_tags``); the client reads the
tag (the UI links a logged model to its registered versions). Compared with MLflow's own server (its Flask
app on sqlite) for the same calls; concurrent registrations of one model must not drop each other.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import mlflow
import pytest
import requests
from mlflow import MlflowClient

from tests.conftest import unique
from tests.mlflow_reference import reference_server

pytestmark = pytest.mark.e2e

TAG = "mlflow.modelVersions"


def _reference_links(names: list[str], repeat_first: bool) -> str:
    """The tag MLflow's server writes for the same sequence of registrations."""
    ref = reference_server()
    _, experiment = ref.call("POST", "/api/2.0/mlflow/experiments/create", {"name": unique("links")})
    status, body = ref.call("POST", "/api/2.0/mlflow/logged-models", {"experiment_id": experiment["experiment_id"]})
    assert status == 200, body
    model_id = body["model"]["info"]["model_id"]
    for name in names:
        ref.call("POST", "/api/2.0/mlflow/registered-models/create", {"name": name})
    for name in names + names[:1] * repeat_first:
        status, body = ref.call(
            "POST", "/api/2.0/mlflow/model-versions/create", {"name": name, "source": f"models:/{model_id}", "model_id": model_id}
        )
        assert status == 200, body
    _, body = ref.call("GET", f"/api/2.0/mlflow/logged-models/{model_id}")
    return {tag["key"]: tag["value"] for tag in body["model"]["info"]["tags"]}[TAG]


def test_versions_listed_on_the_logged_model_as_mlflow_does(client: MlflowClient) -> None:
    experiment_id = client.create_experiment(unique("links"))
    model = client.create_logged_model(experiment_id, tags={"keep": "me"})
    names = ["a-model", "b-model ü#"]
    for name in names:
        client.create_registered_model(name + model.model_id)
    created = [client.create_model_version(name + model.model_id, f"models:/{model.model_id}", model_id=model.model_id) for name in names]
    again = client.create_model_version(names[0] + model.model_id, f"models:/{model.model_id}", model_id=model.model_id)
    assert [mv.version for mv in created] == ["1", "1"] and again.version == "2"

    tags = client.get_logged_model(model.model_id).tags
    assert tags["keep"] == "me"
    expected = [
        {"name": names[0] + model.model_id, "version": 1},
        {"name": names[1] + model.model_id, "version": 1},
        {"name": names[0] + model.model_id, "version": 2},
    ]
    assert json.loads(tags[TAG]) == expected
    # Byte for byte what MLflow's server writes (json.dumps defaults, int versions), up to the names.
    reference = _reference_links(["a-model", "b-model ü#"], repeat_first=True)
    assert tags[TAG].replace(model.model_id, "") == reference


def test_register_model_links_and_runs_sources_do_not(client: MlflowClient) -> None:
    experiment_id = client.create_experiment(unique("links"))
    model = client.create_logged_model(experiment_id)
    name = unique("registered")
    mlflow.set_tracking_uri(client.tracking_uri)
    mlflow.set_registry_uri(client.tracking_uri)
    mlflow.register_model(f"models:/{model.model_id}", name)
    # The server lists the version (int), then the 3.17 client's register_model appends it again itself
    # (the version as the string it received): against MLflow's own server the tag ends the same way.
    linked = [{"name": name, "version": 1}, {"name": name, "version": "1"}]
    assert json.loads(client.get_logged_model(model.model_id).tags[TAG]) == linked

    run = client.create_run(experiment_id)
    client.create_model_version(name, f"runs:/{run.info.run_id}/model", run_id=run.info.run_id)
    assert json.loads(client.get_logged_model(model.model_id).tags[TAG]) == linked


def test_concurrent_registrations_are_all_listed(client: MlflowClient) -> None:
    experiment_id = client.create_experiment(unique("links"))
    model = client.create_logged_model(experiment_id)
    names = [unique(f"conc{i}") for i in range(6)]
    for name in names:
        client.create_registered_model(name)

    def register(name: str) -> Any:
        return MlflowClient(client.tracking_uri).create_model_version(name, f"models:/{model.model_id}", model_id=model.model_id)

    with ThreadPoolExecutor(6) as pool:
        list(pool.map(register, names + names))
    listed = json.loads(client.get_logged_model(model.model_id).tags[TAG])
    assert sorted((entry["name"], entry["version"]) for entry in listed) == sorted((name, v) for name in names for v in (1, 2))


def test_unknown_model_id_writes_nothing(server: str, client: MlflowClient) -> None:
    name = unique("nolink")
    client.create_registered_model(name)
    missing = "m-" + "0" * 32
    body = {"name": name, "source": f"models:/{missing}", "model_id": missing}
    ours = requests.post(f"{server}/api/2.0/mlflow/model-versions/create", json=body, timeout=30)
    ref = reference_server()
    ref.call("POST", "/api/2.0/mlflow/registered-models/create", {"name": name})
    status, theirs = ref.call("POST", "/api/2.0/mlflow/model-versions/create", body)
    # MLflow answers this with 500 INTERNAL_ERROR ("Unable to fetch model from model URI source ..."); bad input
    # answers 400 here (issue 22: never a 500 on bad input), with MLflow's message.
    assert (status, theirs["error_code"]) == (500, "INTERNAL_ERROR")
    assert (ours.status_code, ours.json()["error_code"]) == (400, "INVALID_PARAMETER_VALUE")
    assert ours.json()["message"] == theirs["message"]
    assert client.search_model_versions(f"name = '{name}'") == []
