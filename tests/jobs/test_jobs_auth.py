"""Jobs under basic auth, as MLflow's auth app gates its job routes: any signed-in user submits and searches;
a job is read and canceled by its creator or an admin; a search answers a user only the jobs they created."""

from __future__ import annotations

from typing import Any

import pytest
import requests

from tests.auth.conftest import ADMIN, ADMIN_PASSWORD, basic_env, basic_runtime
from tests.conftest import unique

pytestmark = pytest.mark.e2e

JOBS = "/ajax-api/3.0/jobs"


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

        status, canceled = call(url, alice, "PATCH", f"{JOBS}/cancel/{job_id}")
        assert status == 200 and canceled["status"] == "CANCELED"
