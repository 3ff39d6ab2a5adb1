"""Jobs under basic auth, as MLflow's auth app gates its job routes: any signed-in user submits and searches;
a job is read and canceled by its creator or an admin; a search answers a user only the jobs they created."""

from __future__ import annotations

import json
import time
from typing import Any

import mlflow
import pytest
import requests

from tests.auth.conftest import ADMIN, ADMIN_PASSWORD, basic_env, basic_runtime
from tests.conftest import unique

pytestmark = pytest.mark.e2e

JOBS = "/ajax-api/3.0/jobs"
FLASK_JOBS = "/ajax-api/3.0/mlflow/jobs"
SCORER_INVOKE = "/ajax-api/3.0/mlflow/scorer/invoke"
EVALUATE_INVOKE = "/ajax-api/3.0/mlflow/genai/evaluate/invoke"


def call(url: str, user: tuple[str, str], method: str, path: str, body: Any = None) -> tuple[int, Any]:
    response = requests.request(method, f"{url}{path}", json=body, auth=user, timeout=60)
    return response.status_code, response.json() if response.status_code == 200 else response.text


def test_a_job_is_its_creators(server: str) -> None:
    # No worker: the jobs stay PENDING, so each can still be canceled.
    with basic_runtime(env={**basic_env(), "JOB_TEST_KINDS": "true", "JOB_WORKER_CONCURRENCY": "0"}) as url:
        admin = (ADMIN, ADMIN_PASSWORD)
        alice, bob = (unique("alice"), "alice-password-1"), (unique("bob"), "bob-password-1")
        for user in (alice, bob):
            status, _ = call(url, admin, "POST", "/api/2.0/mlflow/users/create", {"username": user[0], "password": user[1]})
            assert status == 200
        status, job = call(url, alice, "POST", f"{JOBS}/", {"job_name": "test_echo", "params": {}})
        assert status == 200 and job["creator"] == alice[0]
        job_id = job["job_id"]

        assert call(url, alice, "GET", f"{JOBS}/{job_id}")[0] == 200
        assert call(url, admin, "GET", f"{JOBS}/{job_id}")[0] == 200
        assert call(url, bob, "GET", f"{JOBS}/{job_id}")[0] == 403
        assert call(url, bob, "PATCH", f"{JOBS}/cancel/{job_id}")[0] == 403
        assert requests.get(f"{url}{JOBS}/{job_id}", timeout=60).status_code == 401

        def searched(user: tuple[str, str]) -> list[str]:
            status, found = call(url, user, "POST", f"{JOBS}/search", {"job_name": "test_echo"})
            assert status == 200
            return [j["job_id"] for j in found["jobs"]]

        assert job_id in searched(alice) and job_id in searched(admin)
        assert job_id not in searched(bob)

        # MLflow's Flask twins are gated the same way (validate_is_job_owner).
        assert call(url, alice, "GET", f"{FLASK_JOBS}/{job_id}")[0] == 200
        assert call(url, bob, "GET", f"{FLASK_JOBS}/{job_id}")[0] == 403
        assert call(url, bob, "PATCH", f"{FLASK_JOBS}/cancel/{job_id}")[0] == 403
        assert call(url, bob, "GET", f"{FLASK_JOBS}/no-such-job")[0] == 403  # no oracle for which jobs exist
        status, canceled = call(url, alice, "PATCH", f"{FLASK_JOBS}/cancel/{job_id}")
        assert status == 200 and canceled["status"] == "CANCELED"
        assert call(url, alice, "PATCH", f"{JOBS}/cancel/{job_id}")[0] == 400  # already finalized


def test_invoke_routes_need_update_on_the_experiment(server: str) -> None:
    """validate_can_invoke_scorer / validate_can_invoke_genai_evaluate: UPDATE on the experiment (the default READ
    is not enough); the job is the caller's, and its params carry the caller's name as MLflow's handler sends it."""
    with basic_runtime(env={**basic_env(), "JOB_WORKER_CONCURRENCY": "0"}) as url:
        admin = (ADMIN, ADMIN_PASSWORD)
        alice, bob = (unique("alice"), "alice-password-1"), (unique("bob"), "bob-password-1")
        for user in (alice, bob):
            assert call(url, admin, "POST", "/api/2.0/mlflow/users/create", {"username": user[0], "password": user[1]})[0] == 200
        status, created = call(url, alice, "POST", "/api/2.0/mlflow/experiments/create", {"name": unique("invoke")})
        assert status == 200
        experiment_id = created["experiment_id"]
        scorer = json.dumps({"name": "judge", "instructions_judge_pydantic_data": {"instructions": "{{ outputs }}", "model": "openai:/x"}})
        invoke = {"experiment_id": experiment_id, "serialized_scorer": scorer, "trace_ids": ["tr-missing"]}
        evaluate = {"experiment_id": experiment_id, "serialized_scorers": [scorer], "trace_ids": ["tr-missing"]}
        assert call(url, bob, "POST", SCORER_INVOKE, invoke)[0] == 403
        assert call(url, bob, "POST", EVALUATE_INVOKE, evaluate)[0] == 403
        # A registered scorer entry without a readable name: denied before the handler (admins pass to its 400).
        unnamed = {**evaluate, "serialized_scorers": ["{}"], "scorer_versions": [1]}
        assert call(url, alice, "POST", EVALUATE_INVOKE, unnamed)[0] == 403
        assert call(url, admin, "POST", EVALUATE_INVOKE, unnamed)[0] == 400

        status, answer = call(url, alice, "POST", SCORER_INVOKE, invoke)
        assert status == 200, answer
        (job,) = answer["jobs"]
        status, stored = call(url, alice, "GET", f"{JOBS}/{job['job_id']}")
        assert stored["creator"] == alice[0] and stored["params"]["username"] == alice[0]
        status, answer = call(url, alice, "POST", EVALUATE_INVOKE, evaluate)
        assert status == 200, answer
        assert call(url, alice, "GET", f"{JOBS}/{answer['job_id']}")[1]["params"]["username"] == alice[0]


@pytest.mark.long
def test_a_judge_job_runs_as_its_creator(server: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Under basic auth with no default permission, alice's scorer/invoke job reads her traces and logs the
    judge's feedback on them with her rights alone (her job token), through MLflow's own job function."""
    from tests.jobs.test_invoke import judge_json, two_traces
    from tools.mock_llm import MockLLM

    llm = MockLLM().start()
    env = {
        **basic_env(),
        "AUTH_DEFAULT_PERMISSION": "NO_PERMISSIONS",
        "OPENAI_API_KEY": "test-key",
        "OPENAI_API_BASE": f"{llm.url}/v1",
    }
    try:
        with basic_runtime(env=env) as url:
            alice = (unique("alice"), "alice-password-1")
            status, _ = call(
                url, (ADMIN, ADMIN_PASSWORD), "POST", "/api/2.0/mlflow/users/create", {"username": alice[0], "password": alice[1]}
            )
            assert status == 200
            monkeypatch.setenv("MLFLOW_TRACKING_USERNAME", alice[0])
            monkeypatch.setenv("MLFLOW_TRACKING_PASSWORD", alice[1])
            mlflow.set_tracking_uri(url)
            experiment_id = mlflow.MlflowClient().create_experiment(unique("judged"))
            mlflow.set_experiment(experiment_id=experiment_id)
            trace_ids = two_traces(experiment_id)
            body = {
                "experiment_id": experiment_id,
                "serialized_scorer": judge_json("helpful"),
                "trace_ids": trace_ids,
                "log_assessments": True,
            }
            status, answer = call(url, alice, "POST", SCORER_INVOKE, body)
            assert status == 200, answer
            (job,) = answer["jobs"]
            deadline = time.monotonic() + 120
            while (done := call(url, alice, "GET", f"{FLASK_JOBS}/{job['job_id']}")[1])["status"] in ("PENDING", "RUNNING"):
                assert time.monotonic() < deadline, done
                time.sleep(0.5)
            assert done["status"] == "SUCCEEDED", done
            assert all(result["failures"] == [] for result in done["result"].values()), done
            for trace_id in trace_ids:
                logged = mlflow.MlflowClient().get_trace(trace_id).info.assessments
                assert [a.value for a in logged if a.name == "helpful"] == ["yes"]
    finally:
        llm.stop()
