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
# Headroom kept under that limit, for the shared layer's growth between a package build and a deploy.
HEADROOM_BYTES = 4 * 1024 * 1024
# Files no worker code path loads, left out to fit Lambda's limit (litellm alone is about 50 MB):
# the libraries' own test suites (a third of pandas); litellm's proxy admin UI and Swagger assets (static files
# its proxy server serves; the SDK MLflow calls never reads them); hf_xet, huggingface_hub's optional Xet
# download backend (tokenizers' hub downloads fall back to HTTP without it).
PRUNED = ("pandas/tests", "numpy/*/tests", "numpy/tests", "litellm/proxy/_experimental/out", "litellm/proxy/swagger", "hf_xet")


def shared_layer_bytes() -> int:
    """The unzipped size of the shared layer the worker also mounts (its files as synth bundles them)."""
    from infra.constructs.layer import layer_files, vendored_distributions

    return sum(source.stat().st_size for source, _ in layer_files(vendored_distributions()))


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
    for pruned in [path for pattern in PRUNED for path in staging.glob(pattern)]:
        shutil.rmtree(pruned)
    shutil.copytree(FUNCTIONS_DIR / PACKAGE, staging / PACKAGE, ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "requirements.txt"))
    size = sum(path.stat().st_size for path in staging.rglob("*") if path.is_file())
    layer = shared_layer_bytes()
    if size + layer > MAX_UNZIPPED_BYTES - HEADROOM_BYTES:
        raise RuntimeError(
            f"the job worker package is {size / 2**20:.0f} MB unzipped and the shared layer {layer / 2**20:.0f} MB: "
            f"too close to Lambda's 250 MB for code and layers together"
        )
    print(f"job worker package: {size / 2**20:.1f} MB unzipped (+ shared layer {layer / 2**20:.1f} MB; Lambda's limit 250 MB)")
    (staging / COMPLETE_MARKER).write_text(pinned_mlflow_version() + "\n")
    shutil.rmtree(target, ignore_errors=True)
    staging.rename(target)
    return target


if __name__ == "__main__":
    print(build())
