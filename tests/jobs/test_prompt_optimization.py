"""MLflow 3.18's prompt-optimization job routes end to end: create makes the run (named and with the params MLflow
logs) and submits MLflow's ``optimize_prompts`` job with MLflow's params, which the jobs API finds; get/search
answer MLflow's PromptOptimizationJob; the job worker runs MLflow's own job function, which fails with MLflow's
error for scorers without a dataset (a job run to completion: test_prompt_optimization_run.py); cancel kills the run;
delete removes the finished job and deletes its run. Validation errors are compared with MLflow's own server."""

from __future__ import annotations

import json
import time
from typing import Any

import mlflow
import pytest
import requests

from tests.conftest import unique
from tests.mlflow_reference import reference_server

pytestmark = pytest.mark.e2e

PO = "/api/3.0/mlflow/prompt-optimization/jobs"
# mlflow.genai.optimize.optimize_prompts refuses scorers without training data (after the job loaded the prompt and
# built the optimizer: litellm and gepa are importable).
NO_TRAIN_DATA = (
    "MlflowException: `scorers` is provided but `train_data` is None or empty or None. "
    "`train_data` must be provided if `scorers` is provided."
)


def call(url: str, method: str, path: str, body: Any = None, query: dict[str, str] | None = None) -> tuple[int, Any]:
    response = requests.request(method, f"{url}{path}", json=body, params=query, timeout=60)
    return response.status_code, response.json()


def reference(method: str, path: str, body: Any = None) -> tuple[int, Any]:
    """MLflow's answer, error classification fields (``sqlstate``, ``error_class``) included."""
    return reference_server().call(method, path, body)


def _prompt(server: str) -> str:
    client = mlflow.MlflowClient(server, registry_uri=server)
    name = unique("po-prompt")
    version = client.register_prompt(name, "Answer {{question}}", model_config={"provider": "openai", "model_name": "gpt-4o-mini"})
    return f"prompts:/{name}/{version.version}"


def _body(experiment_id: str, prompt_uri: str, **config: Any) -> dict[str, Any]:
    return {
        "experiment_id": experiment_id,
        "source_prompt_uri": prompt_uri,
        "config": {"optimizer_type": "OPTIMIZER_TYPE_GEPA", "scorers": ["Correctness"], **config},
        "tags": [{"key": "team", "value": "a"}],
    }


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"source_prompt_uri": "prompts:/p/1"},
        {"source_prompt_uri": "prompts:/p/1", "config": {}},
        {"source_prompt_uri": "prompts:/p/1", "config": {"optimizer_type": "OPTIMIZER_TYPE_GEPA"}},
        {"source_prompt_uri": "prompts:/p/1", "experiment_id": "  ", "config": {"optimizer_type": 2}},
        {"source_prompt_uri": "prompts:/p/1", "experiment_id": 7, "config": {"optimizer_type": 1}},
        {"source_prompt_uri": 3, "experiment_id": "0", "config": {"optimizer_type": 1}},
        {"source_prompt_uri": "prompts:/p/1", "experiment_id": "0", "config": {"optimizer_type": 1, "optimizer_config_json": "{x"}},
    ],
)
def test_create_refuses_as_mlflow(server: str, body: dict[str, Any]) -> None:
    before = call(server, "POST", "/ajax-api/3.0/jobs/search", {"job_name": "optimize_prompts"})[1]["jobs"]
    assert call(server, "POST", PO, body) == reference("POST", PO, body)
    after = call(server, "POST", "/ajax-api/3.0/jobs/search", {"job_name": "optimize_prompts"})[1]["jobs"]
    assert len(after) == len(before)  # nothing submitted


def test_search_and_missing_jobs_answer_as_mlflow(server: str) -> None:
    for method, path, body in [
        ("GET", f"{PO}/search", None),
        ("POST", f"{PO}/search", {}),
        ("POST", f"{PO}/search", {"experiment_id": 5}),
    ]:
        assert call(server, method, path, body) == reference(method, path, body)
    status, answer = call(server, "GET", f"{PO}/no-such-job")
    assert status == 404 and answer == {
        "error_code": "RESOURCE_DOES_NOT_EXIST",
        "message": "Job with ID no-such-job not found",
        "sqlstate": "KAM00",
        "error_class": "RESOURCE_NOT_FOUND",
    }
    for method, path in [("POST", f"{PO}/no-such-job/cancel"), ("DELETE", f"{PO}/no-such-job")]:
        assert call(server, method, path) == (status, answer)
    assert call(server, "GET", f"{PO}/search", query={"experiment_id": "does-not-exist"}) == (200, {})


def wait_final(server: str, job_id: str, seconds: float = 45) -> dict[str, Any]:
    deadline = time.monotonic() + seconds
    while True:
        status, answer = call(server, "GET", f"{PO}/{job_id}")
        assert status == 200, answer
        if answer["job"]["state"]["status"] not in ("JOB_STATUS_PENDING", "JOB_STATUS_IN_PROGRESS"):
            return answer["job"]
        assert time.monotonic() < deadline, answer
        time.sleep(0.3)


def test_job_lifecycle(server: str) -> None:
    client = mlflow.MlflowClient(server)
    experiment_id = client.create_experiment(unique("po"))
    prompt_uri = _prompt(server)
    body = _body(
        experiment_id, prompt_uri, dataset_id="", optimizer_config_json='{"reflection_model":"openai:/gpt-4o","max_metric_calls":4}'
    )
    status, created = call(server, "POST", PO, body)
    assert status == 200, created
    job = created["job"]
    job_id, run_id = job["job_id"], job["run_id"]
    assert job == {
        "job_id": job_id,
        "run_id": run_id,
        "state": {"status": "JOB_STATUS_PENDING"},
        "experiment_id": experiment_id,
        "source_prompt_uri": prompt_uri,
        "config": {
            "optimizer_type": "OPTIMIZER_TYPE_GEPA",
            "dataset_id": "",
            "scorers": ["Correctness"],
            "optimizer_config_json": '{"reflection_model":"openai:/gpt-4o","max_metric_calls":4}',
        },
        "creation_timestamp_ms": job["creation_timestamp_ms"],
        "tags": [{"key": "team", "value": "a"}],
    }

    # The run MLflow creates up front, with the optimization config as params.
    run = client.get_run(run_id)
    name, version = prompt_uri.removeprefix("prompts:/").split("/")
    assert run.info.experiment_id == experiment_id
    assert run.info.run_name.startswith(f"optimize_prompt_OptimizerType.GEPA_{name}_{version}_")
    assert run.data.params == {
        "source_prompt_uri": prompt_uri,
        "optimizer_type": "gepa",
        "dataset_id": "",
        "scorer_names": '["Correctness"]',
        "optimizer_config_json": '{"reflection_model":"openai:/gpt-4o","max_metric_calls":4}',
    }

    # MLflow's job name and params: the jobs API finds it as MLflow's ``_search_prompt_optimization_jobs`` does.
    _, found = call(
        server, "POST", "/ajax-api/3.0/jobs/search", {"job_name": "optimize_prompts", "params": {"experiment_id": experiment_id}}
    )
    assert [j["job_id"] for j in found["jobs"]] == [job_id]
    assert found["jobs"][0]["params"] == {
        "run_id": run_id,
        "experiment_id": experiment_id,
        "prompt_uri": prompt_uri,
        "dataset_id": "",
        "optimizer_type": "gepa",
        "optimizer_config": {"reflection_model": "openai:/gpt-4o", "max_metric_calls": 4},
        "scorer_names": ["Correctness"],
    }

    # MLflow's job function runs in the worker; without a dataset it fails with MLflow's error.
    done = wait_final(server, job_id)
    assert done["state"]["status"] == "JOB_STATUS_FAILED"
    assert done["state"]["error_message"] == NO_TRAIN_DATA
    # The answer rebuilt from the job: the config from its params (optimizer_config re-serialized, as MLflow does).
    assert done["config"] == {
        "optimizer_type": "OPTIMIZER_TYPE_GEPA",
        "scorers": ["Correctness"],
        "optimizer_config_json": json.dumps({"reflection_model": "openai:/gpt-4o", "max_metric_calls": 4}),
    }
    assert done["run_id"] == run_id and done["source_prompt_uri"] == prompt_uri and "tags" not in done

    # Scores and progress come from the run's metrics.
    client.log_metric(run_id, "initial_eval_score", 0.25)
    client.log_metric(run_id, "final_eval_score.Correctness", 0.75)
    client.log_metric(run_id, "total_metric_calls", 3)
    job = call(server, "GET", f"{PO}/{job_id}")[1]["job"]
    assert job["initial_eval_scores"] == {"aggregate": 0.25}
    assert job["final_eval_scores"] == {"Correctness": 0.75}
    assert job["state"]["metadata"] == {"progress": "0.75"}

    status, listed = call(server, "GET", f"{PO}/search", query={"experiment_id": experiment_id})
    assert status == 200 and [j["job_id"] for j in listed["jobs"]] == [job_id]
    assert "initial_eval_scores" not in listed["jobs"][0]  # search answers the job alone
    assert call(server, "POST", f"{PO}/search", {"experiment_id": experiment_id})[1] == listed

    # A finished job cannot be canceled (the job store's text).
    status, refused = call(server, "POST", f"{PO}/{job_id}/cancel")
    assert status == 400 and refused["error_code"] == "INVALID_PARAMETER_VALUE"
    assert refused["message"] == f"The Job {job_id} is already finalized with status: JobStatus.FAILED, it can't be updated."

    assert call(server, "DELETE", f"{PO}/{job_id}") == (200, {})
    assert call(server, "GET", f"{PO}/{job_id}")[0] == 404
    assert client.get_run(run_id).info.lifecycle_stage == "deleted"
    assert call(server, "GET", f"{PO}/search", query={"experiment_id": experiment_id}) == (200, {})


def test_create_in_missing_experiment_submits_nothing(server: str) -> None:
    status, answer = call(server, "POST", PO, _body("987654321", "prompts:/p/1"))
    assert status == 404 and answer["error_code"] == "RESOURCE_DOES_NOT_EXIST"
    assert call(server, "GET", f"{PO}/search", query={"experiment_id": "987654321"}) == (200, {})


def test_dataset_is_linked_to_the_run(server: str) -> None:
    from mlflow.genai.datasets import create_dataset

    mlflow.set_tracking_uri(server)
    client = mlflow.MlflowClient(server)
    experiment_id = client.create_experiment(unique("po-data"))
    dataset = create_dataset(name=unique("po-ds"), experiment_id=[experiment_id])
    status, created = call(server, "POST", PO, _body(experiment_id, "prompts:/p/1", dataset_id=dataset.dataset_id))
    assert status == 200, created
    assert created["job"]["config"]["dataset_id"] == dataset.dataset_id
    inputs = client.get_run(created["job"]["run_id"]).inputs.dataset_inputs
    assert [(i.dataset.name, i.dataset.digest, i.dataset.source_type) for i in inputs] == [
        (dataset.name, dataset.digest, "mlflow_evaluation_dataset")
    ]
    assert json.loads(inputs[0].dataset.source) == {"dataset_id": dataset.dataset_id}
    assert [(t.key, t.value) for t in inputs[0].tags] == [("mlflow.data.context", "optimization")]

    # A missing dataset: MLflow's 404, after the run is made (as MLflow's handler orders it); no job.
    body = _body(experiment_id, "prompts:/p/1", dataset_id="d-" + "0" * 32)
    status, answer = call(server, "POST", PO, body)
    assert (status, answer) == reference("POST", PO, {**body, "experiment_id": "0"})
    _, listed = call(server, "GET", f"{PO}/search", query={"experiment_id": experiment_id})
    assert [j["job_id"] for j in listed["jobs"]] == [created["job"]["job_id"]]
