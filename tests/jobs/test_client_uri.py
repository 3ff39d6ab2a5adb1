"""A job points the stock client at this server only while it runs (``job_worker/client_uri.py``).

The local runtime runs its worker in the process that hosts it: the test session's own client lives there, and
tests that drive a second runtime point it elsewhere. A job that left the process's URIs on its server sent that
test's next calls to the wrong server (CI: a basic-auth judge's traces, a webhook, a feedback on a reference trace).
"""

from __future__ import annotations

import os
import threading

import mlflow
import pytest
from job_worker.client_uri import pointed_at_server
from mlflow.tracking._model_registry import utils as registry_utils

SERVER = "http://127.0.0.1:1"
ELSEWHERE = "http://127.0.0.1:2"


@pytest.fixture
def job_server(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("JOB_SERVER_URL", SERVER)
    return SERVER


def _uris() -> tuple[str, str | None, str | None, str | None]:
    return (
        mlflow.get_tracking_uri(),
        registry_utils._registry_uri,
        os.environ.get("MLFLOW_TRACKING_URI"),
        os.environ.get("MLFLOW_REGISTRY_URI"),
    )


def test_a_job_leaves_the_client_as_it_found_it(job_server: str) -> None:
    mlflow.set_tracking_uri(ELSEWHERE)
    mlflow.set_registry_uri(ELSEWHERE)
    before = _uris()
    with pointed_at_server() as url:
        assert url == job_server
        assert _uris() == (job_server, job_server, job_server, job_server)
        assert mlflow.MlflowClient()._registry_uri == job_server
    assert _uris() == before


def test_overlapping_jobs_keep_the_server_until_the_last_ends(job_server: str) -> None:
    mlflow.set_tracking_uri(ELSEWHERE)
    first_in, second_in, first_out = threading.Event(), threading.Event(), threading.Event()
    seen: list[str] = []

    def first() -> None:
        with pointed_at_server():
            first_in.set()
            second_in.wait(10)
        first_out.set()

    thread = threading.Thread(target=first)
    thread.start()
    assert first_in.wait(10)
    with pointed_at_server():
        second_in.set()
        assert first_out.wait(10)
        seen.append(mlflow.get_tracking_uri())  # the first job ended: the second still reaches its server
    thread.join(10)
    assert seen == [job_server]
    assert mlflow.get_tracking_uri() == ELSEWHERE


def test_a_uri_set_by_someone_else_during_the_job_stays(job_server: str) -> None:
    mlflow.set_tracking_uri(ELSEWHERE)
    with pointed_at_server():
        mlflow.set_tracking_uri("http://127.0.0.1:3")
    assert mlflow.get_tracking_uri() == "http://127.0.0.1:3"
