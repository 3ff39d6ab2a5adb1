"""``POST /ajax-api/2.0/mlflow/runs/create-promptlab-run`` (the prompt engineering UI's run), compared with MLflow's
own server (``tests/mlflow_reference``: sqlite, ``mlflow-artifacts:/`` served from a local directory)."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import mlflow
import pytest
import requests
import yaml
from mlflow.models import Model

from tests.conftest import unique
from tests.mlflow_reference import reference_server

pytestmark = pytest.mark.e2e

PROMPTLAB = "/ajax-api/2.0/mlflow/runs/create-promptlab-run"
FILES = [
    "eval_results_table.json",
    "model/MLmodel",
    "model/conda.yaml",
    "model/input_example.json",
    "model/parameters.yaml",
    "model/python_env.yaml",
    "model/requirements.txt",
    "model/serving_input_example.json",
]
# What differs between two servers by nature: ids, times, the server's own Python.
_VOLATILE_MODEL = ("model_uuid", "run_id", "utc_time_created")


def _request(experiment_id: str) -> dict[str, Any]:
    return {
        "experiment_id": experiment_id,
        "run_name": "prompt-run",
        "prompt_template": 'Answer {{ question }} as "{{ style }}":\n',
        "prompt_parameters": [{"key": "question", "value": "why?"}, {"key": "style", "value": "é: a poem"}],
        "model_route": "chat-route",
        "model_parameters": [{"key": "temperature", "value": 0.5}, {"key": "max_tokens", "value": 100}],
        "model_input": 'Answer why? as "é: a poem":\n',
        "model_output": "Because.",
        "model_output_parameters": [{"key": "latency", "value": 10}],
        "mlflow_version": "3.17.2",
        "user_id": "prompt-user",
        "start_time": 1_700_000_000_000,
    }


def _walk(client: Any, run_id: str, path: str | None = None) -> list[str]:
    out = []
    for entry in client.list_artifacts(run_id, path):
        out += _walk(client, run_id, entry.path) if entry.is_dir else [entry.path]
    return out


def _created(base: str) -> dict[str, Any]:
    client = mlflow.MlflowClient(base)
    experiment_id = client.create_experiment(unique("promptlab"))
    answer = requests.post(f"{base}{PROMPTLAB}", json=_request(experiment_id), timeout=60)
    assert answer.status_code == 200, answer.text
    run = answer.json()["run"]
    run_id = run["info"]["run_id"]
    fetched = client.get_run(run_id)
    tags = dict(fetched.data.tags)
    history = json.loads(tags.pop("mlflow.log-model.history"))
    with tempfile.TemporaryDirectory() as directory:
        local = Path(client.download_artifacts(run_id, "", directory))
        texts = {name: (local / name).read_text(encoding="utf-8") for name in FILES}
        signature = Model.load(str(local / "model" / "MLmodel")).signature
    mlmodel = yaml.safe_load(texts["model/MLmodel"])
    assert mlmodel["run_id"] == run_id and history[0]["model_uuid"] == mlmodel["model_uuid"]
    mlmodel["flavors"]["python_function"].pop("python_version")
    # Experiment ids are each server's own counter: compared with the id this side made, not across sides.
    assert run["info"]["experiment_id"] == experiment_id
    return {
        "info": {k: run["info"][k] for k in ("run_name", "user_id", "status", "start_time", "lifecycle_stage")},
        "same_as_get_run": run["info"]["status"] == fetched.info.status and run["info"]["end_time"] == fetched.info.end_time,
        "params": fetched.data.params,
        "tags": tags,
        "history": [{k: v for k, v in entry.items() if k not in _VOLATILE_MODEL} for entry in history],
        "files": _walk(client, run_id),
        "mlmodel": {k: v for k, v in mlmodel.items() if k not in _VOLATILE_MODEL},
        "signature": signature.to_dict(),
        "parameters": yaml.safe_load(texts["model/parameters.yaml"]),
        "same_texts": {name: texts[name] for name in ("eval_results_table.json", "model/input_example.json", "model/requirements.txt")},
        "serving_example": json.loads(texts["model/serving_input_example.json"]),
        "conda_pip": yaml.safe_load(texts["model/conda.yaml"])["dependencies"][-1],
    }


def test_the_promptlab_run_is_mlflows(server: str) -> None:
    ours, theirs = _created(server), _created(reference_server().url)
    for key in theirs:
        assert ours[key] == theirs[key], key
    assert ours["info"]["status"] == "FINISHED" and ours["same_as_get_run"]
    assert ours["params"] == {
        "temperature": "0.5",
        "max_tokens": "100",
        "model_route": "chat-route",
        "prompt_template": _request("")["prompt_template"],
    }
    assert json.loads(ours["same_texts"]["eval_results_table.json"])["columns"] == ["question", "style", "prompt", "output", "latency"]


@pytest.mark.parametrize(
    "missing", ["experiment_id", "prompt_template", "prompt_parameters", "model_route", "model_input", "mlflow_version"]
)
def test_a_missing_field_answers_as_mlflow(server: str, missing: str) -> None:
    answers = []
    for base in (server, reference_server().url):
        body = _request(mlflow.MlflowClient(base).create_experiment(unique("promptlab-bad")))
        body.pop(missing)
        answer = requests.post(f"{base}{PROMPTLAB}", json=body, timeout=60)
        answers.append((answer.status_code, answer.json()))
    assert (
        answers[0]
        == answers[1]
        == (
            400,
            {
                "error_code": "INVALID_PARAMETER_VALUE",
                "message": f"CreatePromptlabRun request must specify {missing}.",
                "sqlstate": "KAM00",
                "error_class": "INVALID_PARAMETER_VALUE",
            },
        )
    )


def test_not_json_and_unknown_experiment_answer_as_mlflow(server: str) -> None:
    answers = []
    for base in (server, reference_server().url):
        got = []
        answer = requests.post(f"{base}{PROMPTLAB}", data="x", timeout=60)
        got.append((answer.status_code, answer.json()["error_code"], answer.json()["message"]))
        answer = requests.post(f"{base}{PROMPTLAB}", json=_request("987654321"), timeout=60)
        got.append((answer.status_code, answer.json()["error_code"]))
        answers.append(got)
    assert answers[0] == answers[1]
    assert answers[0][1] == (404, "RESOURCE_DOES_NOT_EXIST")
