"""The response of a paged list or search, as MLflow's server writes it."""

from __future__ import annotations

from typing import Any


def page_response(field: str, rows: Any, token: str | None) -> dict[str, Any]:
    """``{field: rows, "next_page_token": token}`` without empty parts: proto3 JSON leaves out an empty
    repeated field and an unset token, so a last page has no ``next_page_token`` and an empty page is ``{}``."""
    out: dict[str, Any] = {}
    if rows:
        out[field] = rows
    if token:
        out["next_page_token"] = token
    return out
