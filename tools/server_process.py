"""Servers as separate processes for the benchmarks that measure them from outside: the local runtime
(``python -m local``, the process ``make serve`` runs) and stock ``mlflow server`` on sqlite, each on a free
port; plus the resident memory of a process and of its child processes (the DynamoDB Local JVM), from /proc.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
# A bound for a server that neither answers nor exits (an exit is noticed at once), not an expectation: a
# loaded 2-core machine takes minutes to start one.
START_TIMEOUT_SECONDS = 600


@dataclass
class ServerProcess:
    url: str
    process: subprocess.Popen[bytes]

    @property
    def pid(self) -> int:
        return self.process.pid


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def rss_mb(pid: int) -> float:
    """Resident set size of one process (VmRSS), in MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def children(pid: int) -> list[int]:
    """Direct child processes (e.g. the DynamoDB Local JVM the runtime started)."""
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            text = (task / "children").read_text().split()
        except FileNotFoundError:
            continue  # a thread that ended while the tasks were listed
        found.extend(int(child) for child in text)
    return found


def wait_healthy(url: str, process: subprocess.Popen[bytes], timeout: float = START_TIMEOUT_SECONDS, log: Path | None = None) -> None:
    """Until ``url``/health answers 200; fails at once if the process exits (with the tail of its ``log``)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            tail = log.read_text(errors="replace")[-2000:] if log is not None else ""
            raise RuntimeError(f"{url}: server exited with {process.returncode} {tail}".rstrip())
        try:
            with urllib.request.urlopen(f"{url}/health", timeout=15) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.3)
    raise TimeoutError(f"{url} did not become healthy within {timeout} s")


def stop_process(process: subprocess.Popen[Any]) -> None:
    if process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        # A loaded machine can keep a server's shutdown slow: do not fail on it.
        process.kill()
        process.wait(timeout=10)


@contextmanager
def local_runtime_process(**env_overrides: str) -> Iterator[ServerProcess]:
    """``python -m local`` on its embedded engines (DynamoDB Local + moto S3) with a fresh table."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k not in ("DYNAMODB_ENDPOINT_URL", "S3_ENDPOINT_URL")}
    with tempfile.TemporaryDirectory(prefix="bench-checkpoints-") as checkpoints:
        env.update(
            PORT=str(port),
            TABLE_NAME=f"bench-{uuid.uuid4().hex[:8]}",
            STREAM_CHECKPOINT_DIR=checkpoints,
            LOG_LEVEL="ERROR",
            **env_overrides,
        )
        process = subprocess.Popen([sys.executable, "-m", "local"], cwd=ROOT, env=env, stdout=subprocess.DEVNULL)
        try:
            url = f"http://127.0.0.1:{port}"
            wait_healthy(url, process)
            yield ServerProcess(url, process)
        finally:
            stop_process(process)


@contextmanager
def mlflow_server_process() -> Iterator[ServerProcess]:
    """Stock ``mlflow server`` on a fresh sqlite file (one worker), artifacts on local disk."""
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="bench-mlflow-") as workdir:
        command = [
            str(Path(sys.executable).parent / "mlflow"),
            "server",
            "--backend-store-uri",
            f"sqlite:///{workdir}/mlflow.db",
            "--default-artifact-root",
            f"file://{workdir}/artifacts",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--workers",
            "1",
        ]
        process = subprocess.Popen(command, cwd=workdir, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            url = f"http://127.0.0.1:{port}"
            wait_healthy(url, process)
            yield ServerProcess(url, process)
        finally:
            stop_process(process)
