"""Model versions by run (the gsi3 index): shared by the registry and the UI's GraphQL run pages."""

from __future__ import annotations

from typing import Any

from serverless_mlflow.request import workspace as request_workspace
from serverless_mlflow.storage import table
from serverless_mlflow.storage.schema import ENTITY, PK, model_scope

MODEL_VERSION = ENTITY["model_version"]


def run_version_hits(run_id: str) -> list[dict[str, Any]]:
    """Versions registered from ``run_id`` in the request's workspace, as the index holds them (eventually
    consistent: callers that must be exact re-read each hit from the table).

    The index is global: a version of another workspace's model (registered from this run with a source that
    names no run, which MLflow allows) is left out, as MLflow's workspace-aware store filters by workspace."""
    wanted = model_scope(request_workspace.current())
    hits = table.query(**MODEL_VERSION.query("by_run", run_id=run_id))
    return [hit for hit in hits if MODEL_VERSION.parse_pk(hit[PK], fields=("model_scope",))["model_scope"] == wanted]
