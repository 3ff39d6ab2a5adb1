"""Model versions by run (the gsi3 index): shared by the registry and the UI's GraphQL run pages."""

from __future__ import annotations

from typing import Any

from serverless_mlflow import table


def run_version_hits(run_id: str) -> list[dict[str, Any]]:
    """Versions registered from ``run_id``, as the index holds them (eventually consistent: callers that
    must be exact re-read each hit from the table)."""
    return table.query(f"MVRUN#{run_id}", index="gsi3", pk_attr="gsi3pk", sk_attr="gsi3sk")
