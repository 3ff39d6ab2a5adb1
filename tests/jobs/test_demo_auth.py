"""Start Demo under basic auth, by a user who is not an admin: the demo job calls the API as that user (its job
token, ``serverless_mlflow.auth.job_tokens``) and makes MLflow's demo data, which that user can then read; a user
without a grant cannot. With ``NO_PERMISSIONS`` as the default, every read below rests on a grant the user got by
creating the data (MLflow's creator MANAGE), none on a default."""

from __future__ import annotations

import time
from typing import Any

import pytest
import requests

from tests.auth.conftest import ADMIN, ADMIN_PASSWORD, basic_env, basic_runtime
from tests.conftest import unique
from tests.jobs.test_demo import ALL_FEATURES, GENERATE, demo_data
from tests.mlflow_reference import asgi_reference_server

pytestmark = [pytest.mark.long, pytest.mark.e2e]

JOBS = "/ajax-api/3.0/jobs"


def call(url: str, user: tuple[str, str], method: str, path: str, body: Any = None) -> requests.Response:
    return requests.request(method, f"{url}{path}", json=body, auth=user, timeout=600)


def test_a_non_admin_starts_the_demo_and_reads_its_data(server: str) -> None:
    env = {**basic_env(), "AUTH_DEFAULT_PERMISSION": "NO_PERMISSIONS"}
    with basic_runtime(env=env) as url:
        alice, bob = (unique("alice"), "alice-password-1"), (unique("bob"), "bob-password-1")
        for user in (alice, bob):
            created = call(url, (ADMIN, ADMIN_PASSWORD), "POST", "/api/2.0/mlflow/users/create", {"username": user[0], "password": user[1]})
            assert created.status_code == 200, created.text

        started = call(url, alice, "POST", GENERATE)
        assert started.status_code == 200, started.text
        answer = started.json()
        assert answer["status"] == "created" and answer["features_generated"] == ALL_FEATURES
        experiment_id = answer["experiment_id"]

        (job,) = call(url, alice, "POST", f"{JOBS}/search", {"job_name": "demo_generate"}).json()["jobs"]
        assert job["creator"] == alice[0]
        deadline = time.monotonic() + 900
        while job["status"] in ("PENDING", "RUNNING"):
            assert time.monotonic() < deadline, job
            time.sleep(2)
            job = call(url, alice, "GET", f"{JOBS}/{job['job_id']}").json()
        assert job["status"] == "SUCCEEDED", job
        assert job["progress"]["completed"] == len(ALL_FEATURES)

        # alice reads what her job made: the same demo data as MLflow's server makes.
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("MLFLOW_TRACKING_USERNAME", alice[0])
            patch.setenv("MLFLOW_TRACKING_PASSWORD", alice[1])
            ours = demo_data(url, experiment_id)
        reference = asgi_reference_server()
        ref_answer = requests.post(f"{reference.url}{GENERATE}", timeout=600).json()
        assert ours == demo_data(reference.url, ref_answer["experiment_id"])
        assert ours["traces"] > 0 and ours["prompts"]
        # bob has no grant on any of it.
        assert call(url, bob, "GET", f"/api/2.0/mlflow/experiments/get?experiment_id={experiment_id}").status_code == 403
        assert call(url, bob, "GET", f"{JOBS}/{job['job_id']}").status_code == 403
        # Now generated: "exists" for anyone signed in, as MLflow answers.
        assert call(url, bob, "POST", GENERATE).json()["status"] == "exists"
