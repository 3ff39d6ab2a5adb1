"""MLflow's jobs API on the serverless runner, end to end over HTTP: submit puts a job on the local SQS queue
(moto) and the job worker function runs it, as the deployed event source mapping does. The small test kinds
(JOB_TEST_KINDS) exercise the runner: success, failure, retries to the dead-letter queue, cancel, timeout and a
run continued from its checkpoint across invocations. Answers are compared with MLflow's own server (its FastAPI
job routes) where MLflow's answer does not depend on running a job."""

from __future__ import annotations

import os
import time
from typing import Any

import boto3
import pytest
import requests
from mlflow.server.job_api import Job

from tests.mlflow_reference import asgi_reference_server

pytestmark = pytest.mark.e2e

JOBS = "/ajax-api/3.0/jobs"
FINAL = {"SUCCEEDED", "FAILED", "TIMEOUT", "CANCELED"}


@pytest.fixture(autouse=True)
def _test_kinds(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JOB_TEST_KINDS", "true")


def call(server: str, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    response = requests.request(method, f"{server}{path}", json=body, timeout=60)
    return response.status_code, response.json()


def submit(server: str, job_name: str, params: dict[str, Any], timeout: float | None = None) -> dict[str, Any]:
    status, job = call(server, "POST", f"{JOBS}/", {"job_name": job_name, "params": params, "timeout": timeout})
    assert status == 200, job
    return job


def wait_for(server: str, job_id: str, statuses: set[str] = FINAL, seconds: float = 60, until: Any = None) -> dict[str, Any]:
    deadline = time.monotonic() + seconds
    while True:
        status, job = call(server, "GET", f"{JOBS}/{job_id}")
        assert status == 200, job
        if job["status"] in statuses and (until is None or until(job)):
            return job
        assert time.monotonic() < deadline, f"job {job_id} still {job['status']}"
        time.sleep(0.2)


def test_job_runs_to_success_with_mlflows_answer_shape(server: str) -> None:
    job = submit(server, "test_echo", {"a": 1, "nested": {"b": [1.5, None]}})
    assert set(job) == set(Job.model_fields)  # every field of MLflow's response model, nulls included
    assert job["status"] == "PENDING" and job["retry_count"] == 0 and job["result"] is None
    done = wait_for(server, job["job_id"])
    assert done["status"] == "SUCCEEDED"
    assert done["result"] == {"echo": {"a": 1, "nested": {"b": [1.5, None]}}}
    assert done["error_message"] is None
    assert done["last_update_time"] >= done["creation_time"]
    Job.model_validate(done)

    status, found = call(server, "POST", f"{JOBS}/search", {"job_name": "test_echo", "params": {"a": 1}, "statuses": ["SUCCEEDED"]})
    assert status == 200
    assert job["job_id"] in [j["job_id"] for j in found["jobs"]]
    _, not_found = call(server, "POST", f"{JOBS}/search", {"job_name": "test_echo", "params": {"a": 2}})
    assert job["job_id"] not in [j["job_id"] for j in not_found["jobs"]]
    _, pending = call(server, "POST", f"{JOBS}/search", {"statuses": ["PENDING"]})
    assert job["job_id"] not in [j["job_id"] for j in pending["jobs"]]


def test_search_lists_oldest_first(server: str) -> None:
    ids = [submit(server, "test_echo", {"order": i})["job_id"] for i in range(3)]
    _, found = call(server, "POST", f"{JOBS}/search", {"job_name": "test_echo"})
    listed = [j["job_id"] for j in found["jobs"] if j["job_id"] in ids]
    assert listed == ids
    times = [j["creation_time"] for j in found["jobs"]]
    assert times == sorted(times)


def test_failing_job_is_failed_with_its_error(server: str) -> None:
    job = wait_for(server, submit(server, "test_fail", {"message": "broken input"})["job_id"])
    assert job["status"] == "FAILED"
    assert job["error_message"] == "ValueError: broken input" == job["result"]
    assert job["retry_count"] == 0  # MLflow retries TransientError only


def test_transient_failure_is_retried(server: str) -> None:
    job = wait_for(server, submit(server, "test_transient", {"succeed_after": 1})["job_id"])
    assert job["status"] == "SUCCEEDED"
    assert job["retry_count"] == 1
    assert job["result"] == {"retries": 1}


def test_retries_exhausted_fail_the_job_and_dead_letter_its_message(server: str) -> None:
    job = wait_for(server, submit(server, "test_transient", {})["job_id"])
    assert job["status"] == "FAILED"
    assert job["retry_count"] == 3  # MLflow's MLFLOW_SERVER_JOB_TRANSIENT_ERROR_MAX_RETRIES default
    assert job["error_message"] == "a transient failure (after 3 retries)"
    sqs = boto3.client("sqs", endpoint_url=os.environ["SQS_ENDPOINT_URL"])
    deadline = time.monotonic() + 30
    bodies: list[str] = []
    while job["job_id"] not in "".join(bodies):
        assert time.monotonic() < deadline, "the job's message never reached the dead-letter queue"
        messages = sqs.receive_message(QueueUrl=os.environ["JOB_DEAD_LETTER_QUEUE_URL"], MaxNumberOfMessages=10, WaitTimeSeconds=1)
        bodies += [m["Body"] for m in messages.get("Messages") or []]


def test_cancel_stops_a_running_job(server: str) -> None:
    job = submit(server, "test_steps", {"count": 40, "seconds": 0.25})
    wait_for(server, job["job_id"], {"RUNNING"}, until=lambda j: j["progress"] is not None)
    status, canceled = call(server, "PATCH", f"{JOBS}/cancel/{job['job_id']}")
    assert status == 200 and canceled["status"] == "CANCELED"
    time.sleep(1)  # the worker sees the cancel at its next step and stops without overwriting it
    _, after = call(server, "GET", f"{JOBS}/{job['job_id']}")
    assert after["status"] == "CANCELED"
    assert after["progress"]["completed"] < 40
    status, again = call(server, "PATCH", f"{JOBS}/cancel/{job['job_id']}")
    assert (status, again) == (
        400,
        {"detail": f"The Job {job['job_id']} is already finalized with status: JobStatus.CANCELED, it can't be updated."},
    )


def test_job_past_its_timeout_times_out(server: str) -> None:
    job = wait_for(server, submit(server, "test_steps", {"count": 40, "seconds": 0.25}, timeout=1)["job_id"])
    assert job["status"] == "TIMEOUT"
    assert job["timeout"] == 1.0
    assert job["error_message"] == "The job exceeded its timeout of 1.0 seconds."


def test_long_job_continues_from_its_checkpoint_in_new_invocations(server: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # Invocations of 3 s, handing over with 2 s left: each runs about one 0.5 s step... then checkpoints.
    monkeypatch.setenv("JOB_WORKER_TIMEOUT_SECONDS", "3")
    monkeypatch.setenv("JOB_HANDOVER_MS", "2000")
    job = wait_for(server, submit(server, "test_steps", {"count": 4, "seconds": 0.5})["job_id"])
    assert job["status"] == "SUCCEEDED"
    assert job["result"]["done"] == 4
    assert job["result"]["invocations"] >= 2
    assert job["retry_count"] == 0  # a continuation is not a retry
    assert job["progress"] == {"phase": "steps", "completed": 4, "total": 4, "unit": "steps"}


# MLflow answers these without running a job: the same status and body here.
SAME_AS_MLFLOW = [
    ("GET", f"{JOBS}/no-such-job", None),
    ("PATCH", f"{JOBS}/cancel/no-such-job", None),
    ("POST", f"{JOBS}/", {"job_name": "no_such_kind", "params": {}}),
    ("POST", f"{JOBS}/", {"params": {}}),
    ("POST", f"{JOBS}/", {"job_name": 3, "params": []}),
    ("POST", f"{JOBS}/", {"job_name": "test_echo", "params": {}, "timeout": "soon"}),
    ("POST", f"{JOBS}/search", {"statuses": ["BOGUS", "PENDING"]}),
    ("POST", f"{JOBS}/search", {"job_name": 3}),
    ("POST", f"{JOBS}/search", {"statuses": "PENDING"}),
]


@pytest.mark.parametrize(("method", "path", "body"), SAME_AS_MLFLOW)
def test_errors_match_mlflow(server: str, method: str, path: str, body: Any) -> None:
    reference = asgi_reference_server()
    assert call(server, method, path, body) == call(reference.url, method, path, body)
