"""Model versions by run (the gsi3 index): shared by the registry and the UI's GraphQL run pages."""

from __future__ import annotations

from typing import Any

from serverless_mlflow import table
from serverless_mlflow.schema import ENTITY

MODEL_VERSION = ENTITY["model_version"]


def run_version_hits(run_id: str) -> list[dict[str, Any]]:
    """Versions registered from ``run_id``, as the index holds them (eventually consistent: callers that
    must be exact re-read each hit from the table)."""
    return table.query(**MODEL_VERSION.query("by_run", run_id=run_id))
