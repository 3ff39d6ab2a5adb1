"""The web UI's static files: the React build shipped in the mlflow wheel (``mlflow/server/js/build``).

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
import importlib.util
import mimetypes
from pathlib import Path

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


def wheel_build_dir() -> Path:
    """The UI build inside the installed mlflow package (located without importing mlflow)."""
    spec = importlib.util.find_spec("mlflow")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("mlflow is not installed: the web UI is served from its wheel (pip install -r requirements-dev.txt)")
    build = Path(next(iter(spec.submodule_search_locations))) / "server" / "js" / "build"
    if not (build / INDEX).is_file():
        raise RuntimeError(f"the installed mlflow has no UI build at {build}")
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
