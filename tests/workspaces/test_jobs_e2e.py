"""Jobs in workspaces (issue 27), over HTTP against the local runtime (MLflow's client has no jobs API; MLflow's
reference server runs no jobs here, so answers are checked against its texts).

A job belongs to the workspace it was submitted in: get, cancel and search (FastAPI routes and their Flask twins)
see it there only; the worker runs it in that workspace, so what it writes through the client lands there (an
experiment; a judge's assessments on the workspace's traces); and a workspace holding only jobs is not deleted
(RESTRICT counts MLflow's ``jobs`` table)."""

from __future__ import annotations

import time
from typing import Any

import mlflow
import pytest
from mlflow import MlflowClient

from tests.conftest import unique
from tests.jobs.test_invoke import judge_json, stored
from tests.workspaces.support import raw
from tools.mock_llm import MockLLM

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("workspaces")]

JOBS = "/ajax-api/3.0/jobs"
FLASK_JOBS = "/ajax-api/3.0/mlflow/jobs"
FINAL = {"SUCCEEDED", "FAILED", "TIMEOUT", "CANCELED"}


def _submit(url: str, workspace: str, job_name: str, params: dict[str, Any]) -> str:
    status, job = raw(url, "POST", f"{JOBS}/", workspace, json={"job_name": job_name, "params": params})
    assert status == 200, job
    return str(job["job_id"])


def _finished(url: str, workspace: str, job_id: str) -> dict[str, Any]:
    deadline = time.monotonic() + 90
    while True:
        status, job = raw(url, "GET", f"{JOBS}/{job_id}", workspace)
        assert status == 200, job
        if job["status"] in FINAL:
            return job
        assert time.monotonic() < deadline, job
        time.sleep(0.2)


def _searched(url: str, workspace: str, job_name: str) -> list[str]:
    status, found = raw(url, "POST", f"{JOBS}/search", workspace, json={"job_name": job_name})
    assert status == 200, found
    return [job["job_id"] for job in found["jobs"]]


def test_jobs_stay_in_their_workspace(ours: str) -> None:
    suffix = unique("j")[-6:]
    team_a, team_b, only_jobs = f"jobs-a-{suffix}", f"jobs-b-{suffix}", f"jobs-c-{suffix}"
    mlflow.set_tracking_uri(ours)
    mlflow.set_workspace(None)
    for name in (team_a, team_b, only_jobs):
        mlflow.create_workspace(name)

    echoed = _submit(ours, team_a, "test_echo", {"suffix": suffix})
    # The worker calls the API as the job's client would: the experiment it creates is the job's workspace's.
    created = _submit(ours, team_a, "test_as_creator", {"experiment_name": f"made-by-job-{suffix}"})
    assert _finished(ours, team_a, echoed)["result"] == {"echo": {"suffix": suffix}}
    done = _finished(ours, team_a, created)
    assert done["status"] == "SUCCEEDED", done
    client = MlflowClient(ours)
    mlflow.set_workspace(team_a)
    assert client.get_experiment_by_name(f"made-by-job-{suffix}").experiment_id == done["result"]["experiment_id"]
    mlflow.set_workspace(None)
    assert client.get_experiment_by_name(f"made-by-job-{suffix}") is None

    for other in (team_b, "default"):
        assert raw(ours, "GET", f"{JOBS}/{echoed}", other) == (404, {"detail": f"Job with ID {echoed} not found"})
        assert raw(ours, "PATCH", f"{JOBS}/cancel/{echoed}", other)[0] == 404
        status, body = raw(ours, "GET", f"{FLASK_JOBS}/{echoed}", other)
        assert (status, body["error_code"]) == (404, "RESOURCE_DOES_NOT_EXIST")
        assert raw(ours, "PATCH", f"{FLASK_JOBS}/cancel/{echoed}", other)[0] == 404
        assert echoed not in _searched(ours, other, "test_echo")
    assert _searched(ours, team_a, "test_echo") == [echoed]

    # A running job is canceled from its own workspace only.
    steps = _submit(ours, team_a, "test_steps", {"count": 40, "seconds": 0.25})
    assert raw(ours, "PATCH", f"{JOBS}/cancel/{steps}", team_b)[0] == 404
    status, canceled = raw(ours, "PATCH", f"{JOBS}/cancel/{steps}", team_a)
    assert (status, canceled["status"]) == (200, "CANCELED")

    # RESTRICT: a workspace holding only a job (any status) is not deleted; one holding nothing is.
    lone = _submit(ours, only_jobs, "test_echo", {})
    _finished(ours, only_jobs, lone)
    status, body = raw(ours, "DELETE", f"/api/3.0/mlflow/workspaces/{only_jobs}")
    assert (status, body["error_code"]) == (400, "INVALID_STATE"), body
    assert body["message"] == (
        f"Cannot delete workspace '{only_jobs}': table 'jobs' still contains 1 resource(s). "
        "Remove or reassign them before deleting the workspace."
    )
    assert raw(ours, "DELETE", f"/api/3.0/mlflow/workspaces/{team_b}")[0] == 204


def test_a_judge_job_assesses_the_traces_of_its_workspace(ours: str, mock_llm: MockLLM) -> None:
    """``scorer/invoke`` in a workspace: MLflow's job function, run by the worker, reads the workspace's traces
    and logs its assessments on them (in ``default`` it would find no such traces)."""
    team = f"judge-{unique('k')[-6:]}"
    mlflow.set_tracking_uri(ours)
    mlflow.set_workspace(None)
    mlflow.create_workspace(team)
    mlflow.set_workspace(team)
    client = MlflowClient(ours)
    experiment_id = client.create_experiment("judged")
    trace_id = client.start_trace("answer", experiment_id=experiment_id).trace_id
    client.end_trace(trace_id, outputs="JUDGE: an answer")  # the marker makes the mock answer as a judge
    stored([trace_id])  # exported in the background: on the server before a user could pick it
    body = {"experiment_id": experiment_id, "serialized_scorer": judge_json("helpful"), "trace_ids": [trace_id], "log_assessments": True}
    status, answer = raw(ours, "POST", "/ajax-api/3.0/mlflow/scorer/invoke", team, json=body)
    assert status == 200, answer
    (job,) = answer["jobs"]
    done = _finished(ours, team, job["job_id"])
    assert done["status"] == "SUCCEEDED", done
    assert done["result"][trace_id]["failures"] == []
    logged = [(a.name, a.value) for a in client.get_trace(trace_id).info.assessments]
    assert logged == [("helpful", "yes")]
    assert raw(ours, "GET", f"{JOBS}/{job['job_id']}", "default")[0] == 404
