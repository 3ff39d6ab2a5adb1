"""The web UI's static files: the React build shipped in the mlflow wheel (``mlflow/server/js/build``).

``UI_MLFLOW_VERSION`` is the one pin of the bundled UI: the synth and the local runtime both take the build from
that wheel (downloaded once with pip into ``build/ui-wheel/``), whatever mlflow the project itself runs (3.17.2,
since 3.18.0's own dependencies are not on the package index yet). It moves to the newest release whose client tests
(``make test-clients``) and browser tests (``make test-ui``) pass.

Deployed, the build is staged at synth (every file gzipped, deterministically) and copied to the stack's
bucket under ``UI_PREFIX`` by a CDK BucketDeployment; the ``ui`` function serves the gzipped bytes as they
are (``Content-Encoding: gzip``). That keeps the 4.4 MB main bundle (1.2 MB gzipped, 1.6 MB base64) far
below Lambda's 6 MB response cap, costs no compression per request, and keeps the URLs the browser caches
stable (presigned redirects would expire with the signing role's session and defeat the cache).
Locally the ``ui`` function reads the wheel's build directly (``UI_STATIC_DIR``) and gzips it once.

This module holds what both sides must agree on: where the build is, the key prefix, content types and
cache headers. It never imports mlflow (the Lambda layer has none); it only locates the installed package.
"""

from __future__ import annotations

import gzip
import mimetypes
import os
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

# The mlflow release whose web UI the stack serves (see the module docstring).
UI_MLFLOW_VERSION = "3.18.0"
_WHEEL_BUILD = "mlflow/server/js/build/"

# Key prefix of the staged build in the stack's bucket (the ui function may read nothing else).
UI_PREFIX = "ui/"
# MLflow's own max-age for /static-files (28 days); the bundle names carry content hashes.
STATIC_CACHE_CONTROL = "public, max-age=2419200"
# index.html names the current bundles: always revalidated, so a new deploy is picked up at once.
INDEX_CACHE_CONTROL = "no-cache"
INDEX = "index.html"

_TYPES = {
    ".js": "application/javascript",
    ".mjs": "application/javascript",
    ".css": "text/css",
    ".html": "text/html",
    ".json": "application/json",
    ".map": "application/json",
    ".svg": "image/svg+xml",
    ".ico": "image/vnd.microsoft.icon",
    ".png": "image/png",
    ".woff": "font/woff",
    ".woff2": "font/woff2",
    ".ttf": "font/ttf",
    ".wasm": "application/wasm",
    ".txt": "text/plain",
}
_TEXT_TYPES = ("text/", "application/javascript", "application/json", "image/svg+xml")


def content_type(path: str) -> str:
    suffix = Path(path).suffix.lower()
    kind = _TYPES.get(suffix) or mimetypes.guess_type(path)[0] or "application/octet-stream"
    return f"{kind}; charset=utf-8" if kind.startswith(_TEXT_TYPES) else kind


def compress(data: bytes) -> bytes:
    """Gzip with a fixed mtime: the same build always stages to the same bytes (stable asset hash)."""
    return gzip.compress(data, compresslevel=9, mtime=0)


def wheel_build_dir(version: str = UI_MLFLOW_VERSION) -> Path:
    """The UI build of the pinned mlflow wheel, extracted once under ``build/ui-wheel/<version>`` (``UI_WHEEL_CACHE``
    moves it). Runs at synth and in the local runtime only, never in a Lambda function."""
    cache = Path(os.environ.get("UI_WHEEL_CACHE") or Path.cwd() / "build" / "ui-wheel") / version
    build = cache / _WHEEL_BUILD
    if (build / INDEX).is_file():
        return build
    with tempfile.TemporaryDirectory() as download:
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "-q",
                "--no-deps",
                "--disable-pip-version-check",
                f"mlflow=={version}",
                "-d",
                download,
            ],
            check=True,
        )
        (wheel,) = Path(download).glob("mlflow-*.whl")
        cache.parent.mkdir(parents=True, exist_ok=True)
        # Extract beside the cache and rename: concurrent first starts (test workers) each finish or find it done.
        staging = Path(tempfile.mkdtemp(dir=cache.parent, prefix=f".{version}-"))
        with zipfile.ZipFile(wheel) as archive:
            archive.extractall(staging, [name for name in archive.namelist() if name.startswith(_WHEEL_BUILD)])
        try:
            staging.rename(cache)
        except OSError:
            if not (build / INDEX).is_file():
                raise
    if not (build / INDEX).is_file():
        raise RuntimeError(f"the mlflow {version} wheel has no UI build at {_WHEEL_BUILD}")
    return build


def build_files(build: Path) -> list[Path]:
    return sorted(path for path in build.rglob("*") if path.is_file())


def stage(build: Path, destination: Path) -> Path:
    """Write every file of ``build`` gzipped under ``destination`` (same relative paths). Idempotent:
    a completed staging (marker file beside it) is reused, so repeated synths cost nothing."""
    marker = destination.with_name(destination.name + ".staged")
    if marker.is_file():
        return destination
    for source in build_files(build):
        target = destination / source.relative_to(build)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(compress(source.read_bytes()))
    marker.write_text("ok\n")
    return destination
