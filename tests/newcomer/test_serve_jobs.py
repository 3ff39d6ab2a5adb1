"""Issue #42, difference 1: a judge and issue detection run under ``make serve`` as set up on a fresh clone.

``make serve`` installs only requirements-serve.txt (not make test's full mlflow and its dependencies), and its
job worker runs in-process: MLflow's job functions then need what they import (pandas for a judge, the SQL stores'
sqlalchemy for issue detection). The clone's own ``.venv`` serves; the judge and the discovery prompts are answered
by the mock OpenAI-compatible provider (``tools/mock_llm.py``), whose variables the server inherits. The clone and its
``make serve`` are test_readme's (one set-up for both: tests/newcomer/conftest.py).
"""

from __future__ import annotations

import time
from typing import Any

import mlflow
import pytest
import requests

from tests.jobs.test_invoke import judge_json
from tests.newcomer.conftest import Newcomer

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.xdist_group("newcomer")]

FINAL = ("SUCCEEDED", "FAILED", "TIMEOUT", "CANCELED")


@pytest.fixture
def served(newcomer: Newcomer) -> str:
    """The fresh clone's ``make serve`` (tests/newcomer/conftest.py), its job worker calling the mock provider."""
    return newcomer.url


def _post(url: str, path: str, body: dict[str, Any]) -> dict[str, Any]:
    response = requests.post(f"{url}{path}", json=body, timeout=60)
    assert response.status_code == 200, response.text
    return response.json()


def _finished(url: str, job_id: str) -> dict[str, Any]:
    deadline = time.monotonic() + 300  # a loaded 2-core machine; about 40 s when quiet
    while (job := requests.get(f"{url}/ajax-api/3.0/jobs/{job_id}", timeout=60).json())["status"] not in FINAL:
        assert time.monotonic() < deadline, job
        time.sleep(0.5)
    return job


def _traces(url: str, experiment_id: str, output: str) -> list[str]:
    mlflow.set_tracking_uri(url)
    mlflow.set_experiment(experiment_id=experiment_id)

    @mlflow.trace
    def answer(question: str) -> str:
        return output

    ids = []
    for question in ("why?", "how?"):
        answer(question)
        ids.append(mlflow.get_last_active_trace_id())
    return ids


def test_a_judge_and_issue_detection_run_under_make_serve(served: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MLFLOW_ENABLE_ASYNC_TRACE_LOGGING", "false")
    client = mlflow.MlflowClient(served)
    experiment_id = client.create_experiment("serve-jobs")
    trace_ids = _traces(served, experiment_id, "JUDGE: 42")  # the marker makes the mock answer as a judge

    # Run judge (the UI's scorer/invoke): MLflow's invoke_scorer job, its assessments logged on the traces.
    answer = _post(
        served,
        "/ajax-api/3.0/mlflow/scorer/invoke",
        {"experiment_id": experiment_id, "serialized_scorer": judge_json("helpful"), "trace_ids": trace_ids, "log_assessments": True},
    )
    (job,) = answer["jobs"]
    done = _finished(served, job["job_id"])
    assert done["status"] == "SUCCEEDED", done
    for trace_id in trace_ids:
        assert [(a.name, a.value) for a in client.get_trace(trace_id).info.assessments] == [("helpful", "yes")]

    # Detect issues: MLflow's invoke_issue_detection job finds the scripted issue.
    body = {
        "experiment_id": experiment_id,
        "trace_ids": trace_ids,
        "categories": ["correctness"],
        "provider": "openai",
        "model": "gpt-4o-mini",
    }
    detection = _post(served, "/ajax-api/3.0/mlflow/issues/invoke", body)
    done = _finished(served, detection["job_id"])
    assert done["status"] == "SUCCEEDED", done
    assert done["result"]["issues"] == 1 and done["result"]["total_traces_analyzed"] == 2
