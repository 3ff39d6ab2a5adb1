"""``POST /ajax-api/2.0/mlflow/upload-artifact``: the web UI's one-request upload of a small file into a run.

MLflow's ``upload_artifact_handler`` takes the file as the request body (up to 10 MB) and writes it under the
run's artifact root itself. A function's request is capped at 6 MB (a binary body travels base64-encoded), so
the body is accepted up to the limit the proxied PUT has (``storage.max_proxy_upload_bytes``, 4 MiB) and
written to S3 by the function; a larger one is refused with MLflow's own words for an oversized artifact. The UI
sends small JSON documents here (evaluation tables); clients upload through presigned URLs.
"""

from __future__ import annotations

import posixpath

from serverless_mlflow.core.errors import invalid
from serverless_mlflow.store import runs
from serverless_mlflow.store.artifact_locations import relative_path, safe_relative_path

from . import storage

MLFLOW_MAX_BYTES = 10 * 1024 * 1024


def _too_large(limit: int) -> Exception:
    megabytes = limit / (1024 * 1024)
    shown = f"{megabytes:g}MB" if megabytes >= 1 else f"{limit} bytes"
    return invalid(f"Artifact size is too large. Max size is {shown}.")


def upload_run_artifact(run_uuid: str | None, path: str | None, content_length: int | None, body: bytes, content_type: str | None) -> None:
    """MLflow's checks in its order (run_uuid, path, declared size, data, size, run), then one PutObject."""
    if not run_uuid:
        raise invalid("Request must specify run_uuid.")
    if not path:
        raise invalid("Request must specify path.")
    relative = safe_relative_path(path)
    limit = min(MLFLOW_MAX_BYTES, storage.max_proxy_upload_bytes())
    if content_length and content_length > MLFLOW_MAX_BYTES:
        raise _too_large(MLFLOW_MAX_BYTES)
    if not body:
        raise invalid("Request must specify data.")
    if len(body) > limit:
        raise _too_large(limit)
    run = runs.get_run_item(run_uuid)
    root = relative_path(run.get("artifact_uri"))
    if root is None:
        # MLflow's server writes such roots (s3://... locations) with its own credentials; these functions may
        # write under the stack's artifact prefix only.
        raise invalid(
            f"Run '{run_uuid}' stores its artifacts at '{run.get('artifact_uri')}', outside the server's artifact store: "
            "log the file from the client (mlflow.log_artifact) instead."
        )
    storage.upload_small(posixpath.join(root, relative) if relative else root, body, content_type)
