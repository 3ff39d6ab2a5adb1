"""Shared fixtures: an in-process local runtime (real HTTP, embedded DynamoDB Local + moto S3) and the real
mlflow client.

``server`` is one runtime per test session (per xdist worker; tests use unique names); ``fresh_server``
starts a separate runtime process with its own empty table and bucket on the session's engines, for tests
that need a clean store.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tools.server_process import START_TIMEOUT_SECONDS, stop_process, wait_healthy

ROOT = Path(__file__).resolve().parent.parent

os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
os.environ.setdefault("AWS_ACCOUNT_ID_ENDPOINT_MODE", "disabled")
os.environ.setdefault("POWERTOOLS_TRACE_DISABLED", "true")
os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "ERROR")
# Presigned-only artifacts: small files must also go through multipart (the 3.17 client PUTs otherwise).
os.environ.setdefault("MLFLOW_MULTIPART_UPLOAD_MINIMUM_FILE_SIZE", "0")
os.environ.setdefault("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
# MLflow's own servers and functions read the model catalog bundled in the wheel (what ours ships), not the
# latest one from GitHub (MLflow's default MLFLOW_MODEL_CATALOG_URI).
os.environ.setdefault("MLFLOW_MODEL_CATALOG_URI", "")
# The stock `mlflow server`s the tests compare with start no job runner and huey workers (seven processes each,
# idle but polling): no test uses MLflow's server-side jobs, and on a 2-core box they slow everything else.
os.environ.setdefault("MLFLOW_SERVER_ENABLE_JOB_EXECUTION", "false")
# litellm (MLflow's GenAI extras, in the job worker) fetches its model price map from GitHub at import unless told to
# use the copy it ships: no test reaches the internet.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
# MLflow's client telemetry is off in CI (it sees CI / GITHUB_ACTIONS) but on in a local run: it imports before any
# test sets PYTEST_CURRENT_TEST, tries the internet, and when it gives up unsets its session variable while a
# request thread reads it (a local run's `KeyError: '_MLFLOW_TELEMETRY_SESSION_ID'` in a client call).
os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
# Password hashes at scrypt N=1024 (serverless_mlflow.auth.passwords; MLflow's basic-auth servers too, through
# tests/auth/scrypt_cost): still real scrypt hashes and checks, at ~4 ms a check instead of 0.1-0.2 s. Every request
# of a basic-auth test checks a password on each side (no authorizer cache), thousands in a run.
os.environ.setdefault("AUTH_SCRYPT_N", "1024")
# Stream checkpoints of tables on a shared engine belong to the test run, not to the checkout.
os.environ.setdefault("STREAM_CHECKPOINT_DIR", tempfile.mkdtemp(prefix="stream-checkpoints-"))


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--long", action="store_true", default=False, help="the request fuzz suite with many more examples per route")


@pytest.fixture(scope="session")
def local_runtime() -> Iterator[Any]:
    from local.runtime import LocalRuntime

    # The monitor passes only when a test calls ``monitor.tick()``: a timed pass would start the jobs of whatever
    # online-scoring configurations earlier tests left on, and a job points this process's MLflow client at this
    # runtime in the middle of a test that uses another server.
    runtime = LocalRuntime(port=0, monitor_schedule=False).start()
    os.environ["MLFLOW_TRACKING_URI"] = runtime.url
    yield runtime
    runtime.stop()


@pytest.fixture(scope="session")
def server(local_runtime: Any) -> str:
    return local_runtime.url


@pytest.fixture(scope="session")
def runtime_handle(server: str):
    from local import runtime as runtime_module

    return runtime_module


@pytest.fixture
def client(server: str):
    import mlflow

    mlflow.set_tracking_uri(server)
    mlflow.set_registry_uri(server)
    return mlflow.MlflowClient(server, registry_uri=server)


def unique(prefix: str = "t") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


@contextmanager
def runtime_process(
    env: dict[str, str], drop: tuple[str, ...] = (), avoid_ports: frozenset[int] = frozenset(), output: Path | None = None
) -> Iterator[str]:
    """``python -m local`` in its own process (on the session's DynamoDB Local and S3) with ``env`` on top of
    this process's environment, on a free port not in ``avoid_ports``; yields its URL. Its terminal output
    (stdout and stderr) goes to ``output`` if given."""
    from local.engine import free_port

    port = free_port()
    while port in avoid_ports:
        port = free_port()
    full = {name: value for name, value in os.environ.items() if name not in drop}
    full.update(env, PORT=str(port))
    with open(output or os.devnull, "wb") as sink:
        process = subprocess.Popen(
            [sys.executable, "-m", "local"], cwd=ROOT, env=full, stdout=sink, stderr=subprocess.STDOUT if output else None
        )
        url = f"http://127.0.0.1:{port}"
        try:
            wait_healthy(url, process, timeout=START_TIMEOUT_SECONDS)
            yield url
        finally:
            stop_process(process)


@pytest.fixture
def fresh_server(server: str) -> Iterator[str]:
    """A separate runtime process with its own empty table and bucket (on the session's DynamoDB Local and S3)."""
    with runtime_process({"TABLE_NAME": unique("fresh"), "BUCKET_NAME": unique("fresh")}) as url:
        yield url


_URI_VARIABLES = ("MLFLOW_TRACKING_URI", "MLFLOW_REGISTRY_URI")


@pytest.fixture(autouse=True)
def _process_wide_mlflow_uris() -> Iterator[None]:
    """MLflow's own Flask handlers, run in-process by the reference tests, set the process-wide registry URI
    (and its environment variable) to their sqlite store; a client made later in the same worker would then
    talk to that store instead of the server. Each test leaves the URIs (and where traces go) as it found them."""
    saved_env = {name: os.environ.get(name) for name in _URI_VARIABLES}
    modules = sys.modules
    registry = modules.get("mlflow.tracking._model_registry.utils")
    tracking = modules.get("mlflow.tracking._tracking_service.utils")
    saved_registry = registry._registry_uri if registry else None
    saved_tracking = tracking._tracking_uri if tracking else None
    yield
    for name, value in saved_env.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
    registry = modules.get("mlflow.tracking._model_registry.utils")
    tracking = modules.get("mlflow.tracking._tracking_service.utils")
    if registry is not None:
        registry._registry_uri = saved_registry
    if tracking is not None and tracking._tracking_uri != saved_tracking:
        tracking._tracking_uri = saved_tracking
        # The tracer provider keeps the destination it was set up with (MLflow's setter resets it too): a trace
        # of the next test would otherwise still go to this test's server (a session-wide basic-auth one: 401).
        from mlflow.tracing.provider import reset

        reset()
