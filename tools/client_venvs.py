"""The supported mlflow client versions, one venv each, for ``make test-clients``.

``python -m tools.client_venvs [VERSION ...]`` creates ``build/clients/<version>/`` (a venv with that mlflow and
pytest) for each version that lacks one and prints the venvs' directories. The list of versions lives here only:
the Makefile, the client tests and the docs generator read it.

mlflow 3.18.0's own dependencies ``mlflow-skinny`` and ``mlflow-tracing`` 3.18.0 are not on the package index yet, so
its venv gets mlflow 3.17.2 with its dependencies first and then the 3.18.0 wheel with ``--no-deps`` over it.
"""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENVS = ROOT / "build" / "clients"
# Test tooling inside each client venv (the client tests run under the client's own interpreter).
TEST_PACKAGES = ("pytest==9.0.3",)


@dataclass(frozen=True)
class ClientVersion:
    version: str
    # Installed (with its dependencies) before ``version``, which then goes in with --no-deps.
    base: str | None = None
    # Pins a user of this version needs today (see the README's client range).
    extra: tuple[str, ...] = ()

    @property
    def major(self) -> int:
        return int(self.version.split(".")[0])

    @property
    def directory(self) -> Path:
        return VENVS / self.version

    @property
    def python(self) -> Path:
        return self.directory / "bin" / "python"

    @property
    def requirements(self) -> list[str]:
        return [f"mlflow=={self.base or self.version}", *self.extra, *TEST_PACKAGES]


# Oldest first. 2.22.x is the last 2.x line; 3.4 and 3.10 are widely pinned 3.x releases; 3.17.2 is the
# project's own pin; 3.18.0 is the newest release.
CLIENT_VERSIONS: tuple[ClientVersion, ...] = (
    # mlflow 2.22's span processor never calls SimpleSpanProcessor.__init__; opentelemetry-sdk 1.34+ reads an
    # attribute set there, so every @mlflow.trace fails in the client. The sdk of 2.22's time works.
    ClientVersion("2.22.5", extra=("opentelemetry-api==1.33.1", "opentelemetry-sdk==1.33.1")),
    ClientVersion("3.4.0"),
    ClientVersion("3.10.1"),
    ClientVersion("3.17.2"),
    # Flask-WTF (mlflow[auth]): the browser tests run 3.18.0's own basic-auth server from this venv.
    ClientVersion("3.18.0", base="3.17.2", extra=("flask-wtf==1.3.0",)),
)
_STAMP = ".installed"


def by_version(version: str) -> ClientVersion:
    for client in CLIENT_VERSIONS:
        if client.version == version:
            return client
    raise SystemExit(f"unknown client version {version!r}; supported: {[c.version for c in CLIENT_VERSIONS]}")


def ensure(client: ClientVersion) -> Path:
    """The client's venv, created and installed once (a stamp file with the requirements marks a complete install)."""
    stamp = client.directory / _STAMP
    wanted = " ".join([*client.requirements, client.version])
    if stamp.exists() and stamp.read_text() == wanted:
        return client.directory
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(client.directory)], check=True)
    pip = [str(client.python), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    subprocess.run([*pip, *client.requirements], check=True)
    if client.base is not None:
        subprocess.run([*pip, "--no-deps", f"mlflow=={client.version}"], check=True)
    installed = subprocess.run(
        [str(client.python), "-c", "import mlflow; print(mlflow.__version__)"], check=True, capture_output=True, text=True
    ).stdout.strip()
    if installed != client.version:
        raise SystemExit(f"{client.directory}: mlflow {installed} installed, {client.version} expected")
    stamp.write_text(wanted)
    return client.directory


def main(argv: list[str]) -> None:
    chosen = [by_version(v) for v in argv] if argv else list(CLIENT_VERSIONS)
    for client in chosen:
        print(ensure(client), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
