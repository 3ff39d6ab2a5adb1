"""Version sources: runs, run artifact paths, logged models, copies; models:/ URI resolution; prompts."""

from __future__ import annotations

import uuid

import pytest
import requests
from mlflow import MlflowClient
from mlflow.exceptions import MlflowException, RestException

from tests.conftest import unique

pytestmark = pytest.mark.e2e


def _run(client: MlflowClient) -> tuple[str, str]:
    experiment_id = client.create_experiment(unique("reg-exp"))
    run = client.create_run(experiment_id)
    return run.info.run_id, run.info.artifact_uri


def _seed_logged_model(experiment_id: str, run_id: str | None, artifact_location: str) -> str:
    """A logged model as the logged-models feature stores it (item + locator, through the schema)."""
    from serverless_mlflow.storage import table
    from serverless_mlflow.storage.schema import ENTITY

    model_id = f"m-{uuid.uuid4().hex}"
    attributes = {
        "model_id": model_id,
        "experiment_id": experiment_id,
        "name": "model",
        "artifact_location": artifact_location,
        "creation_timestamp": 1,
        "last_updated_timestamp": 1,
        "status": "READY",
        "source_run_id": run_id,
        "lifecycle_stage": "active",
    }
    table.put(ENTITY["logged_model"].item(attributes, **attributes))
    table.put(ENTITY["logged_model_locator"].item({"experiment_id": experiment_id}, model_id=model_id))
    return model_id


def test_run_sources_and_validation(client: MlflowClient) -> None:
    name = unique("src")
    client.create_registered_model(name)
    run_id, artifact_uri = _run(client)

    mv = client.create_model_version(name, f"runs:/{run_id}/model", run_id=run_id)
    assert mv.run_id == run_id and mv.source == f"runs:/{run_id}/model"
    assert client.get_model_version_download_uri(name, mv.version) == f"{artifact_uri}/model"

    inside = client.create_model_version(name, f"{artifact_uri}/model", run_id=run_id)
    assert client.get_model_version_download_uri(name, inside.version) == f"{artifact_uri}/model"

    bad = [
        ("mlflow-artifacts:/elsewhere/model", run_id),
        (f"runs:/{run_id}/model", None),
        (f"runs:/{run_id}/model", "0123456789abcdef"),
        ("/local/path/model", run_id),
        ("s3://bucket/a/../../etc", None),
        (f"{artifact_uri}/model", "deadbeefdeadbeef"),
    ]
    for source, rid in bad:
        with pytest.raises(RestException) as excinfo:
            client.create_model_version(name, source, run_id=rid)
        assert excinfo.value.error_code == "INVALID_PARAMETER_VALUE", source
        assert "Invalid model version source" in str(excinfo.value)
    # Nothing was written by the rejected requests.
    assert [m.version for m in client.search_model_versions(f"name = '{name}'", order_by=["version_number ASC"])] == ["1", "2"]


def test_logged_model_source(server: str, client: MlflowClient) -> None:
    name = unique("lm")
    client.create_registered_model(name)
    run_id, _ = _run(client)
    experiment_id = client.get_run(run_id).info.experiment_id
    location = f"mlflow-artifacts:/{experiment_id}/models/x/artifacts"
    model_id = _seed_logged_model(experiment_id, run_id, location)

    mv = client.create_model_version(name, f"models:/{model_id}", model_id=model_id)
    assert mv.run_id == run_id and mv.status == "READY"
    assert client.get_model_version_download_uri(name, mv.version) == location
    # An artifact path inside the logged model's location is accepted with model_id.
    inside = client.create_model_version(name, f"{location}/sub", model_id=model_id)
    assert inside.run_id == run_id
    assert [m.version for m in client.search_model_versions(f"name = '{name}'")] == ["2", "1"]

    # MLflow accepts the source check (ids match) and then fails to resolve it: 500 "Unable to fetch model".
    response = requests.post(
        f"{server}/api/2.0/mlflow/model-versions/create",
        json={"name": name, "source": "models:/m-doesnotexist", "model_id": "m-doesnotexist"},
        timeout=60,
    )
    assert response.status_code == 400  # stock: 500; bad input answers 400 here (issue 22), with MLflow's message
    assert response.json()["message"].startswith("Unable to fetch model from model URI source artifact location 'models:/m-doesnotexist'")
    with pytest.raises(RestException) as excinfo:
        client.create_model_version(name, f"models:/{model_id}")  # a logged model source needs model_id
    assert excinfo.value.error_code == "INVALID_PARAMETER_VALUE"


def test_copy_model_version_and_uri_resolution(client: MlflowClient) -> None:
    from mlflow.store.artifact.models_artifact_repo import ModelsArtifactRepository

    src, dst = unique("copy-src"), unique("copy-dst")
    client.create_registered_model(src)
    run_id, artifact_uri = _run(client)
    client.create_model_version(src, f"runs:/{run_id}/m1", run_id=run_id, tags={"k": "v"}, description="one")
    client.create_model_version(src, f"runs:/{run_id}/m2", run_id=run_id)
    client.set_registered_model_alias(src, "champion", "1")

    copied = client.copy_model_version(f"models:/{src}@champion", dst)
    assert (copied.name, copied.version, copied.source) == (dst, "1", f"models:/{src}/1")
    assert copied.run_id == run_id and copied.tags == {"k": "v"} and copied.description == "one"
    assert client.get_model_version_download_uri(dst, "1") == f"{artifact_uri}/m1"
    again = client.copy_model_version(f"models:/{src}/2", dst)
    assert again.version == "2"
    assert client.get_model_version_download_uri(dst, "2") == f"{artifact_uri}/m2"

    assert ModelsArtifactRepository.get_underlying_uri(f"models:/{src}@champion") == f"{artifact_uri}/m1"
    assert ModelsArtifactRepository.get_underlying_uri(f"models:/{src}/2") == f"{artifact_uri}/m2"
    assert ModelsArtifactRepository.get_underlying_uri(f"models:/{src}/latest") == f"{artifact_uri}/m2"
    client.transition_model_version_stage(src, "1", "Production")
    assert ModelsArtifactRepository.get_underlying_uri(f"models:/{src}/Production") == f"{artifact_uri}/m1"

    with pytest.raises(MlflowException):
        client.copy_model_version(f"models:/{src}/9", dst)


def test_prompts_register_and_load(server: str) -> None:
    import mlflow

    mlflow.set_tracking_uri(server)
    name = unique("prompt").replace("-", "_")
    first = mlflow.genai.register_prompt(name=name, template="Hello {{name}}!", commit_message="first")
    second = mlflow.genai.register_prompt(name=name, template="Hi {{name}}, {{greeting}}")
    assert (first.version, second.version) == (1, 2)
    loaded = mlflow.genai.load_prompt(f"prompts:/{name}/1")
    assert loaded.template == "Hello {{name}}!" and loaded.format(name="Ada") == "Hello Ada!"
    assert mlflow.genai.load_prompt(f"prompts:/{name}/2").template == "Hi {{name}}, {{greeting}}"
    mlflow.genai.set_prompt_alias(name, alias="prod", version=1)
    assert mlflow.genai.load_prompt(f"prompts:/{name}@prod").version == 1

    client = MlflowClient(server)
    # Prompts are hidden from model searches unless asked for, as in MLflow.
    assert client.search_registered_models(f"name = '{name}'") == []
    assert [m.name for m in client.search_registered_models(f"name = '{name}' and tags.`mlflow.prompt.is_prompt` = 'true'")] == [name]
    assert client.search_model_versions(f"name = '{name}'") == []
    # A model cannot take a prompt's name.
    with pytest.raises(MlflowException) as excinfo:
        client.create_registered_model(name)
    assert "already taken by a prompt" in str(excinfo.value)
