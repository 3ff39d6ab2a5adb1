"""Registered models, model versions, aliases, tags and prompts in workspaces (issue 27), with the real client
against the local runtime, compared call by call with MLflow's server run with workspaces enabled.

The same model name in two workspaces is two models; a name, version, alias or prompt of one workspace does not
exist for a request of another (by name, by alias, as a ``models:/`` source, in searches); webhooks belong to
their workspace the same way; a workspace holding models is not deleted (RESTRICT)."""

from __future__ import annotations

import time
from typing import Any

import mlflow
import pytest
from mlflow import MlflowClient
from mlflow.exceptions import MlflowException

from tests.conftest import unique
from tests.webhooks.conftest import Receiver
from tests.workspaces.support import assert_same, outcome, raw

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("workspaces")]


def _model(client: MlflowClient, name: str) -> Any:
    model = client.get_registered_model(name)
    return (model.description, sorted(model.tags.items()), sorted(model.aliases.items()), [v.version for v in model.latest_versions])


def _version(client: MlflowClient, name: str, version: str, run_id: str) -> Any:
    found = client.get_model_version(name, version)
    return (found.version, found.source, found.run_id == run_id, found.description, sorted(found.tags.items()), sorted(found.aliases))


def scenario(url: str, suffix: str) -> list[Any]:
    mlflow.set_tracking_uri(url)
    mlflow.set_registry_uri(url)
    client = MlflowClient(url, registry_uri=url)
    team_a, team_b = f"reg-a-{suffix}", f"reg-b-{suffix}"
    shared, only_a, prompt = f"shared-{suffix}", f"only-a-{suffix}", f"prompt-{suffix}"
    transcript: list[Any] = []
    record = transcript.append
    mlflow.set_workspace(None)
    for name in (team_a, team_b):
        mlflow.create_workspace(name)

    mlflow.set_workspace(team_a)
    run_a = client.create_run(client.create_experiment("registry-a")).info.run_id
    logged_a = client.create_logged_model(client.get_experiment_by_name("registry-a").experiment_id, name="lm").model_id
    client.create_registered_model(shared, tags={"team": "a"}, description="team a")
    client.create_model_version(shared, "s3://bucket/a1", run_id=run_a, tags={"k": "v"}, description="first")
    client.create_model_version(shared, "s3://bucket/a2", run_id=run_a)
    client.set_registered_model_alias(shared, "champion", "1")
    client.create_registered_model(only_a)
    client.create_model_version(only_a, "s3://bucket/only", run_id=run_a)
    mlflow.genai.register_prompt(prompt, template="Hello {{name}} from A")
    hook = client.create_webhook(f"hook-{suffix}", "https://8.8.8.8/hook", ["prompt_alias.deleted"]).webhook_id
    record(outcome(lambda: client.create_registered_model(shared)))  # unique per workspace
    record(_model(client, shared))
    record(_version(client, shared, "1", run_a))

    mlflow.set_workspace(team_b)
    record(outcome(lambda: client.create_registered_model(shared, description="team b").name))  # same name: another model
    record(_model(client, shared))
    record(outcome(lambda: _version(client, shared, "1", run_a)))
    record(outcome(lambda: client.get_model_version_by_alias(shared, "champion").version))
    record(outcome(lambda: client.get_latest_versions(shared)))
    for call in (
        lambda: client.get_registered_model(only_a),
        lambda: client.update_registered_model(only_a, description="stolen"),
        lambda: client.rename_registered_model(only_a, f"taken-{suffix}"),
        lambda: client.set_registered_model_tag(only_a, "k", "v"),
        lambda: client.set_registered_model_alias(only_a, "x", "1"),
        lambda: client.get_model_version(only_a, "1"),
        lambda: client.set_model_version_tag(only_a, "1", "k", "v"),
        lambda: client.transition_model_version_stage(only_a, "1", "Production"),
        lambda: client.get_model_version_download_uri(only_a, "1"),
        lambda: client.delete_model_version(only_a, "1"),
        lambda: client.delete_registered_model(only_a),
    ):
        record(outcome(lambda call=call: call() and None))
    record(sorted(m.name for m in client.search_registered_models()))
    record(sorted(m.name for m in client.search_registered_models(f"name LIKE '%-{suffix}'")))
    record([v.version for v in client.search_model_versions(f"name = '{shared}'")])
    record([v.version for v in client.search_model_versions(f"name = '{only_a}'")])
    record([(v.name, v.version) for v in client.search_model_versions(f"run_id = '{run_a}'")])
    record([p.name for p in mlflow.genai.search_prompts(f"name LIKE '%-{suffix}'")])
    record(outcome(lambda: mlflow.genai.load_prompt(f"prompts:/{prompt}/1").template))
    # Sources that name another workspace's model version, run or logged model.
    record(outcome(lambda: client.create_model_version(shared, f"models:/{only_a}/1").version))
    record(outcome(lambda: client.copy_model_version(f"models:/{only_a}/1", shared).version))
    # MLflow's store raises this one without an error code (a 500); this server answers bad input with a 400
    # (version_create.storage_location_for), in any workspace.
    refused = outcome(lambda: client.create_model_version(shared, f"models:/{logged_a}", model_id=logged_a).version)
    record(refused in ("INTERNAL_ERROR", "INVALID_PARAMETER_VALUE"))
    record(outcome(lambda: client.create_model_version(shared, f"runs:/{run_a}/model", run_id=run_a).run_id == run_a))
    status, body = raw(url, "GET", "/model-versions/get-artifact", team_b, params={"name": only_a, "version": "1", "path": "MLmodel"})
    record((status, body.get("error_code") if isinstance(body, dict) else None))
    record([w.name for w in client.list_webhooks()])  # webhooks belong to their workspace too
    for call in (lambda: client.get_webhook(hook), lambda: client.update_webhook(hook, name="x"), lambda: client.delete_webhook(hook)):
        record(outcome(lambda call=call: call() and None))
    client.delete_registered_model(shared)  # B's model, not A's

    mlflow.set_workspace(None)  # default holds none of them
    record(sorted(m.name for m in client.search_registered_models(f"name LIKE '%-{suffix}'")))
    record(outcome(lambda: client.get_registered_model(shared).name))
    record(hook in [w.webhook_id for w in client.list_webhooks()])

    mlflow.set_workspace(team_a)
    record(_model(client, shared))
    record(client.get_model_version_by_alias(shared, "champion").version)
    record(sorted(m.name for m in client.search_registered_models(f"name LIKE '%-{suffix}'")))
    record([(v.name, v.version) for v in client.search_model_versions(f"run_id = '{run_a}'")])
    record(mlflow.genai.load_prompt(f"prompts:/{prompt}/1").template)
    record([p.name for p in mlflow.genai.search_prompts(f"name LIKE '%-{suffix}'")])
    record([w.name for w in client.list_webhooks()])
    client.rename_registered_model(only_a, f"renamed-{suffix}")
    record(_version(client, f"renamed-{suffix}", "1", run_a))

    mlflow.set_workspace(None)
    # RESTRICT: team A still holds its models, prompt and experiment (registered_models is checked first).
    status, body = raw(url, "DELETE", f"/api/3.0/mlflow/workspaces/{team_a}")
    record((status in (400, 500), body))
    # Team B's experiment-free workspace goes once its last model is deleted.
    record(raw(url, "DELETE", f"/api/3.0/mlflow/workspaces/{team_b}")[0])
    # A webhook alone keeps its workspace too.
    hooked = f"reg-hook-{suffix}"
    mlflow.create_workspace(hooked)
    mlflow.set_workspace(hooked)
    client.create_webhook(f"hook-{suffix}", "https://8.8.8.8/hook", ["prompt_alias.deleted"])
    mlflow.set_workspace(None)
    status, body = raw(url, "DELETE", f"/api/3.0/mlflow/workspaces/{hooked}")
    record((status in (400, 500), body))
    return transcript


def test_registry_in_two_workspaces_as_mlflow_server(ours: str, reference: str) -> None:
    suffix = unique("r")[-6:]
    assert_same(scenario(ours, suffix), scenario(reference, suffix))


def test_events_reach_the_webhooks_of_their_workspace(ours: str, receiver: Receiver) -> None:
    """A registry change is delivered to the webhooks of the workspace it was made in (MLflow's envelope then names
    that workspace), never to another's; whether a model is a prompt is read in the event's workspace."""
    suffix = unique("h")[-6:]
    team_a, team_b = f"hooks-a-{suffix}", f"hooks-b-{suffix}"
    mlflow.set_tracking_uri(ours)
    mlflow.set_registry_uri(ours)
    client = MlflowClient(ours, registry_uri=ours)
    events = ["registered_model.created", "prompt_alias.created", "model_version_alias.created"]
    for workspace in (team_a, team_b, None):
        mlflow.set_workspace(None)
        if workspace is not None:
            mlflow.create_workspace(workspace)
        mlflow.set_workspace(workspace)
        client.create_webhook(f"hook-{suffix}", f"{receiver.url}/{workspace or 'default'}", events)
    name = f"same-{suffix}"
    mlflow.set_workspace(team_b)
    client.create_registered_model(name)  # a plain model in B ...
    client.create_model_version(name, "s3://bucket/b")
    mlflow.set_workspace(team_a)
    mlflow.genai.register_prompt(name, template="Hi {{x}}")  # ... and a prompt of the same name in A
    mlflow.genai.set_prompt_alias(name, "prod", 1)
    mlflow.set_workspace(team_b)
    client.set_registered_model_alias(name, "prod", "1")

    def delivered(seen: list[Any]) -> list[tuple[str, str, str, str | None]]:
        bodies = [(r.path, r.json) for r in seen]
        return sorted((path, body["entity"], body["data"]["name"], body.get("workspace")) for path, body in bodies)

    expected = [
        (f"/{team_a}", "prompt_alias", name, team_a),
        (f"/{team_b}", "model_version_alias", name, team_b),
        (f"/{team_b}", "registered_model", name, team_b),
    ]
    seen = receiver.wait_for(lambda got: len(got) >= len(expected))
    time.sleep(1)  # anything sent to the wrong webhook would have arrived with the rest
    assert delivered(receiver.requests) == expected, seen


def test_log_register_and_load_in_a_workspace(ours: str) -> None:
    """The whole flow in a workspace: a logged model's artifacts land under the workspace's root, the same name
    registered in another workspace loads that workspace's model, and one workspace's ``models:/`` URIs do not
    resolve in another."""
    import pandas as pd

    class AddN(mlflow.pyfunc.PythonModel):
        def __init__(self, n: int) -> None:
            self.n = n

        def predict(self, context: Any, model_input: Any, params: Any = None) -> Any:
            return model_input + self.n

    suffix = unique("l")[-6:]
    team_a, team_b, name = f"load-a-{suffix}", f"load-b-{suffix}", f"loaded-{suffix}"
    mlflow.set_tracking_uri(ours)
    mlflow.set_registry_uri(ours)
    client = MlflowClient(ours, registry_uri=ours)
    frame = pd.DataFrame({"x": [1, 2]})
    for workspace, n in ((team_a, 1), (team_b, 10)):
        mlflow.set_workspace(None)
        mlflow.create_workspace(workspace)
        mlflow.set_workspace(workspace)
        mlflow.set_experiment(f"load-{suffix}")
        with mlflow.start_run():
            logged = mlflow.pyfunc.log_model(name="model", python_model=AddN(n), registered_model_name=name, pip_requirements=[])
        assert str(logged.registered_model_version) == "1"
        assert f"workspaces/{workspace}/" in client.get_model_version_download_uri(name, "1")
        client.set_registered_model_alias(name, "champion", "1")
    only_b = mlflow.register_model(f"models:/{logged.model_id}", f"only-b-{suffix}")  # B's logged model, in B
    assert only_b.version == "1"

    mlflow.set_workspace(team_a)
    assert mlflow.pyfunc.load_model(f"models:/{name}@champion").predict(frame)["x"].tolist() == [2, 3]
    with pytest.raises(MlflowException) as refused:
        mlflow.pyfunc.load_model(f"models:/only-b-{suffix}/1")
    assert refused.value.error_code == "RESOURCE_DOES_NOT_EXIST"
    mlflow.set_workspace(team_b)
    assert mlflow.pyfunc.load_model(f"models:/{name}/1").predict(frame)["x"].tolist() == [11, 12]
