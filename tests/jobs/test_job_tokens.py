"""A job calls the API as the user who submitted it, never as more (``serverless_mlflow.auth.job_tokens``).

The worker sends the job's token as that user's basic-auth password; the authorizer accepts it only untampered,
unexpired, for that user and while its job is live (not finished, cancelled or deleted), then applies that user's
own permissions. Anything else is MLflow's 401."""

from __future__ import annotations

import base64
import json
import os
import time
from typing import Any

import mlflow
import pytest
import requests

from serverless_mlflow.auth import job_tokens
from tests.auth.conftest import ADMIN, ADMIN_PASSWORD, basic_env, basic_runtime
from tests.conftest import unique

pytestmark = pytest.mark.e2e

M2 = "/api/2.0/mlflow"
JOBS = "/ajax-api/3.0/jobs"
KEY = os.urandom(32).hex()
UNAUTHENTICATED = (
    "You are not authenticated. Please see https://www.mlflow.org/docs/latest/auth/index.html#authenticating-to-mlflow "
    "on how to authenticate."
)


def call(url: str, user: tuple[str, str], method: str, path: str, body: Any = None) -> requests.Response:
    return requests.request(method, f"{url}{path}", json=body, auth=user, timeout=60)


def minted(username: str, job_id: str, **kwargs: Any) -> str:
    previous = os.environ.get("JOB_TOKEN_KEY")
    os.environ["JOB_TOKEN_KEY"] = KEY
    try:
        return job_tokens.mint(username, job_id, **kwargs)
    finally:
        if previous is None:
            os.environ.pop("JOB_TOKEN_KEY")
        else:
            os.environ["JOB_TOKEN_KEY"] = previous


def resigned_payload(token: str, **claims: Any) -> str:
    """The token with its claims changed and its signature kept (what a tamperer can do without the key)."""
    payload, signature = token[len(job_tokens.PREFIX) :].split(".")
    decoded = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    changed = base64.urlsafe_b64encode(json.dumps({**decoded, **claims}, separators=(",", ":")).encode()).decode().rstrip("=")
    return f"{job_tokens.PREFIX}{changed}.{signature}"


def assert_unauthenticated(response: requests.Response) -> None:
    assert response.status_code == 401, response.text
    assert response.text == UNAUTHENTICATED
    assert response.headers["WWW-Authenticate"] == 'Basic realm="mlflow"'


@pytest.fixture(scope="module")
def token_server(server: str) -> Any:
    with basic_runtime(env={**basic_env(), "JOB_TOKEN_KEY": KEY, "JOB_TEST_KINDS": "true"}) as url:
        yield url


@pytest.fixture(scope="module")
def users(token_server: str) -> dict[str, tuple[str, str]]:
    found = {name: (unique(name), f"{name}-password-1") for name in ("alice", "bob")}
    for username, password in found.values():
        response = call(token_server, (ADMIN, ADMIN_PASSWORD), "POST", f"{M2}/users/create", {"username": username, "password": password})
        assert response.status_code == 200, response.text
    return found


def running_job(url: str, user: tuple[str, str]) -> str:
    """A job of ``user`` that stays live for a minute unless cancelled (its steps check for the cancel)."""
    submitted = call(url, user, "POST", f"{JOBS}/", {"job_name": "test_steps", "params": {"count": 600, "seconds": 0.1}})
    assert submitted.status_code == 200, submitted.text
    return submitted.json()["job_id"]


def test_a_job_token_is_its_users_password_and_nothing_more(token_server: str, users: dict[str, tuple[str, str]]) -> None:
    alice, bob = users["alice"], users["bob"]
    job_id = running_job(token_server, alice)
    token = minted(alice[0], job_id)
    as_alice = (alice[0], token)
    # The stock client, with the token as alice's password.
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("MLFLOW_TRACKING_USERNAME", alice[0])
        patch.setenv("MLFLOW_TRACKING_PASSWORD", token)
        experiment_id = mlflow.MlflowClient(token_server).create_experiment(unique("token-exp"))
    # alice's own rights: she manages what the token created; bob may not change it; admin-only routes stay closed.
    assert call(token_server, alice, "GET", f"{M2}/experiments/get?experiment_id={experiment_id}").status_code == 200
    assert call(token_server, bob, "POST", f"{M2}/experiments/delete", {"experiment_id": experiment_id}).status_code == 403
    assert call(token_server, as_alice, "POST", f"{M2}/users/create", {"username": unique("eve"), "password": "x" * 16}).status_code == 403
    assert call(token_server, as_alice, "GET", "/api/3.0/mlflow/server-info").status_code == 200  # a public route checks it too
    # The token does not stand in for the password where the current one is asked for (changing it).
    changed = call(
        token_server,
        as_alice,
        "PATCH",
        f"{M2}/users/update-password",
        {"username": alice[0], "password": "new-password-123", "current_password": token},
    )
    assert changed.status_code == 400 and "Current password does not match." in changed.text
    assert call(token_server, alice, "GET", f"{M2}/experiments/get?experiment_id={experiment_id}").status_code == 200

    refused = {
        "tampered signature": (alice[0], token[:-2] + ("AA" if not token.endswith("AA") else "BB")),
        "tampered user": (bob[0], resigned_payload(token, u=bob[0])),
        "tampered expiry": (alice[0], resigned_payload(token, e=int(time.time()) + 10**6)),
        "expired": (alice[0], minted(alice[0], job_id, ttl_seconds=-1)),
        "a job that does not exist": (alice[0], minted(alice[0], "no-such-job")),
        "a token for another user's job": (bob[0], minted(bob[0], job_id)),
        "another user's token": (bob[0], token),
        "another key": (alice[0], job_tokens.PREFIX + token[len(job_tokens.PREFIX) :].split(".")[0] + "." + "A" * 43),
        "wrong password": (alice[0], "not-alices-password"),
    }
    for case, credentials in refused.items():
        for path in (f"{M2}/experiments/get?experiment_id={experiment_id}", "/api/3.0/mlflow/server-info"):
            response = call(token_server, credentials, "GET", path)
            assert response.status_code == 401, (case, path, response.status_code)
            if "server-info" not in path:
                assert_unauthenticated(response)
    canceled = call(token_server, alice, "PATCH", f"{JOBS}/cancel/{job_id}")
    assert canceled.status_code == 200 and canceled.json()["status"] == "CANCELED", canceled.text


def test_finishing_or_cancelling_a_job_revokes_its_token(token_server: str, users: dict[str, tuple[str, str]]) -> None:
    alice = users["alice"]
    path = f"{M2}/experiments/search?max_results=1"
    job_id = running_job(token_server, alice)
    token = (alice[0], minted(alice[0], job_id))
    assert call(token_server, token, "GET", path).status_code == 200
    assert call(token_server, alice, "PATCH", f"{JOBS}/cancel/{job_id}").status_code == 200
    for checked in (path, "/api/3.0/mlflow/server-info"):
        assert call(token_server, token, "GET", checked).status_code == 401, checked
    assert_unauthenticated(call(token_server, token, "GET", path))
    # A finished job's token is refused too, though unexpired.
    done = call(token_server, alice, "POST", f"{JOBS}/", {"job_name": "test_echo", "params": {"x": 1}})
    assert done.status_code == 200, done.text
    assert wait_for(token_server, alice, done.json()["job_id"])["status"] == "SUCCEEDED"
    assert_unauthenticated(call(token_server, (alice[0], minted(alice[0], done.json()["job_id"])), "GET", path))
    assert call(token_server, alice, "GET", path).status_code == 200  # her password is unaffected


def wait_for(url: str, user: tuple[str, str], job_id: str, seconds: float = 240) -> dict[str, Any]:
    deadline = time.monotonic() + seconds
    while True:
        job = call(url, user, "GET", f"{JOBS}/{job_id}").json()
        if job["status"] not in ("PENDING", "RUNNING"):
            return job
        assert time.monotonic() < deadline, job
        time.sleep(0.5)


def test_the_worker_calls_the_api_as_the_jobs_creator(token_server: str, users: dict[str, tuple[str, str]]) -> None:
    alice, bob = users["alice"], users["bob"]
    name = unique("by-alices-job")
    submitted = call(token_server, alice, "POST", f"{JOBS}/", {"job_name": "test_as_creator", "params": {"experiment_name": name}})
    assert submitted.status_code == 200, submitted.text
    job = wait_for(token_server, alice, submitted.json()["job_id"])
    assert job["status"] == "SUCCEEDED", job
    # Made as alice: she manages it, bob only reads it (the default permission), and the admin-only call was refused.
    assert job["result"]["admin_only_status"] == 403
    experiment_id = job["result"]["experiment_id"]
    assert call(token_server, bob, "POST", f"{M2}/experiments/delete", {"experiment_id": experiment_id}).status_code == 403
    assert (
        call(token_server, alice, "POST", f"{M2}/experiments/update", {"experiment_id": experiment_id, "new_name": name + "-x"}).status_code
        == 200
    )
    # The token lives in the job's message only: not in the job's answer nor its stored item.
    assert job_tokens.PREFIX not in json.dumps(job)


def test_a_job_token_logs_and_reads_artifacts(token_server: str, users: dict[str, tuple[str, str]]) -> None:
    """What MLflow's jobs do at their end (issue detection logs summary.md, issues.json and metadata.json to its run):
    the artifact routes accept the token like every other route."""
    alice = users["alice"]
    job_id = running_job(token_server, alice)
    token = minted(alice[0], job_id)
    try:
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("MLFLOW_TRACKING_USERNAME", alice[0])
            patch.setenv("MLFLOW_TRACKING_PASSWORD", token)
            client = mlflow.MlflowClient(token_server)
            run_id = client.create_run(client.create_experiment(unique("token-artifacts"))).info.run_id
            client.log_text(run_id, "found 2 issues", "summary.md")
            assert [f.path for f in client.list_artifacts(run_id)] == ["summary.md"]
            assert client.download_artifacts(run_id, "summary.md")
    finally:
        call(token_server, alice, "PATCH", f"{JOBS}/cancel/{job_id}")
