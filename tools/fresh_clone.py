"""A fresh clone of this checkout and ``make serve`` in it, as a newcomer runs them (``tests/newcomer`` and the
start-up section of ``make bench``).

The clone is ``git clone`` of the checkout with its uncommitted changes to tracked files applied (so a developer
measures what they are about to commit; CI's checkout has none). It builds its own ``.venv`` and
``node_modules`` from the machine's pip and npm caches. The environment is the caller's without the variables
a test or bench session sets for itself, and without any venv on ``PATH``.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SERVE_TIMEOUT_SECONDS = 1200  # set-up on a loaded 2-core machine (about a minute when it is quiet)
SESSION_VARIABLES = (
    "MLFLOW_",
    "DYNAMODB_",
    "S3_ENDPOINT_URL",
    "KMS_",
    "TABLE_NAME",
    "BUCKET_NAME",
    "STREAM_CHECKPOINT_DIR",
    "POWERTOOLS_",
    "AWS_",
    "UI_STATIC_DIR",
    "GATEWAY_",
    "AUTHORIZATION",
    "PYTEST",
    "PYTHONPATH",
    "VIRTUAL_ENV",
    "PORT",
    # `make test` runs this from inside make: a newcomer's terminal has no outer make, whose level and flags would
    # make the inner `make serve` print "Entering directory" lines.
    "MAKE",
    "MFLAGS",
    "INDEXER_MODE",
    "LOG_LEVEL",
)


def clone_checkout(destination: Path) -> Path:
    subprocess.run(["git", "clone", "-q", str(ROOT), str(destination)], check=True)
    changes = subprocess.run(["git", "-C", str(ROOT), "diff", "HEAD", "--binary"], check=True, capture_output=True).stdout
    if changes:
        subprocess.run(["git", "-C", str(destination), "apply", "--whitespace=nowarn"], input=changes, check=True)
    return destination


def newcomer_environment() -> dict[str, str]:
    path = os.pathsep.join(p for p in os.environ.get("PATH", "").split(os.pathsep) if "/.venv" not in p)
    env = {k: v for k, v in os.environ.items() if not k.startswith(SESSION_VARIABLES)}
    env["PATH"] = path
    return env


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def serving(clone: Path, env: dict[str, str], log: Path, command: str = "make serve", port: int | None = None) -> Iterator[str]:
    """Run ``command`` (bash) in the clone with ``PORT`` set until it prints that it listens; yields its URL,
    then stops it and everything it started (its own process group)."""
    port = port or free_port()
    url = f"http://127.0.0.1:{port}"
    with log.open("wb") as sink:
        server = subprocess.Popen(
            ["bash", "-c", command],
            cwd=clone,
            env={**env, "PORT": str(port)},
            stdout=sink,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        started = time.monotonic()
        while f"listening on {url}" not in log.read_text(errors="replace"):
            if server.poll() is not None:
                raise RuntimeError(f"{command} exited with {server.returncode}:\n{log.read_text(errors='replace')[-3000:]}")
            if time.monotonic() - started > SERVE_TIMEOUT_SECONDS:
                raise TimeoutError(f"{command}: not serving after {SERVE_TIMEOUT_SECONDS} s:\n{log.read_text(errors='replace')[-3000:]}")
            time.sleep(0.2)
        yield url
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait(timeout=30)
