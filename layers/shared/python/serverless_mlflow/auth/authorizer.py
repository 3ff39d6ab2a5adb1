"""The API Gateway Lambda authorizer (HTTP API, payload 2.0, simple responses) for ``authorization=basic``.

It always allows the request through and says in the context whether the credentials were valid: API
Gateway cannot add ``WWW-Authenticate`` to its own 401/403, so the feature function answers a bad
password with MLflow's 401 + ``WWW-Authenticate: Basic realm="mlflow"`` (what a browser needs for its
prompt). API Gateway caches the answer per Authorization header, so the scrypt check runs once per
cache period and client. A request without the header never gets here: API Gateway answers 401 itself.
Nothing here logs the header or the password.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import os
import secrets
import threading
import time
from typing import Any

from serverless_mlflow.auth import job_tokens, store
from serverless_mlflow.storage.table import deadline


def credentials(header: str | None) -> tuple[str, str] | None:
    """(username, password) from ``Authorization: Basic <b64>``; None for anything else."""
    if not header:
        return None
    scheme, _, value = header.strip().partition(" ")
    if scheme.lower() != "basic":
        return None
    try:
        decoded = base64.b64decode(value.strip(), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return None
    username, sep, password = decoded.partition(":")
    return (username, password) if sep else None


def authenticate(username: str, password: str) -> store.User | None:
    """The user of a right password, or of a valid job token for that user (``job_tokens``: the job runs with that
    user's own permissions) whose job is still live. A token that fails its check is still tried as a password, so no password is ever
    refused for its shape, and nothing wrong is accepted."""
    if job_tokens.is_token(password):
        job_id = job_tokens.verify(username, password)
        if job_id is not None and job_tokens.job_is_live(job_id, username):
            return store.get_user_or_none(username)
    return store.authenticate(username, password)


def authorize(header: str | None) -> dict[str, Any]:
    found = credentials(header)
    user = authenticate(*found) if found else None
    if user is None:
        return {"isAuthorized": True, "context": {"authenticated": False}}
    return {"isAuthorized": True, "context": {"authenticated": True, "username": user.username, "is_admin": user.is_admin}}


# Public routes have no authorizer in front of them (a browser must reach the page without credentials), so
# the function checks credentials sent to them itself; API Gateway's cache is not there, so this process keeps
# the answers as long as API Gateway would. Keys are an HMAC of the header under a key of this process: the
# cache never holds a password, nor a fast hash of one that could be searched offline.
DEFAULT_CACHE_SECONDS = 60.0
_CACHE_LIMIT = 1024
_cache: dict[bytes, tuple[float, dict[str, Any]]] = {}
_cache_lock = threading.Lock()
_cache_key = secrets.token_bytes(32)


def authorize_cached(header: str | None) -> dict[str, Any]:
    """``authorize``, with this process's cache of its answers (valid and invalid alike, as API Gateway's)."""
    if not header:
        return authorize(header)
    ttl = float(os.environ.get("AUTHORIZER_CACHE_SECONDS", DEFAULT_CACHE_SECONDS))
    key = hmac.new(_cache_key, header.encode("utf-8", "surrogatepass"), hashlib.sha256).digest()
    now = time.monotonic()
    with _cache_lock:
        cached = _cache.get(key)
    if cached is not None and cached[0] > now:
        return cached[1]
    answer = authorize(header)
    if ttl > 0:
        with _cache_lock:
            if len(_cache) >= _CACHE_LIMIT:
                _cache.clear()
            _cache[key] = (now + ttl, answer)
    return answer


def header_of(event: dict[str, Any]) -> str | None:
    headers = {k.lower(): v for k, v in (event.get("headers") or {}).items()}
    if headers.get("authorization"):
        return headers["authorization"]
    sources = event.get("identitySource") or []
    return sources[0] if sources else None


def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    # DynamoDB retries stop within the authorizer's own time limit, as in the API functions.
    with deadline.bound(context):
        return authorize(header_of(event))
