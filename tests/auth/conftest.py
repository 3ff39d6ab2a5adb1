"""Two servers in basic-auth mode: ours (a local runtime process with AUTHORIZATION=basic) and MLflow's own
basic-auth app (``mlflow server --app-name basic-auth`` on sqlite), started once per session."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.conftest import runtime_process, unique
from tests.sqlite_template import migrated_sqlite
from tools.server_process import stop_process, wait_healthy

# The modules that compare with MLflow's own basic-auth server share one (it takes a minute to start).
WITH_MLFLOW = pytest.mark.xdist_group("mlflow-basic-auth")

SCRYPT_COST = Path(__file__).resolve().parent / "scrypt_cost"

ADMIN = "admin"
ADMIN_PASSWORD = "admin-password-" + os.urandom(6).hex()


def basic_env() -> dict[str, str]:
    """The environment of a basic-mode runtime with a table and bucket of its own."""
    return {
        "TABLE_NAME": unique("auth"),
        "BUCKET_NAME": unique("auth"),
        "AUTHORIZATION": "basic",
        "MLFLOW_AUTH_ADMIN_PASSWORD": ADMIN_PASSWORD,
        # Password changes and deletions take effect at once (the cache itself is tested on its own).
        "AUTHORIZER_CACHE_SECONDS": "0",
    }


@contextmanager
def basic_runtime(avoid_ports: frozenset[int] = frozenset(), env: dict[str, str] | None = None) -> Iterator[str]:
    """Our runtime in basic mode, in its own process with its own table and bucket (on the session's
    DynamoDB Local and S3), on a free port not in ``avoid_ports``."""
    env = env if env is not None else basic_env()
    with runtime_process(env, drop=("MLFLOW_TRACKING_USERNAME", "MLFLOW_TRACKING_PASSWORD"), avoid_ports=avoid_ports) as url:
        yield url


@pytest.fixture(scope="session")
def basic_server(server: str) -> Iterator[str]:
    with basic_runtime() as url:
        yield url


@pytest.fixture(scope="session")
def mlflow_server() -> Iterator[str]:
    """MLflow's own basic-auth server (the reference), on sqlite in a temporary directory, shared by the session."""
    with mlflow_basic_auth_server() as url:
        yield url


@contextmanager
def mlflow_basic_auth_server(
    extra_env: dict[str, str] | None = None, python: str = sys.executable, avoid_ports: frozenset[int] = frozenset()
) -> Iterator[str]:
    """A fresh MLflow basic-auth server (for scenarios whose user names must not exist yet); ``extra_env``
    configures it further (``MLFLOW_ENABLE_WORKSPACES``); ``python`` is the interpreter whose mlflow serves (a
    ``tools.client_venvs`` venv for another release); its port is not one of ``avoid_ports``."""
    from local.engine import free_port

    port = free_port()
    while port in avoid_ports:
        port = free_port()
    workdir = Path(tempfile.mkdtemp(prefix="mlflow-basic-auth-"))
    env = dict(os.environ)
    # A KEK passphrase of its own, as ours never uses a default one (the gateway's secrets config says so).
    # No job execution: it starts a job runner and seven huey consumers, each importing mlflow, which starved the
    # server's own start past its timeout on a loaded 2-core machine; no request of these tests runs a job.
    env.update(
        MLFLOW_AUTH_ADMIN_PASSWORD=ADMIN_PASSWORD,
        MLFLOW_FLASK_SERVER_SECRET_KEY=os.urandom(16).hex(),
        MLFLOW_CRYPTO_KEK_PASSPHRASE=os.urandom(16).hex(),
        MLFLOW_SERVER_ENABLE_JOB_EXECUTION="false",
        # Its password hashes at the suite's scrypt cost (scrypt_cost/sitecustomize.py), as ours are.
        PYTHONPATH=os.pathsep.join(filter(None, (str(SCRYPT_COST), env.get("PYTHONPATH")))),
    )
    for name in ("MLFLOW_TRACKING_URI", "MLFLOW_TRACKING_USERNAME", "MLFLOW_TRACKING_PASSWORD"):
        env.pop(name, None)
    env.update(extra_env or {})
    command = [
        str(Path(python).parent / "mlflow"), "server", "--app-name", "basic-auth",
        "--backend-store-uri", migrated_sqlite(workdir / "mlflow.db", python), "--artifacts-destination", str(workdir / "artifacts"),
        "--host", "127.0.0.1", "--port", str(port), "--workers", "1",
    ]  # fmt: skip
    log = open(workdir / "server.log", "wb")
    process = subprocess.Popen(command, cwd=workdir, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(url, process, timeout=240, log=workdir / "server.log")  # migrations on a loaded machine take a minute
        yield url
    finally:
        stop_process(process)
        log.close()
