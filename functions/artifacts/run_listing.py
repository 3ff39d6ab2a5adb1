"""``GET /api/2.0/mlflow/artifacts/list`` and ``GET /logged-models/<id>/artifacts/directories``: a run's or a
logged model's artifacts, as older clients and the UI list them.

MLflow's ``list_artifacts_impl`` validates ``path`` (400 "Invalid path" for ``..``, absolute paths, ``#``)
before it reads the run, then lists the run's artifact root. A root under ``mlflow-artifacts:/`` (every
experiment created without an explicit location) is the stack's bucket: one S3 ListObjectsV2 per 1000
entries under the root, entries answered with run-relative paths (``model/MLmodel``), as MLflow's
``_list_artifacts_for_proxied_run_artifact_root`` does. No artifact byte passes through the function.
"""

from __future__ import annotations

import posixpath
from typing import Any

from serverless_mlflow.artifact_locations import decoded_path, relative_path, safe_relative_path
from serverless_mlflow.errors import invalid
from serverless_mlflow.store import logged_models, runs

from . import storage


def list_run_artifacts(run_id: str, path: str | None) -> dict[str, Any]:
    """``{"root_uri", "files"}``; ``path=None`` lists the root. ``files`` is left out when empty (proto3 JSON)."""
    relative = safe_relative_path(path) if path is not None else None
    run = runs.get_run_item(run_id)
    return _list_under_root(run.get("artifact_uri") or "", path, relative, f"run {run_id}")


def list_logged_model_artifacts(model_id: str, path: str | None) -> dict[str, Any]:
    """``GET /logged-models/<id>/artifacts/directories``: the same listing under a logged model's location
    (MLflow's ``_list_logged_model_artifacts``; a deleted or unknown model is 404)."""
    relative = safe_relative_path(path) if path is not None else None
    model = logged_models.get_logged_model(model_id)
    return _list_under_root(model.get("artifact_location") or "", path, relative, f"logged model {model_id}")


def _list_under_root(root_uri: str, path: str | None, relative: str | None, owner: str) -> dict[str, Any]:
    root = relative_path(root_uri)
    if root is None:
        # MLflow's server would list an s3:// (or other) root with its own credentials; this function's role
        # is scoped to the artifact prefix of the stack's bucket, so such roots are listed by the client.
        raise invalid(
            f"The artifacts of {owner} are stored at '{root_uri}', outside the server's artifact store: "
            "list them from that location directly (mlflow.artifacts.list_artifacts does)."
        )
    directory = posixpath.join(root, relative) if relative else root
    # Entries are named as MLflow names them: joined to the path as given (decoded, not normalised).
    given = decoded_path(path) if path else ""
    files = [
        {**entry, "path": posixpath.join(given, entry["path"]) if given else entry["path"]} for entry in storage.list_artifacts(directory)
    ]
    return {"root_uri": root_uri, "files": files} if files else {"root_uri": root_uri}
