"""MLflow's GenAI jobs here and on ``mlflow server`` itself (its job runner executing the same job functions), on
the same calls against the same scripted mock provider: a MetaPrompt prompt-optimization job and an issue detection.
The answers (the prompt-optimization job, the jobs API's job, the issues found) are compared field by field, ids and
times aside. Long: MLflow's runner takes about a minute per job on the test box."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import mlflow
import pytest
import requests

from tests.conftest import unique
from tests.mlflow_reference import Reference, jobs_reference_server
from tests.review.test_issue_detection_invoke import DISCOVERY_SCRIPT
from tools.mock_llm import MockLLM

pytestmark = [pytest.mark.e2e, pytest.mark.long]

PO = "/api/3.0/mlflow/prompt-optimization/jobs"
IMPROVED = "You are a careful assistant. Answer the question precisely: {{question}}"
FINAL = ("SUCCEEDED", "FAILED", "TIMEOUT", "CANCELED")


@pytest.fixture(scope="module")
def mock() -> Iterator[MockLLM]:
    llm = MockLLM().start()
    for marker, answer in DISCOVERY_SCRIPT:
        llm.script(marker, answer)
    yield llm
    llm.stop()


@pytest.fixture(scope="module")
def reference(mock: MockLLM) -> Iterator[Reference]:
    provider = {"OPENAI_API_KEY": "test-key", "OPENAI_API_BASE": f"{mock.url}/v1", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    with jobs_reference_server(provider) as server:
        yield server


@pytest.fixture
def provider(mock: MockLLM, monkeypatch: pytest.MonkeyPatch) -> None:
    """This server's job worker runs in the tests' process: the same provider variables."""
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    monkeypatch.setenv("OPENAI_API_BASE", f"{mock.url}/v1")
    monkeypatch.setenv("MLFLOW_ENABLE_ASYNC_TRACE_LOGGING", "false")


def _job(url: str, job_id: str, seconds: float = 240) -> dict[str, Any]:
    deadline = time.monotonic() + seconds
    while (job := requests.get(f"{url}/ajax-api/3.0/jobs/{job_id}", timeout=60).json())["status"] not in FINAL:
        assert time.monotonic() < deadline, job
        time.sleep(0.5)
    return job


def _masked(value: Any, secrets: dict[str, str]) -> Any:
    """``value`` with each id of ``secrets`` (value -> placeholder) replaced, times and costs blanked."""
    if isinstance(value, dict):
        return {
            key: ("<time>" if key.endswith(("time", "timestamp", "timestamp_ms")) and item is not None else _masked(item, secrets))
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [_masked(item, secrets) for item in value]
    if isinstance(value, str):
        if value in secrets:
            return secrets[value]
        for secret, placeholder in secrets.items():
            if len(secret) >= 8:  # ids inside text (a URI, a summary); never a short experiment id
                value = value.replace(secret, placeholder)
    return value


def _optimize(url: str, names: dict[str, str]) -> tuple[dict[str, Any], dict[str, Any], str]:
    from mlflow.genai.datasets import create_dataset

    mlflow.set_tracking_uri(url)
    mlflow.set_registry_uri(url)
    client = mlflow.MlflowClient(url, registry_uri=url)
    experiment_id = client.create_experiment(names["experiment"])
    client.register_prompt(names["prompt"], "Answer {{question}}", model_config={"provider": "openai", "model_name": "gpt-4o-mini"})
    dataset = create_dataset(name=names["dataset"], experiment_id=[experiment_id])
    dataset.merge_records(
        [
            {"inputs": {"question": "What is MLflow?"}, "expectations": {"expected_response": "An ML platform."}},
            {"inputs": {"question": "What is DynamoDB?"}, "expectations": {"expected_response": "A database."}},
        ]
    )
    body = {
        "experiment_id": experiment_id,
        "source_prompt_uri": f"prompts:/{names['prompt']}/1",
        "config": {
            "optimizer_type": "OPTIMIZER_TYPE_METAPROMPT",
            "dataset_id": dataset.dataset_id,
            "scorers": ["Correctness"],
            "optimizer_config_json": json.dumps({"reflection_model": "openai:/gpt-4o"}),
        },
    }
    created = requests.post(f"{url}{PO}", json=body, timeout=60).json()["job"]
    job = _job(url, created["job_id"])
    answer = requests.get(f"{url}{PO}/{created['job_id']}", timeout=60).json()["job"]
    secrets = {created["job_id"]: "<job>", created["run_id"]: "<run>", dataset.dataset_id: "<dataset>", experiment_id: "<experiment>"}
    template = client.get_prompt_version(names["prompt"], 2).template
    return _masked(answer, secrets), _masked(job, secrets), template


def test_prompt_optimization_job_as_mlflow_server(server: str, reference: Reference, mock: MockLLM, provider: None) -> None:
    names = {"experiment": unique("po-ref"), "prompt": unique("po-ref-prompt"), "dataset": unique("po-ref-ds")}
    mock.script("You are an expert prompt engineer", json.dumps({names["prompt"]: IMPROVED}))
    ours = _optimize(server, names)
    theirs = _optimize(reference.url, names)
    assert ours == theirs
    answer, job, template = ours
    assert answer["state"] == {"status": "JOB_STATUS_COMPLETED"} and job["status"] == "SUCCEEDED"
    assert template == IMPROVED


def _detect(url: str, experiment_name: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    mlflow.set_tracking_uri(url)
    client = mlflow.MlflowClient(url)
    experiment_id = client.create_experiment(experiment_name)
    mlflow.set_experiment(experiment_id=experiment_id)

    @mlflow.trace
    def answer(question: str) -> str:
        return "42"

    trace_ids = []
    for question in ("why?", "how?"):
        answer(question)
        trace_ids.append(mlflow.get_last_active_trace_id())
    body = {
        "experiment_id": experiment_id,
        "trace_ids": trace_ids,
        "categories": ["correctness"],
        "provider": "openai",
        "model": "gpt-4o-mini",
    }
    submitted = requests.post(f"{url}/ajax-api/3.0/mlflow/issues/invoke", json=body, timeout=60).json()
    job = _job(url, submitted["job_id"])
    issues = requests.post(f"{url}/api/3.0/mlflow/issues/search", json={"experiment_id": experiment_id}, timeout=60).json()["issues"]
    secrets = {submitted["job_id"]: "<job>", submitted["run_id"]: "<run>", experiment_id: "<experiment>"}
    secrets |= {issue["issue_id"]: f"<issue {i}>" for i, issue in enumerate(issues)}
    secrets |= {trace_id: f"<trace {i}>" for i, trace_id in enumerate(trace_ids)}
    job["result"]["total_cost_usd"] = job["result"]["total_cost_usd"] is not None  # prompts carry ids and times
    # MLflow 3.18's handler submits ``instructions`` (None when not given); the pinned 3.17 server's does not.
    assert job["params"].pop("instructions", None) is None
    return _masked(job, secrets), _masked(issues, secrets)


def test_issue_detection_as_mlflow_server(server: str, reference: Reference, provider: None) -> None:
    name = unique("detect-ref")
    ours = _detect(server, name)
    theirs = _detect(reference.url, name)
    assert ours == theirs
    job, issues = ours
    assert job["status"] == "SUCCEEDED" and job["result"]["issues"] == 1
    assert job["status_details"] == {"stage": "Generating summary..."}  # the last stage MLflow's pipeline reported
    assert [issue["name"] for issue in issues] == ["Answers ignore the question"]
