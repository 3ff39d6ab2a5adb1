"""Build the job worker's deployment package: ``functions/job_worker`` plus ``mlflow-skinny`` (pinned to the
project's mlflow) and ``functions/job_worker/requirements.txt``, as wheels for Lambda's arm64 Python 3.14, without
Docker (``pip install --platform manylinux2014_aarch64 --only-binary=:all:``).

The result is ``build/job_worker/`` (``infra.constructs.jobs.worker_code`` ships it when it is complete; without it
the worker deploys without mlflow and its demo kinds fail). ``make deploy`` builds it first.

    python -m tools.job_worker_package
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from infra import FUNCTIONS_DIR, ROOT
from infra.constructs.web_ui import pinned_mlflow_version

PACKAGE = "job_worker"
BUILD_DIR = ROOT / "build" / PACKAGE
COMPLETE_MARKER = ".complete"
PLATFORMS = ("manylinux2014_aarch64", "manylinux_2_28_aarch64")
PYTHON_VERSION = "3.14"
# Lambda's limit for a function's unzipped code and layers together (the shared layer takes its part).
MAX_UNZIPPED_BYTES = 250 * 1024 * 1024


def build(target: Path = BUILD_DIR) -> Path:
    staging = target.with_name(target.name + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    platforms = [arg for platform in PLATFORMS for arg in ("--platform", platform)]
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            # Lambda's code directory is read-only: byte code compiled here would only double the size (250 MB cap).
            "--no-compile",
            "--target",
            str(staging),
            *platforms,
            "--only-binary=:all:",
            "--python-version",
            PYTHON_VERSION,
            "--implementation",
            "cp",
            f"mlflow-skinny=={pinned_mlflow_version()}",
            "-r",
            str(FUNCTIONS_DIR / PACKAGE / "requirements.txt"),
        ],
        check=True,
    )
    for tests in [*staging.glob("pandas/tests"), *staging.glob("numpy/*/tests"), *staging.glob("numpy/tests")]:
        shutil.rmtree(tests)  # the libraries' own test suites: a third of pandas
    shutil.copytree(FUNCTIONS_DIR / PACKAGE, staging / PACKAGE, ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "requirements.txt"))
    size = sum(path.stat().st_size for path in staging.rglob("*") if path.is_file())
    if size > MAX_UNZIPPED_BYTES * 0.8:
        raise RuntimeError(f"the job worker package is {size / 2**20:.0f} MB unzipped: too close to Lambda's 250 MB with the layer")
    (staging / COMPLETE_MARKER).write_text(pinned_mlflow_version() + "\n")
    shutil.rmtree(target, ignore_errors=True)
    staging.rename(target)
    return target


if __name__ == "__main__":
    print(build())
