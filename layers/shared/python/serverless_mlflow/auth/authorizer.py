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
from typing import Any

from serverless_mlflow.auth import store


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


def authorize(header: str | None) -> dict[str, Any]:
    found = credentials(header)
    user = store.authenticate(*found) if found else None
    if user is None:
        return {"isAuthorized": True, "context": {"authenticated": False}}
    return {"isAuthorized": True, "context": {"authenticated": True, "username": user.username, "is_admin": user.is_admin}}


def header_of(event: dict[str, Any]) -> str | None:
    headers = {k.lower(): v for k, v in (event.get("headers") or {}).items()}
    if headers.get("authorization"):
        return headers["authorization"]
    sources = event.get("identitySource") or []
    return sources[0] if sources else None


def lambda_handler(event: dict[str, Any], _context: Any) -> dict[str, Any]:
    return authorize(header_of(event))
