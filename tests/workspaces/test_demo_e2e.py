"""The demo (``demo/generate``, ``demo/delete``) in workspaces (issue 27), over HTTP against the local runtime and
compared with MLflow's server run with workspaces enabled (which runs the generators in the request; ours in a job
of the request's workspace): the demo experiment and its data belong to the request's workspace, another
workspace does not see them, and another workspace's demo/delete leaves them.

Only the prompts generator runs (``features``), which keeps the test short; the others write through the same
client in the same workspace."""

from __future__ import annotations

import time
from typing import Any

import mlflow
import pytest
from mlflow import MlflowClient

from tests.conftest import unique
from tests.workspaces.support import assert_same, raw

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("workspaces")]

GENERATE = "/ajax-api/3.0/mlflow/demo/generate"
DELETE = "/ajax-api/3.0/mlflow/demo/delete"
DEMO = "MLflow Demo"


def _job_done(url: str, workspace: str, job_name: str) -> None:
    """Ours runs the demo in a job of the workspace: wait for its latest one to succeed."""
    deadline = time.monotonic() + 120
    while True:
        status, found = raw(url, "POST", "/ajax-api/3.0/jobs/search", workspace, json={"job_name": job_name})
        assert status == 200, found
        jobs = found["jobs"]
        if jobs and jobs[-1]["status"] not in ("PENDING", "RUNNING"):
            assert jobs[-1]["status"] == "SUCCEEDED", jobs[-1]
            return
        assert time.monotonic() < deadline, jobs
        time.sleep(0.5)


def _demo(client: MlflowClient, workspace: str) -> Any:
    """The workspace's demo: its experiment's state and version tags, and the demo prompts it holds."""
    mlflow.set_workspace(workspace)
    experiment = client.get_experiment_by_name(DEMO)
    prompts = sorted(p.name for p in mlflow.genai.search_prompts(filter_string="name LIKE 'mlflow-demo%'"))
    if experiment is None:
        return None, prompts
    tags = sorted((k, v) for k, v in experiment.tags.items() if k.startswith("mlflow.demo.version."))
    return experiment.lifecycle_stage, tags, prompts


def scenario(url: str, suffix: str, jobs: bool) -> list[Any]:
    """``jobs``: the server answers before the demo is done (ours); MLflow's is done when it answers."""
    mlflow.set_tracking_uri(url)
    mlflow.set_registry_uri(url)
    client = MlflowClient(url, registry_uri=url)
    team_a, team_b = f"demo-a-{suffix}", f"demo-b-{suffix}"
    transcript: list[Any] = []
    record = transcript.append
    mlflow.set_workspace(None)
    for name in (team_a, team_b):
        mlflow.create_workspace(name)

    status, started = raw(url, "POST", GENERATE, team_a, json={"features": ["prompts"]})
    record((status, {k: v for k, v in started.items() if k not in ("experiment_id", "navigation_url")}))
    if jobs:
        _job_done(url, team_a, "demo_generate")
    record(_demo(client, team_a))
    record(_demo(client, team_b))  # nothing of A's demo here
    mlflow.set_workspace(team_a)
    experiment_a = client.get_experiment_by_name(DEMO).experiment_id
    record(started["experiment_id"] == experiment_a)
    status, again = raw(url, "POST", GENERATE, team_a, json={"features": ["prompts"]})
    record((status, again["status"], again["experiment_id"] == experiment_a))

    # B has no demo: its delete deletes nothing, and A's demo stays.
    record(raw(url, "POST", DELETE, team_b))
    record(_demo(client, team_a))

    status, deleted = raw(url, "POST", DELETE, team_a)
    record((status, deleted))
    if jobs:
        _job_done(url, team_a, "demo_delete")
    record(_demo(client, team_a))
    return transcript


def test_demo_in_its_workspace_as_mlflow_server(ours: str, reference: str) -> None:
    suffix = unique("d")[-6:]
    assert_same(scenario(ours, suffix, jobs=True), scenario(reference, suffix, jobs=False))
