"""MLflow's own tracking server (its Flask app) on sqlite: the reference for differential tests.

``reference_server()`` starts, once per test process, a child process serving ``mlflow.server.app`` over HTTP
on a free port, with a sqlite backend, ``mlflow-artifacts:/`` as the default artifact root (a local
directory) and a KEK passphrase for the gateway's secret encryption. A separate process because MLflow's
handlers set process-wide tracking/registry URIs and resolve ``models:/`` through them: in the tests'
process they would reach our server instead of their own store.
"""

from __future__ import annotations

import atexit
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import requests

from tests.sqlite_template import migrated_sqlite

_SERVE = """
import sys
from werkzeug.serving import make_server
from mlflow.server import app
server = make_server("127.0.0.1", 0, app, threaded=True)
print(server.server_port, flush=True)
server.serve_forever()
"""

# MLflow's whole server as ``mlflow server`` runs it: the FastAPI app (MCP registry, assistant, jobs...) around
# the Flask app, under uvicorn.
_SERVE_ASGI = """
import socket, uvicorn
from mlflow.server.fastapi_app import app
sock = socket.socket()
sock.bind(("127.0.0.1", 0))
print(sock.getsockname()[1], flush=True)
uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[sock])
"""


@dataclass
class Reference:
    directory: Path
    url: str

    @property
    def artifacts(self) -> Path:
        """The local directory behind ``mlflow-artifacts:/``."""
        return self.directory / "artifacts"

    def call(
        self, method: str, path: str, body: dict[str, Any] | None = None, query: dict[str, Any] | None = None
    ) -> tuple[int, dict[str, Any]]:
        response = requests.request(method, f"{self.url}{path}", json=body, params=query, timeout=60)
        return response.status_code, response.json() if response.content else {}


@cache
def reference_server() -> Reference:
    """MLflow's Flask app (every protobuf route)."""
    return _start(_SERVE)


@cache
def asgi_reference_server() -> Reference:
    """MLflow's FastAPI app around its Flask app: also the routes MLflow serves with FastAPI (the MCP registry)."""
    return _start(_SERVE_ASGI)


@cache
def asgi_reference_server_of(python: str, env: tuple[tuple[str, str], ...] = ()) -> Reference:
    """MLflow's whole server run by another interpreter: a client venv's mlflow (``tools.client_venvs``) for
    routes the project's pinned mlflow does not have (3.18's skill registry); ``env`` on top of this environment."""
    return _start(_SERVE_ASGI, python=python, extra_env=dict(env))


@cache
def deployments_reference_server(target: str) -> Reference:
    """MLflow's Flask app with ``MLFLOW_DEPLOYMENTS_TARGET`` set: its gateway-proxy forwards to ``target``."""
    return _start(_SERVE, extra_env={"MLFLOW_DEPLOYMENTS_TARGET": target})


def workspaces_reference_server() -> Reference:
    """MLflow's whole server as ``mlflow server --enable-workspaces`` runs it (workspace store on the same sqlite)."""
    return _start(_SERVE_ASGI, extra_env={"MLFLOW_ENABLE_WORKSPACES": "true"})


def _start(script: str, python: str = sys.executable, extra_env: dict[str, str] | None = None) -> Reference:
    directory = Path(tempfile.mkdtemp(prefix="mlflow-reference-"))
    uri = migrated_sqlite(directory / "mlflow.db", python)
    env = {
        **os.environ,
        "_MLFLOW_SERVER_FILE_STORE": uri,
        "_MLFLOW_SERVER_REGISTRY_STORE": uri,
        "_MLFLOW_SERVER_ARTIFACT_ROOT": "mlflow-artifacts:/",
        "_MLFLOW_SERVER_ARTIFACT_DESTINATION": str(directory / "artifacts"),
        "_MLFLOW_SERVER_SERVE_ARTIFACTS": "true",
        "MLFLOW_CRYPTO_KEK_PASSPHRASE": "reference-only-passphrase",
        **(extra_env or {}),
    }
    for name in ("MLFLOW_TRACKING_URI", "MLFLOW_REGISTRY_URI"):
        env.pop(name, None)
    process = subprocess.Popen([python, "-c", script], env=env, cwd=directory, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    atexit.register(process.kill)
    port = int(process.stdout.readline())  # printed once the socket is bound
    reference = Reference(directory, f"http://127.0.0.1:{port}")
    # A bound for a server that never answers, not an expectation: a loaded machine takes minutes.
    deadline = time.monotonic() + 300
    while not _healthy(reference.url):
        if process.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError("MLflow's reference server did not become healthy")
        time.sleep(0.2)
    return reference


def _healthy(url: str) -> bool:
    try:
        return requests.get(f"{url}/health", timeout=30).status_code == 200
    except requests.RequestException:
        return False


@contextmanager
def jobs_reference_server(extra_env: dict[str, str]) -> Iterator[Reference]:
    """``mlflow server`` itself (the CLI, so with MLflow's job runner: Huey consumers running MLflow's job
    functions in subprocesses) on sqlite, ``extra_env`` on top of this environment (a provider's variables); stopped
    when done. Only for long tests: the runner is several processes."""
    from local.engine import free_port

    directory = Path(tempfile.mkdtemp(prefix="mlflow-jobs-reference-"))
    port = free_port()
    env = {**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "true", **extra_env}
    for name in ("MLFLOW_TRACKING_URI", "MLFLOW_REGISTRY_URI"):
        env.pop(name, None)
    command = [sys.executable, "-m", "mlflow", "server", "--host", "127.0.0.1", "--port", str(port), "--workers", "1"]
    command += ["--backend-store-uri", migrated_sqlite(directory / "mlflow.db"), "--artifacts-destination", str(directory / "artifacts")]
    process = subprocess.Popen(
        command, env=env, cwd=directory, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    reference = Reference(directory, f"http://127.0.0.1:{port}")
    try:
        deadline = time.monotonic() + 300
        while not _healthy(reference.url):
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("MLflow's jobs reference server did not become healthy")
            time.sleep(0.5)
        yield reference
    finally:
        # Its own process group: the server, its uvicorn worker and the job runner's consumers go together.
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        shutil.rmtree(directory, ignore_errors=True)
