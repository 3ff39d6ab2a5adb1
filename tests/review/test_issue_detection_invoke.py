"""``POST /ajax-api/3.0/mlflow/issues/invoke`` (MLflow 3.18) end to end: refusals as MLflow's server answers them
(compared with it where the pinned MLflow's handler has the same checks), the run made up front with MLflow's tags,
MLflow's ``invoke_issue_detection`` job with MLflow's params (found by the jobs API), one detection at a time per
experiment, traces of another experiment refused; the job worker runs MLflow's own job function, which, with the mock
OpenAI-compatible provider (``tools/mock_llm.py``) answering MLflow's discovery prompts, produces issues."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import mlflow
import pytest
import requests

from tests.conftest import unique
from tests.mlflow_reference import reference_server
from tools.mock_llm import MockLLM

pytestmark = pytest.mark.e2e

INVOKE = "/ajax-api/3.0/mlflow/issues/invoke"


def call(url: str, body: Any, headers: dict[str, str] | None = None) -> tuple[int, Any]:
    if headers is None:
        response = requests.post(f"{url}{INVOKE}", json=body, timeout=60)
    else:
        response = requests.post(f"{url}{INVOKE}", data=body, headers=headers, timeout=60)
    return response.status_code, response.json()


def reference(body: Any, headers: dict[str, str] | None = None) -> tuple[int, Any]:
    return call(reference_server().url, body, headers)


BASE = {"experiment_id": "0", "trace_ids": ["tr-1"], "categories": ["quality"], "provider": "openai"}


@pytest.mark.parametrize(
    "body",
    [
        {},
        {**BASE, "experiment_id": 5},
        {**BASE, "trace_ids": "tr-1"},
        {**BASE, "trace_ids": [1]},
        {key: value for key, value in BASE.items() if key != "categories"},
        {key: value for key, value in BASE.items() if key != "provider"},
        {**BASE, "categories": "quality"},
        {**BASE, "trace_ids": []},
        {**BASE, "provider": "nope", "model": "m"},
        {**BASE, "model": "gpt-4o", "endpoint_name": 3},
        {**BASE, "model": "gpt-4o"},  # no OPENAI_API_KEY on either server
    ],
)
def test_refusals_answer_as_mlflow(server: str, body: dict[str, Any]) -> None:
    assert call(server, body) == reference(body)


def test_refusals_of_this_server(server: str) -> None:
    # MLflow answers a missing model with a 500 (an exception without error code): refused input is a 400 here.
    assert call(server, BASE) == (
        400,
        {
            "error_code": "INVALID_PARAMETER_VALUE",
            "message": "Either 'endpoint_name' or both 'provider' and 'model' must be provided",
            "sqlstate": "KAM00",
            "error_class": "INVALID_PARAMETER_VALUE",
        },
    )
    status, answer = call(server, {**BASE, "model": "gpt-4o", "secret_id": "s-1"})
    assert status == 400 and "'secret_id'" in answer["message"]
    status, answer = call(server, "{}", headers={"Content-Type": "text/plain"})
    assert (status, answer) == reference("{}", headers={"Content-Type": "text/plain"})


def _trace(server: str, experiment_id: str) -> str:
    mlflow.set_tracking_uri(server)
    mlflow.set_experiment(experiment_id=experiment_id)

    @mlflow.trace
    def answer(question: str) -> str:
        return "42"

    answer("why?")
    trace_id = mlflow.get_last_active_trace_id()
    assert trace_id is not None
    return trace_id


def test_invoke_submits_mlflows_job(server: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MLFLOW_ENABLE_ASYNC_TRACE_LOGGING", "false")
    client = mlflow.MlflowClient(server)
    experiment_id = client.create_experiment(unique("detect"))
    other = client.create_experiment(unique("detect-other"))
    trace_id, foreign = _trace(server, experiment_id), _trace(server, other)
    body = {
        "experiment_id": experiment_id,
        "trace_ids": [trace_id, trace_id, "tr-missing"],
        "categories": ["quality", "safety"],
        "provider": "openai",
        "endpoint_name": "no-such-endpoint",
        "instructions": "look closely",
    }

    status, refused = call(server, {**body, "trace_ids": [trace_id, foreign]})
    assert (status, refused) == (
        403,
        {
            "error_code": "PERMISSION_DENIED",
            "message": "Not all requested traces could be accessed.",
            "sqlstate": "KAM00",
            "error_class": "PERMISSION_DENIED",
        },
    )

    status, answer = call(server, body)
    assert status == 200, answer
    assert set(answer) == {"job_id", "run_id"}
    run = client.get_run(answer["run_id"])
    assert run.info.experiment_id == experiment_id and run.info.status == "RUNNING" and run.info.end_time is not None
    assert {key: value for key, value in run.data.tags.items() if not key.startswith("mlflow.") or key.startswith("mlflow.runType")} == {
        "mlflow.runType": "issue_detection",
        "categories": "quality,safety",
        "model": "gateway:/no-such-endpoint",
        "total_traces": "2",
        "endpoint_name": "no-such-endpoint",
    }
    assert run.data.tags["mlflow.issueDetection.jobId"] == answer["job_id"]

    found = requests.post(f"{server}/ajax-api/3.0/jobs/search", json={"job_name": "invoke_issue_detection"}, timeout=60).json()["jobs"]
    job = next(j for j in found if j["job_id"] == answer["job_id"])
    assert job["params"] == {
        "experiment_id": experiment_id,
        "trace_ids": [trace_id, "tr-missing"],
        "categories": ["quality", "safety"],
        "run_id": answer["run_id"],
        "model": "gateway:/no-such-endpoint",
        "instructions": "look closely",
    }

    # MLflow's job function runs in the worker: it judges the trace through the endpoint named, which does not exist.
    deadline = time.monotonic() + 45
    while (final := requests.get(f"{server}/ajax-api/3.0/jobs/{answer['job_id']}", timeout=60).json())["status"] in ("PENDING", "RUNNING"):
        assert time.monotonic() < deadline, final
        time.sleep(0.3)
    assert final["status"] == "FAILED", final
    assert "GatewayEndpoint not found (name='no-such-endpoint')" in final["error_message"]


def test_one_detection_at_a_time(server: str) -> None:
    """MLflow's ``in_flight_detection_run``: an issue-detection run of the experiment still RUNNING (and younger
    than the job timeout) refuses another; a finished one does not."""
    client = mlflow.MlflowClient(server)
    experiment_id = client.create_experiment(unique("detect-busy"))
    running = client.create_run(experiment_id, tags={"mlflow.runType": "issue_detection"})
    body = {"experiment_id": experiment_id, "trace_ids": ["tr-1"], "categories": ["q"], "provider": "openai", "endpoint_name": "e"}
    assert call(server, body) == (
        400,
        {
            "error_code": "RESOURCE_ALREADY_EXISTS",
            "message": f"Issue detection is already running for this experiment (run {running.info.run_id}). "
            "Wait for it to finish, or cancel it, before starting another.",
            "sqlstate": "KAM00",
            "error_class": "RESOURCE_ALREADY_EXISTS",
        },
    )
    client.set_terminated(running.info.run_id, "FINISHED")
    status, answer = call(server, body)
    assert status == 200, answer


# MLflow's discovery prompts (mlflow/genai/discovery/constants.py), each with the answer the pipeline parses: the
# triage judge fails both traces, their failure labels cluster into one issue, whose summary is a high-severity
# correctness issue; each affected trace gets an annotation.
ISSUE_NAME = "Answers ignore the question"
DISCOVERY_SCRIPT = [
    ("You are annotating a trace that was identified", "The user asked why and got a bare number."),
    (
        "You are an expert at analyzing AI application failures",
        json.dumps(
            {
                "name": f"Issue: {ISSUE_NAME}",
                "description": "The assistant answers with a number whatever the question.",
                "root_cause": "The application returns a constant.",
                "example_indices": [0, 1],
                "severity": "high",
                "categories": ["correctness"],
                "category_rationale": "correctness: the answer does not address the question.",
            }
        ),
    ),
    ("failure labels from an AI agent", json.dumps({"groups": [{"name": "bare numbers", "indices": [0, 1]}]})),
    ("You extract short failure symptoms", "- Question answered with a bare number"),
    (
        "You are evaluating whether an AI application produced a correct response",
        json.dumps({"result": {"passed": "false", "categories": "correctness"}, "rationale": "A bare number answers nothing."}),
    ),
]


@pytest.fixture
def mock_llm(monkeypatch: pytest.MonkeyPatch) -> Iterator[MockLLM]:
    """The provider of every discovery call: the in-process runtime's job worker (litellm) and the invoke route
    (which checks the provider's key) read these variables."""
    llm = MockLLM().start()
    for marker, answer in DISCOVERY_SCRIPT:
        llm.script(marker, answer)
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    monkeypatch.setenv("OPENAI_API_BASE", f"{llm.url}/v1")
    yield llm
    llm.stop()


def test_detection_produces_issues(server: str, mock_llm: MockLLM, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MLFLOW_ENABLE_ASYNC_TRACE_LOGGING", "false")
    client = mlflow.MlflowClient(server)
    experiment_id = client.create_experiment(unique("detect-run"))
    trace_ids = [_trace(server, experiment_id), _trace(server, experiment_id)]
    body = {
        "experiment_id": experiment_id,
        "trace_ids": trace_ids,
        "categories": ["correctness"],
        "provider": "openai",
        "model": "gpt-4o-mini",
    }
    status, answer = call(server, body)
    assert status == 200, answer
    run_id = answer["run_id"]

    deadline = time.monotonic() + 90
    while (final := requests.get(f"{server}/ajax-api/3.0/jobs/{answer['job_id']}", timeout=60).json())["status"] in ("PENDING", "RUNNING"):
        assert time.monotonic() < deadline, final
        time.sleep(0.3)
    assert final["status"] == "SUCCEEDED", final
    # The stages MLflow's pipeline reports (update_status_details), the last one kept, as on MLflow's job store.
    assert final["status_details"] == {"stage": "Generating summary..."}
    result = final["result"]
    assert (result["issues"], result["total_traces_analyzed"]) == (1, 2), final
    assert result["summary"].startswith(f"Analyzed **2** traces. Found **1** issues:\n\n### 1. {ISSUE_NAME} (severity: high)")

    # The issue, in the experiment, from the detection's run.
    response = requests.post(f"{server}/api/3.0/mlflow/issues/search", json={"experiment_id": experiment_id}, timeout=60)
    assert response.status_code == 200, response.text
    issues = response.json()["issues"]
    assert [
        (i["name"], i["description"], i["severity"], i["status"], i["categories"], i["root_causes"], i["source_run_id"]) for i in issues
    ] == [
        (
            ISSUE_NAME,
            "The assistant answers with a number whatever the question.",
            "high",
            "pending",
            ["correctness"],
            ["The application returns a constant."],
            run_id,
        )
    ]
    issue_id = issues[0]["issue_id"]

    # Each trace: the triage judge's failing feedback, and a reference to the issue with its annotation.
    source = ("LLM_JUDGE", "openai:/gpt-4o-mini")
    for trace_id in trace_ids:
        assessments = client.get_trace(trace_id).info.assessments
        assert sorted((type(a).__name__, a.name, a.rationale, (a.source.source_type, a.source.source_id)) for a in assessments) == [
            ("Feedback", "_issue_discovery_judge", "A bare number answers nothing.", source),
            ("IssueReference", issue_id, "The user asked why and got a bare number.", source),
        ]
        feedback = next(a for a in assessments if a.name == "_issue_discovery_judge")
        assert feedback.value == {"passed": "false", "categories": "correctness"}

    # The run MLflow made up front: finished by the job, with the cost tag and MLflow's discovery artifacts.
    run = client.get_run(run_id)
    assert run.info.status == "FINISHED"
    assert float(run.data.tags["total_cost_usd"]) >= 0
    assert {f.path for f in client.list_artifacts(run_id)} >= {"summary.md", "issues.json", "metadata.json"}
    logged = json.loads(Path(client.download_artifacts(run_id, "issues.json")).read_text())
    assert [(i["issue_id"], i["name"], i["severity"]) for i in logged] == [(issue_id, ISSUE_NAME, "high")]
