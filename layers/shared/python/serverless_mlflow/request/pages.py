"""Paged lists and searches as MLflow's server answers them: the response, and its base64 JSON page tokens."""

from __future__ import annotations

import base64
from typing import Any

from serverless_mlflow.core.errors import invalid
from serverless_mlflow.request import json_text


def page_response(field: str, rows: Any, token: str | None) -> dict[str, Any]:
    """``{field: rows, "next_page_token": token}`` without empty parts: proto3 JSON leaves out an empty
    repeated field and an unset token, so a last page has no ``next_page_token`` and an empty page is ``{}``."""
    out: dict[str, Any] = {}
    if rows:
        out[field] = rows
    if token:
        out["next_page_token"] = token
    return out


def token_json(page_token: str) -> Any:
    """A base64 JSON page token, parsed; MLflow's messages for a token that is not base64 or not JSON (the
    caller checks the parsed value and answers "Invalid page token, parsed value=..." itself)."""
    try:
        decoded = base64.b64decode(page_token)
    except (TypeError, ValueError):  # binascii.Error is a ValueError; so is a token with non-ASCII characters
        raise invalid("Invalid page token, could not base64-decode") from None
    try:
        return json_text.loads(decoded)
    except ValueError:
        raise invalid(f"Invalid page token, decoded value={decoded}") from None
