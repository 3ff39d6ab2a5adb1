"""Webhook tests: a local HTTP receiver, our runtime with private targets allowed (its own table), and stock
``mlflow server`` with the same settings, each sending to its own receiver."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import runtime_process, unique
from tests.sqlite_template import migrated_sqlite
from tools.server_process import stop_process, wait_healthy

# Both servers deliver to receivers on 127.0.0.1 over http (MLflow's own settings for local development).
LOCAL_TARGETS = {"MLFLOW_WEBHOOK_ALLOWED_SCHEMES": "http,https", "MLFLOW_WEBHOOK_ALLOW_PRIVATE_IPS": "true"}


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: str

    @property
    def json(self) -> dict[str, Any]:
        return json.loads(self.body)


@dataclass
class Receiver:
    """Records every POST; ``answers`` gives the status of each next request (then 200)."""

    url: str = ""
    requests: list[Received] = field(default_factory=list)
    answers: list[int] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def reply(self) -> int:
        with self.lock:
            return self.answers.pop(0) if self.answers else 200

    def wait_for(self, predicate: Callable[[list[Received]], bool], timeout: float = 45.0) -> list[Received]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                seen = list(self.requests)
            if predicate(seen):
                return seen
            time.sleep(0.1)
        raise AssertionError(f"the receiver did not get what was expected in {timeout} s; it got {[(r.path, r.body[:200]) for r in seen]}")

    def at(self, path: str) -> list[Received]:
        with self.lock:
            return [r for r in self.requests if r.path == path]


def serve_receiver(receiver: Receiver) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("content-length") or 0)).decode("utf-8")
            with receiver.lock:
                receiver.requests.append(Received(self.path, {k.lower(): v for k, v in self.headers.items()}, body))
            status = receiver.reply()
            payload = b"ok" if status < 400 else b"not now"
            self.send_response(status)
            self.send_header("content-length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *_: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    receiver.url = f"http://127.0.0.1:{server.server_address[1]}"
    return server


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    found = Receiver()
    server = serve_receiver(found)
    yield found
    server.shutdown()
    server.server_close()


@dataclass(frozen=True)
class HookRuntime:
    url: str
    table: str

    @property
    def dead_letter_queue(self) -> str:
        return f"{self.table}-webhooks-dlq"  # local/webhooks.py names its queues after the table

    @property
    def event_bus(self) -> str:
        return f"{self.table}-events"


@pytest.fixture(scope="module")
def hook_runtime(server: str) -> Iterator[HookRuntime]:
    """Our runtime (its own table) allowed to deliver to 127.0.0.1, as ``mlflow server`` is below."""
    table = unique("hooks")
    with runtime_process({"TABLE_NAME": table, "BUCKET_NAME": unique("hooks"), **LOCAL_TARGETS}) as url:
        yield HookRuntime(url, table)


@pytest.fixture(scope="module")
def webhook_server(hook_runtime: HookRuntime) -> str:
    return hook_runtime.url


_SERVE = """
from werkzeug.serving import make_server
from mlflow.server import app
server = make_server("127.0.0.1", 0, app, threaded=True)
print(server.server_port, flush=True)
server.serve_forever()
"""


@pytest.fixture(scope="module")
def stock_webhook_server() -> Iterator[str]:
    """MLflow's own server (its Flask app, as ``tests/mlflow_reference.py`` runs it) on sqlite, with the same
    target settings, in a process of its own."""
    workdir = Path(tempfile.mkdtemp(prefix="mlflow-webhooks-"))
    uri = migrated_sqlite(workdir / "mlflow.db")
    env = {
        **os.environ,
        **LOCAL_TARGETS,
        "_MLFLOW_SERVER_FILE_STORE": uri,
        "_MLFLOW_SERVER_REGISTRY_STORE": uri,
        "_MLFLOW_SERVER_ARTIFACT_ROOT": "mlflow-artifacts:/",
        "_MLFLOW_SERVER_ARTIFACT_DESTINATION": str(workdir / "artifacts"),
        "_MLFLOW_SERVER_SERVE_ARTIFACTS": "true",
        "MLFLOW_CRYPTO_KEK_PASSPHRASE": os.urandom(16).hex(),
    }
    for name in ("MLFLOW_TRACKING_URI", "MLFLOW_REGISTRY_URI", "MLFLOW_TRACKING_USERNAME", "MLFLOW_TRACKING_PASSWORD"):
        env.pop(name, None)
    log = open(workdir / "server.log", "wb")
    process = subprocess.Popen([sys.executable, "-c", _SERVE], cwd=workdir, env=env, stdout=subprocess.PIPE, stderr=log, text=True)
    assert process.stdout is not None
    url = f"http://127.0.0.1:{int(process.stdout.readline())}"
    try:
        wait_healthy(url, process, timeout=120, log=workdir / "server.log")  # type: ignore[arg-type]
        yield url
    finally:
        stop_process(process)  # type: ignore[arg-type]
        log.close()
