"""pytest plugin that points MLflow's own REST tests (``tests/tracking/test_rest_tracking.py`` of MLflow's tree,
kept outside this repository in ``MLFLOW_TESTS_DIR``) at one server: ``MLFLOW_REST_TARGET=stock`` leaves MLflow's
fixtures alone (its FastAPI app, the app ``mlflow server`` runs, on a fresh sqlite copy per test);
``MLFLOW_REST_TARGET=ours`` hands every server those tests start (``ServerThread``, ``_init_server``) a fresh
local runtime instead: its own table and bucket on one DynamoDB Local and moto S3 for the session, since MLflow's
tests assume an empty store per test. ``tools/mlflow_rest_tests.py`` runs both and compares.

Loaded as ``-p tools.mlflow_rest_plugin`` with this repository on ``PYTHONPATH``. It must not import this repo's
``tests`` package: under ``MLFLOW_TESTS_DIR`` the name ``tests`` is MLflow's.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tools.server_process import START_TIMEOUT_SECONDS, free_port, stop_process, wait_healthy

ROOT = Path(__file__).resolve().parent.parent
TARGET = os.environ.get("MLFLOW_REST_TARGET", "stock")

# Tests left out of both runs, each with its reason (what owns it). Custom scorers' execution and LLM calls belong
# to the execution issue; nothing else is excluded.
EXCLUDED: dict[str, str] = {}


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "asyncio: MLflow's async tests (pytest-asyncio is not installed here)")


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    """MLflow runs most tests against its file store and its SQL store; only the SQL store (``mlflow server`` on
    sqlite) is the reference here, so the ``file`` variants are dropped, as are the listed exclusions."""
    keep, drop = [], []
    for item in items:
        params = getattr(getattr(item, "callspec", None), "params", {})
        if params.get("store_type") == "file" or item.originalname in EXCLUDED:
            drop.append(item)
        else:
            keep.append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


class _RuntimePool:
    """Fresh runtime processes, one kept starting in the background: a test's server is usually ready when
    it asks, so the per-test start (seconds on a busy box) overlaps the previous test."""

    def __init__(self, env: dict[str, str]) -> None:
        self._env = env
        self._next: tuple[subprocess.Popen[bytes], str] | None = None
        self._lock = threading.Lock()

    def _spawn(self, extra_env: dict[str, str] | None = None) -> tuple[subprocess.Popen[bytes], str]:
        port = free_port()
        suffix = uuid.uuid4().hex[:10]
        env = dict(self._env, PORT=str(port), TABLE_NAME=f"mlrest-{suffix}", BUCKET_NAME=f"mlrest-{suffix}", ACCESS_LOG="false")
        env.update(extra_env or {})
        process = subprocess.Popen([sys.executable, "-m", "local"], cwd=ROOT, env=env, stdout=subprocess.DEVNULL)
        return process, f"http://127.0.0.1:{port}"

    def take(self, extra_env: dict[str, str] | None = None) -> tuple[subprocess.Popen[bytes], str]:
        """A started runtime; one with ``extra_env`` (a test's server environment, MLflow's ``_init_server``) is
        started for that test alone."""
        if extra_env:
            ready = self._spawn(extra_env)
            wait_healthy(ready[1], ready[0], timeout=START_TIMEOUT_SECONDS)
            return ready
        with self._lock:
            ready = self._next or self._spawn()
            self._next = self._spawn()
        wait_healthy(ready[1], ready[0], timeout=START_TIMEOUT_SECONDS)
        return ready

    def close(self) -> None:
        if self._next is not None:
            stop_process(self._next[0])
            self._next = None


_pool: _RuntimePool | None = None


@contextlib.contextmanager
def fresh_runtime(extra_env: dict[str, str] | None = None) -> Iterator[str]:
    """A runtime process with an empty table and bucket; stopped when the test's server would be."""
    assert _pool is not None, "MLFLOW_REST_TARGET=ours needs the session's engines"
    process, url = _pool.take(extra_env)
    # Stock's tests share one sqlite file between the server and the test process (MLflow's ``tracking_uri_mock``
    # points the process at ``db_uri``), so fluent calls and the CLI reach the server's store; here they reach ours.
    import mlflow

    mlflow.set_tracking_uri(url)
    mlflow.set_registry_uri(url)
    try:
        yield url
    finally:
        stop_process(process)


class RuntimeThread:
    """Stands in for MLflow's ``ServerThread(app, port)``: the same context-manager use, our runtime's URL."""

    def __init__(self, app: Any = None, port: int | None = None) -> None:
        self._context = fresh_runtime()

    def __enter__(self) -> str:
        return self._context.__enter__()

    def __exit__(self, *exc: Any) -> None:
        self._context.__exit__(*exc)


@contextlib.contextmanager
def runtime_server(
    backend_uri: str = "", root_artifact_uri: str = "", extra_env: Any = None, app: Any = None, server_type: str = ""
) -> Iterator[str]:
    """Stands in for MLflow's ``_init_server(...)``: a fresh runtime whatever store or app is asked for, with the
    server environment the test gives (``MLFLOW_DEPLOYMENTS_TARGET``, for one)."""
    with fresh_runtime({str(k): str(v) for k, v in (extra_env or {}).items()}) as url:
        yield url


@pytest.fixture(scope="session", autouse=True)
def _ours_engines() -> Iterator[None]:
    """For ``ours``: one DynamoDB Local and moto S3 (an in-process runtime owns them and sets their endpoints in
    the environment) that every per-test runtime process shares, with its own table and bucket."""
    global _pool
    if TARGET != "ours":
        yield
        return
    from local.runtime import LocalRuntime

    runtime = LocalRuntime(port=0).start()
    # The environment as the engines left it, before any test changes it (MLflow's fixtures set tracking URIs).
    _pool = _RuntimePool({**os.environ, "LOG_LEVEL": "ERROR"})
    try:
        yield
    finally:
        _pool.close()
        _pool = None
        runtime.stop()


@pytest.fixture(autouse=True)
def _ours_servers(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """For ``ours``: MLflow's server starters, in the test module and in its helper module, give our runtime."""
    if TARGET != "ours":
        return
    from tests.tracking import integration_test_utils  # MLflow's, from MLFLOW_TESTS_DIR

    for module in (request.module, integration_test_utils):
        if hasattr(module, "ServerThread"):
            monkeypatch.setattr(module, "ServerThread", RuntimeThread)
        if hasattr(module, "_init_server"):
            monkeypatch.setattr(module, "_init_server", runtime_server)
