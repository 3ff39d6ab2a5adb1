"""S3 access for every feature that needs the stack's bucket (artifacts, spilled trace spans).

Two clients: ``client()`` talks to S3 from the function (``S3_ENDPOINT_URL`` when set: moto locally),
``presign_client()`` signs URLs that the *MLflow client* will call, so its endpoint must be reachable
from the user's machine (``S3_PRESIGN_ENDPOINT_URL``, defaulting to ``S3_ENDPOINT_URL``). Signing is
local (no request), so a second client costs nothing. Every S3 call is counted in ``STATS``.
"""

from __future__ import annotations

import os
import threading
from typing import Any

from serverless_mlflow.storage.stats import Stats

# Counts S3 API calls by operation (benchmarks report them next to the DynamoDB numbers).
STATS = Stats()

_lock = threading.Lock()
# Keyed by endpoint too: a process that starts a second local runtime gets clients for its endpoint.
_clients: dict[tuple[str, str | None], Any] = {}


def bucket_name() -> str:
    return os.environ["BUCKET_NAME"]


def _build(endpoint_url: str | None) -> Any:
    import boto3
    from botocore.config import Config

    config = Config(
        # SigV4 everywhere: presigned URLs for regional buckets and KMS-encrypted objects need it.
        signature_version="s3v4",
        # A custom endpoint (moto, MinIO, LocalStack) rarely resolves <bucket>.<host>; AWS prefers virtual hosts.
        s3={"addressing_style": "path" if endpoint_url else "virtual"},
        retries={"mode": "standard", "max_attempts": 5},
        max_pool_connections=32,
    )
    s3 = boto3.client("s3", endpoint_url=endpoint_url or None, config=config)
    s3.meta.events.register("after-call.s3", _count)
    return s3


def _count(model: Any = None, **_: Any) -> None:
    if model is not None:
        STATS.record(model.name)


def _cached(name: str, endpoint_url: str | None) -> Any:
    key = (name, endpoint_url)
    with _lock:
        if key not in _clients:
            _clients[key] = _build(endpoint_url)
        return _clients[key]


def client() -> Any:
    """The S3 client for calls made by the function itself."""
    return _cached("direct", os.environ.get("S3_ENDPOINT_URL"))


def presign_client() -> Any:
    """The client that signs URLs handed to MLflow clients (their endpoint must be reachable by them)."""
    return _cached("presign", os.environ.get("S3_PRESIGN_ENDPOINT_URL") or os.environ.get("S3_ENDPOINT_URL"))


def reset_clients() -> None:
    """Forget cached clients (the local runtime and tests switch endpoints)."""
    with _lock:
        _clients.clear()


def error_code(error: Exception) -> str:
    """The S3 error code of a botocore ClientError ('404' for HEAD requests, which carry no body)."""
    response = getattr(error, "response", None) or {}
    return str(response.get("Error", {}).get("Code", ""))
