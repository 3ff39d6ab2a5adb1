"""Listing artifacts under the stack's bucket: ``artifacts/list`` (REST, the artifacts function) and GraphQL's
``mlflowListArtifacts`` (the runs function) answer from here, so both list exactly alike.

MLflow's ``list_artifacts_impl`` validates ``path`` (400 "Invalid path" for ``..``, absolute paths, ``#``)
before it reads the run, then lists the run's artifact root. A root under ``mlflow-artifacts:/`` (every
experiment created without an explicit location) is the stack's bucket: one S3 ListObjectsV2 per 1000
entries under the root, entries answered with run-relative paths (``model/MLmodel``), as MLflow's
``_list_artifacts_for_proxied_run_artifact_root`` does. Only names and sizes are read: no artifact byte passes
through a function, and a lister's role needs ``s3:ListBucket`` on the artifact prefix, no object action.
"""

from __future__ import annotations

import posixpath
from typing import Any

from serverless_mlflow.core.errors import invalid
from serverless_mlflow.storage import s3
from serverless_mlflow.store import logged_models, runs
from serverless_mlflow.store.artifact_locations import artifact_key, artifacts_prefix, decoded_path, relative_path, safe_relative_path


def _dir_prefix(relative_dir: str) -> str:
    if relative_dir:
        return artifact_key(relative_dir) + "/"
    prefix = artifacts_prefix()
    return f"{prefix}/" if prefix else ""


def list_directory(path: str | None) -> list[dict[str, Any]]:
    """Entries directly under ``path`` (relative to the ``mlflow-artifacts:/`` root): basenames, ``is_dir``,
    ``file_size`` for files (MLflow's ``_list_artifacts_mlflow_artifacts``). A file path or a missing
    directory lists as empty."""
    relative_dir = safe_relative_path(path) if path else ""
    prefix = _dir_prefix(relative_dir)
    files: list[dict[str, Any]] = []
    paginator = s3.client().get_paginator("list_objects_v2")
    # The paginator follows continuation tokens: directories of more than 1000 entries list completely.
    for page in paginator.paginate(Bucket=s3.bucket_name(), Prefix=prefix, Delimiter="/"):
        for common in page.get("CommonPrefixes", []):
            name = common["Prefix"][len(prefix) :].rstrip("/")
            if name:
                files.append({"path": name, "is_dir": True})
        for obj in page.get("Contents", []):
            name = obj["Key"][len(prefix) :]
            # Skip the directory's own marker object ("dir/") that some tools create.
            if name and not name.endswith("/"):
                files.append({"path": name, "is_dir": False, "file_size": int(obj["Size"])})
    return sorted(files, key=lambda entry: entry["path"])


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
        # MLflow's server would list an s3:// (or other) root with its own credentials; the functions' roles
        # are scoped to the artifact prefix of the stack's bucket, so such roots are listed by the client.
        raise invalid(
            f"The artifacts of {owner} are stored at '{root_uri}', outside the server's artifact store: "
            "list them from that location directly (mlflow.artifacts.list_artifacts does)."
        )
    directory = posixpath.join(root, relative) if relative else root
    # Entries are named as MLflow names them: joined to the path as given (decoded, not normalised).
    given = decoded_path(path) if path else ""
    files = [{**entry, "path": posixpath.join(given, entry["path"]) if given else entry["path"]} for entry in list_directory(directory)]
    return {"root_uri": root_uri, "files": files} if files else {"root_uri": root_uri}
