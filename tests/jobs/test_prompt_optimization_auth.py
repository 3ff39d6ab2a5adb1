"""Prompt-optimization jobs (and ``issues/invoke``, in the same runtime) under basic auth, as MLflow 3.18's validators gate them: creating one takes UPDATE on the
experiment (and the source prompt not denied), reading or searching READ, canceling UPDATE, deleting DELETE, all
judged on the experiment the job's params name; a missing job answers 404. No job worker runs here, so the job
stays PENDING and cancel moves it (and kills its run) as MLflow's handler does."""

from __future__ import annotations

from typing import Any

import mlflow
import pytest
import requests

from tests.auth.conftest import ADMIN, ADMIN_PASSWORD, basic_env, basic_runtime
from tests.conftest import unique

pytestmark = pytest.mark.e2e

PO = "/api/3.0/mlflow/prompt-optimization/jobs"
INVOKE = "/ajax-api/3.0/mlflow/issues/invoke"


def call(url: str, user: tuple[str, str] | None, method: str, path: str, body: Any = None, query: Any = None) -> tuple[int, Any]:
    response = requests.request(method, f"{url}{path}", json=body, params=query, auth=user, timeout=60)
    return response.status_code, response.json() if response.status_code in (200, 400, 404) else response.text


def test_optimization_jobs_follow_the_experiment_permission(monkeypatch: pytest.MonkeyPatch) -> None:
    with basic_runtime(env={**basic_env(), "JOB_WORKER_CONCURRENCY": "0"}) as url:
        admin = (ADMIN, ADMIN_PASSWORD)
        alice, bob = (unique("alice"), "alice-password-1"), (unique("bob"), "bob-password-1")
        for user in (alice, bob):
            assert call(url, admin, "POST", "/api/2.0/mlflow/users/create", {"username": user[0], "password": user[1]})[0] == 200
        monkeypatch.setenv("MLFLOW_TRACKING_USERNAME", alice[0])
        monkeypatch.setenv("MLFLOW_TRACKING_PASSWORD", alice[1])
        client = mlflow.MlflowClient(url, registry_uri=url)
        experiment_id = client.create_experiment(unique("po-auth"))  # alice: MANAGE
        prompt = client.register_prompt(unique("po-auth-prompt"), "Answer {{q}}")
        body = {
            "experiment_id": experiment_id,
            "source_prompt_uri": f"prompts:/{prompt.name}/{prompt.version}",
            "config": {"optimizer_type": "OPTIMIZER_TYPE_METAPROMPT"},
        }

        assert call(url, bob, "POST", PO, body)[0] == 403  # READ (the default) does not create
        assert call(url, None, "POST", PO, body)[0] == 401
        status, created = call(url, alice, "POST", PO, body)
        assert status == 200, created
        job_id, run_id = created["job"]["job_id"], created["job"]["run_id"]

        assert call(url, bob, "GET", f"{PO}/{job_id}")[0] == 200
        assert call(url, bob, "GET", f"{PO}/search", query={"experiment_id": experiment_id})[0] == 200
        assert call(url, bob, "POST", f"{PO}/{job_id}/cancel")[0] == 403
        assert call(url, bob, "DELETE", f"{PO}/{job_id}")[0] == 403
        status, missing = call(url, bob, "GET", f"{PO}/no-such-job")
        assert status == 404 and missing["message"] == "Job with ID no-such-job not found"

        status, canceled = call(url, alice, "POST", f"{PO}/{job_id}/cancel")
        assert status == 200 and canceled["job"]["state"]["status"] == "JOB_STATUS_CANCELED"
        run = client.get_run(run_id)
        assert run.info.status == "KILLED" and run.info.end_time is not None
        assert call(url, alice, "GET", f"{PO}/{job_id}")[1]["job"]["state"]["status"] == "JOB_STATUS_CANCELED"

        # A denied source prompt stops the create even with UPDATE on the experiment.
        grant = "/api/3.0/mlflow/users/permissions/grant"

        def give(resource_type: str, resource_id: str, permission: str) -> None:
            status, answer = call(
                url,
                admin,
                "POST",
                grant,
                {"username": bob[0], "resource_type": resource_type, "resource_id": resource_id, "permission": permission},
            )
            assert status == 200, answer

        give("experiment", experiment_id, "EDIT")
        assert call(url, bob, "POST", PO, body)[0] == 200
        give("prompt", prompt.name, "DENY")
        assert call(url, bob, "POST", PO, body)[0] == 403
        assert call(url, bob, "POST", f"{PO}/{job_id}/cancel")[0] == 400  # allowed now; the job is already canceled
        assert call(url, bob, "DELETE", f"{PO}/{job_id}")[0] == 403  # EDIT does not delete

        # issues/invoke (validate_can_invoke_issue_detection): it creates a run, so UPDATE on the experiment.
        detect = {"experiment_id": experiment_id, "trace_ids": ["tr-1"], "categories": ["q"], "provider": "openai", "endpoint_name": "e"}
        other = client.create_experiment(unique("po-auth-other"))  # alice's; bob reads it (the default)
        assert call(url, bob, "POST", INVOKE, {**detect, "experiment_id": other})[0] == 403
        assert call(url, None, "POST", INVOKE, detect)[0] == 401
        status, invoked = call(url, bob, "POST", INVOKE, detect)  # EDIT
        assert status == 200 and set(invoked) == {"job_id", "run_id"}

        assert call(url, alice, "DELETE", f"{PO}/{job_id}") == (200, {})
        assert call(url, alice, "GET", f"{PO}/{job_id}")[0] == 404
        assert client.get_run(run_id).info.lifecycle_stage == "deleted"
