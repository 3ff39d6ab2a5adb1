"""The UI's invoke routes (``scorer/invoke``, ``genai/evaluate/invoke``) and MLflow's Flask job twins
(``/ajax-api/3.0/mlflow/jobs/...``): a judge runs on two traces in the job worker, by MLflow's own job function
against this server, calling a mock OpenAI-compatible provider (``tools/mock_llm.py``); its assessments land on
the traces. Bad requests are answered as MLflow's server answers them (compared with its own app)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import mlflow
import pytest
import requests

from tests.conftest import unique
from tests.mlflow_reference import asgi_reference_server
from tools.mock_llm import MockLLM

pytestmark = pytest.mark.e2e

SCORER_INVOKE = "/ajax-api/3.0/mlflow/scorer/invoke"
EVALUATE_INVOKE = "/ajax-api/3.0/mlflow/genai/evaluate/invoke"
FLASK_JOBS = "/ajax-api/3.0/mlflow/jobs"
FINAL = {"SUCCEEDED", "FAILED", "TIMEOUT", "CANCELED"}


def call(url: str, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    response = requests.request(method, f"{url}{path}", json=body, timeout=60)
    return response.status_code, response.json()


def reference_call(url: str, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    """MLflow's answer, error classification fields (``sqlstate``, ``error_class``) included."""
    return call(url, method, path, body)


@pytest.fixture
def mock_llm(monkeypatch: pytest.MonkeyPatch) -> Iterator[MockLLM]:
    """The judge's provider: the in-process runtime's job worker reads these variables (MLflow's openai provider)."""
    llm = MockLLM().start()
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    monkeypatch.setenv("OPENAI_API_BASE", f"{llm.url}/v1")
    yield llm
    llm.stop()


def judge_json(name: str) -> str:
    from mlflow.genai.judges import make_judge

    judge = make_judge(name=name, instructions="JUDGE whether {{ outputs }} answers well.", model="openai:/gpt-4o-mini")
    return json.dumps(judge.model_dump())


def two_traces(experiment_id: str) -> list[str]:
    @mlflow.trace
    def answer(question: str) -> str:
        # The judge's user message carries the outputs: the marker makes the mock answer as a judge.
        return f"JUDGE: answer to {question}"

    ids = []
    for question in ("a", "b"):
        answer(question)
        ids.append(mlflow.get_last_active_trace_id())
    stored(ids)
    return ids


def stored(trace_ids: list[str]) -> None:
    """The client exports traces in the background: wait until the server has each one, as a user picking them
    in the UI would."""
    mlflow.flush_trace_async_logging()
    client = mlflow.MlflowClient()
    deadline = time.monotonic() + 30
    for trace_id in trace_ids:
        while True:
            try:
                if client.get_trace(trace_id) is not None:
                    break
            except mlflow.exceptions.MlflowException:
                pass
            assert time.monotonic() < deadline, trace_id
            time.sleep(0.2)


def wait_flask_job(url: str, job_id: str, seconds: float = 60) -> dict[str, Any]:
    deadline = time.monotonic() + seconds
    while True:
        status, job = call(url, "GET", f"{FLASK_JOBS}/{job_id}")
        assert status == 200, job
        if job["status"] in FINAL:
            return job
        assert time.monotonic() < deadline, job
        time.sleep(0.3)


def test_scorer_invoke_runs_a_judge_on_two_traces_and_logs_its_assessments(server: str, client: Any, mock_llm: MockLLM) -> None:
    experiment_id = client.create_experiment(unique("invoke"))
    mlflow.set_experiment(experiment_id=experiment_id)
    trace_ids = two_traces(experiment_id)
    serialized = judge_json("helpful")

    status, answer = call(
        server,
        "POST",
        SCORER_INVOKE,
        {"experiment_id": experiment_id, "serialized_scorer": serialized, "trace_ids": [*trace_ids, trace_ids[0]], "log_assessments": True},
    )
    assert status == 200, answer
    (job,) = answer["jobs"]  # one batch (MLFLOW_SERVER_SCORER_INVOKE_BATCH_SIZE), the repeated id scored once
    assert set(job) == {"job_id", "trace_ids"} and job["trace_ids"] == trace_ids

    done = wait_flask_job(server, job["job_id"])
    assert set(done) == {"status", "result", "error_message", "status_details", "status_message", "progress", "progress_updated_at"}
    assert done["status"] == "SUCCEEDED", done
    assert set(done["result"]) == set(trace_ids)
    for trace_id in trace_ids:
        result = done["result"][trace_id]
        assert result["failures"] == []
        (assessment,) = result["assessments"]
        assert assessment["assessment_name"] == "helpful" and assessment["feedback"]["value"] == "yes"
        logged = [a for a in client.get_trace(trace_id).info.assessments if a.name == "helpful"]
        assert len(logged) == 1 and logged[0].value == "yes" and logged[0].source.source_type == "LLM_JUDGE"
    assert any(path.endswith("/chat/completions") for path, _, _ in mock_llm.requests)

    # The job is MLflow's: its name and params, as MLflow's handler submits them (search jobs by name finds it).
    found = requests.post(f"{server}/ajax-api/3.0/jobs/search", json={"job_name": "invoke_scorer"}, timeout=60).json()["jobs"]
    (mine,) = [j for j in found if j["job_id"] == job["job_id"]]
    assert mine["params"] == {
        "experiment_id": experiment_id,
        "serialized_scorer": serialized,
        "scorer_version": None,
        "trace_ids": trace_ids,
        "log_assessments": True,
        "username": None,
    }


def test_scorer_invoke_of_a_registered_scorer_and_a_session_judge(server: str, client: Any) -> None:
    from mlflow.genai.judges import make_judge

    experiment_id = client.create_experiment(unique("invoke"))
    judge = make_judge(name="registered", instructions="JUDGE {{ outputs }}", model="openai:/gpt-4o-mini")
    judge.register(experiment_id=experiment_id)
    body = {"experiment_id": experiment_id, "serialized_scorer": judge_json("inline"), "trace_ids": ["tr-missing"]}
    status, answer = call(server, "POST", SCORER_INVOKE, {**body, "scorer_name": "registered", "scorer_version": 1})
    assert status == 200, answer
    (job,) = answer["jobs"]
    params = requests.get(f"{server}/ajax-api/3.0/jobs/{job['job_id']}", timeout=60).json()["params"]
    assert json.loads(params["serialized_scorer"])["name"] == "registered" and params["scorer_version"] == 1
    assert call(server, "POST", SCORER_INVOKE, {**body, "scorer_name": "registered", "scorer_version": 2}) == (
        404,
        {
            "error_code": "RESOURCE_DOES_NOT_EXIST",
            "message": f"Scorer with name 'registered' and version 2 not found for experiment {experiment_id}.",
            "sqlstate": "KAM00",
            "error_class": "RESOURCE_NOT_FOUND",
        },
    )
    assert call(server, "POST", SCORER_INVOKE, {**body, "scorer_name": "nope", "scorer_version": 1})[1]["message"] == (
        f"Scorer with name 'nope' not found for experiment {experiment_id}."
    )

    # A session-level judge: one job per session, its traces in time order; traces without a session skipped.
    session_judge = make_judge(name="session", instructions="JUDGE {{ conversation }}", model="openai:/gpt-4o-mini")
    mlflow.set_experiment(experiment_id=experiment_id)
    traces: dict[str, list[str]] = {"s1": [], "s2": []}
    for session in ("s1", "s2", "s1"):
        with mlflow.start_span("turn"):
            mlflow.update_current_trace(metadata={"mlflow.trace.session": session})
        traces[session].append(mlflow.get_last_active_trace_id())
        time.sleep(0.01)  # distinct request times: a session's traces are ordered by them
    stored([*traces["s1"], *traces["s2"]])
    lone = two_traces(experiment_id)[0]
    order = [traces["s2"][0], traces["s1"][1], lone, traces["s1"][0]]
    status, answer = call(
        server,
        "POST",
        SCORER_INVOKE,
        {"experiment_id": experiment_id, "serialized_scorer": json.dumps(session_judge.model_dump()), "trace_ids": order},
    )
    assert status == 200, answer
    assert sorted(job["trace_ids"] for job in answer["jobs"]) == sorted([traces["s1"], traces["s2"]])


def test_invoke_validation_answers_mlflows(server: str, client: Any) -> None:
    reference = asgi_reference_server()
    scorer = judge_json("judge")
    decorator = json.dumps({"name": "custom", "call_source": "return 1", "original_func_name": "custom"})
    scorer_cases: list[dict[str, Any]] = [
        {},
        {"experiment_id": "1"},
        {"experiment_id": "1", "serialized_scorer": scorer},
        {"experiment_id": "1", "serialized_scorer": scorer, "trace_ids": "tr-1"},
        {"experiment_id": "1", "serialized_scorer": scorer, "trace_ids": [1]},
        {"experiment_id": "1", "serialized_scorer": scorer, "trace_ids": ["tr-1"], "scorer_name": "judge"},
        {"experiment_id": "1", "serialized_scorer": scorer, "trace_ids": ["tr-1"], "scorer_name": "judge", "scorer_version": "1"},
        {"experiment_id": "1", "serialized_scorer": scorer, "trace_ids": ["tr-1"], "scorer_name": 3, "scorer_version": 1},
        {"experiment_id": "1", "serialized_scorer": "{not json", "trace_ids": ["tr-1"]},
        {"experiment_id": "1", "serialized_scorer": decorator, "trace_ids": ["tr-1"]},
    ]
    for body in scorer_cases:
        assert call(server, "POST", SCORER_INVOKE, body) == reference_call(reference.url, "POST", SCORER_INVOKE, body), body
    evaluate_cases: list[dict[str, Any]] = [
        {},
        {"experiment_id": 1, "trace_ids": ["tr-1"], "serialized_scorers": [scorer]},
        {"experiment_id": "1", "trace_ids": "tr-1", "serialized_scorers": [scorer]},
        {"experiment_id": "1", "trace_ids": ["tr-1"]},
        {"experiment_id": "1", "trace_ids": [], "serialized_scorers": [scorer]},
        {"experiment_id": "1", "trace_ids": ["tr-1"], "serialized_scorers": []},
        {"experiment_id": "1", "trace_ids": ["tr-1"], "serialized_scorers": [scorer], "scorer_versions": [1, 2]},
        {"experiment_id": "1", "trace_ids": ["tr-1"], "serialized_scorers": [scorer], "scorer_versions": ["1"]},
        {"experiment_id": "1", "trace_ids": ["tr-1"], "serialized_scorers": ["{bad"], "scorer_versions": [1]},
        {"experiment_id": "1", "trace_ids": ["tr-1"], "serialized_scorers": [decorator]},
    ]
    for body in evaluate_cases:
        assert call(server, "POST", EVALUATE_INVOKE, body) == reference_call(reference.url, "POST", EVALUATE_INVOKE, body), body
    response = requests.post(f"{server}{SCORER_INVOKE}", data="{}", headers={"Content-Type": "text/plain"}, timeout=60)
    assert response.status_code == 400
    assert response.json()["message"] == "Bad Request. Content-Type must be one of ['application/json']."

    # Trace ids of another experiment are refused (MLflow's _validate_trace_ids_in_experiment); missing ones are not.
    mine, other = client.create_experiment(unique("mine")), client.create_experiment(unique("other"))
    mlflow.set_experiment(experiment_id=other)
    foreign = two_traces(other)
    for path, body in (
        (SCORER_INVOKE, {"experiment_id": mine, "serialized_scorer": scorer, "trace_ids": foreign}),
        (EVALUATE_INVOKE, {"experiment_id": mine, "serialized_scorers": [scorer], "trace_ids": foreign}),
    ):
        assert call(server, "POST", path, body) == (
            403,
            {
                "error_code": "PERMISSION_DENIED",
                "message": "Not all requested traces could be accessed.",
                "sqlstate": "KAM00",
                "error_class": "PERMISSION_DENIED",
            },
        )


def test_flask_job_twins_answer_mlflows_shape_and_errors(server: str) -> None:
    reference = asgi_reference_server()
    for method, path in (("GET", f"{FLASK_JOBS}/no-such-job"), ("PATCH", f"{FLASK_JOBS}/cancel/no-such-job")):
        assert (
            call(server, method, path)
            == reference_call(reference.url, method, path)
            == (
                404,
                {
                    "error_code": "RESOURCE_DOES_NOT_EXIST",
                    "message": "Job with ID no-such-job not found",
                    "sqlstate": "KAM00",
                    "error_class": "RESOURCE_NOT_FOUND",
                },
            )
        )


def test_genai_evaluate_invoke_runs_mlflows_evaluation_into_a_new_run(server: str, client: Any, mock_llm: MockLLM) -> None:
    experiment_id = client.create_experiment(unique("evaluate"))
    mlflow.set_experiment(experiment_id=experiment_id)
    trace_ids = two_traces(experiment_id)
    status, answer = call(
        server,
        "POST",
        EVALUATE_INVOKE,
        {"experiment_id": experiment_id, "trace_ids": trace_ids, "serialized_scorers": [judge_json("helpful")]},
    )
    assert status == 200, answer
    assert set(answer) == {"job_id", "run_id"}
    run = client.get_run(answer["run_id"])
    assert run.data.tags["mlflow.runType"] == "genai_evaluate"
    assert run.data.tags["mlflow.genaiEvaluate.jobId"] == answer["job_id"]
    done = wait_flask_job(server, answer["job_id"], seconds=120)
    assert done["status"] == "SUCCEEDED", done
    assert done["result"] == {"run_id": answer["run_id"], "total_traces": 2, "scorer_count": 1}
    assert client.get_run(answer["run_id"]).info.status == "FINISHED"
    for trace_id in trace_ids:  # the judge's feedback, logged by MLflow's evaluation harness
        assert [a.value for a in client.get_trace(trace_id).info.assessments if a.name == "helpful"] == ["yes"]

    # Canceling a finished job: MLflow's Flask answer (its usual error JSON, not FastAPI's {"detail"}).
    assert call(server, "PATCH", f"{FLASK_JOBS}/cancel/{answer['job_id']}") == (
        400,
        {
            "error_code": "INVALID_PARAMETER_VALUE",
            "message": f"The Job {answer['job_id']} is already finalized with status: JobStatus.SUCCEEDED, it can't be updated.",
            "sqlstate": "KAM00",
            "error_class": "INVALID_PARAMETER_VALUE",
        },
    )


def test_a_custom_scorer_runs_in_the_worker_only_when_the_operator_allows_it(
    server: str, client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``@scorer`` code runs on the server only behind MLflow's operator switch (``MLFLOW_SERVER_ENABLE_CUSTOM_SCORERS``;
    the stack's ``enable_custom_scorers`` context): refused by default, run by the job worker once allowed."""
    from mlflow.genai.scorers import scorer

    @scorer
    def answer_length(trace: Any) -> int:
        # The trace the worker loaded from this server (MLflow's invoke path gives a scorer the trace, not outputs).
        return len(trace.data.response)

    experiment_id = client.create_experiment(unique("custom"))
    mlflow.set_experiment(experiment_id=experiment_id)
    trace_ids = two_traces(experiment_id)
    body = {"experiment_id": experiment_id, "serialized_scorer": json.dumps(answer_length.model_dump()), "trace_ids": trace_ids, "log_assessments": True}  # fmt: skip

    monkeypatch.delenv("MLFLOW_SERVER_ENABLE_CUSTOM_SCORERS", raising=False)
    status, answer = call(server, "POST", SCORER_INVOKE, body)
    assert status == 400 and answer["error_code"] == "INVALID_PARAMETER_VALUE", answer
    assert "MLFLOW_SERVER_ENABLE_CUSTOM_SCORERS" in answer["message"]

    monkeypatch.setenv("MLFLOW_SERVER_ENABLE_CUSTOM_SCORERS", "true")
    # A custom scorer whose source is empty can never run: refused as MLflow 3.18 refuses it.
    empty = {**body, "serialized_scorer": json.dumps({**answer_length.model_dump(), "call_source": "  "})}
    status, answer = call(server, "POST", SCORER_INVOKE, empty)
    assert status == 400 and answer["message"].startswith("Scorer 'answer_length' has no source code"), answer
    status, answer = call(server, "POST", SCORER_INVOKE, body)
    assert status == 200, answer
    (job,) = answer["jobs"]
    done = wait_flask_job(server, job["job_id"])
    assert done["status"] == "SUCCEEDED", done
    for trace_id in trace_ids:
        trace = client.get_trace(trace_id)
        (logged,) = [a for a in trace.info.assessments if a.name == "answer_length"]
        assert logged.value == len(trace.data.response) > 0 and logged.source.source_type == "CODE"
