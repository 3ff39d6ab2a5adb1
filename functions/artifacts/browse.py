"""What the web UI reads of artifacts: single
files of runs, model versions and logged models (``/get-artifact`` and friends).

MLflow's server streams those files itself; here every file answers with a redirect to a short-lived
presigned S3 URL (the bucket's CORS rule admits the API's origin), so no artifact byte passes through a
function and no file size meets Lambda's 6 MB cap. Text files are signed ``inline`` as ``text/plain``:
viewable in the browser, never rendered as HTML or script on any origin. Model-version and logged-model files
asked with ``presigned=true`` answer MLflow's JSON ``{"url", "headers", "file_size"}`` instead (the 3.18 UI reads
a model version's MLmodel that way), as MLflow does on an S3 artifact store.
"""

from __future__ import annotations

import posixpath

from serverless_mlflow.core.errors import MlflowError, invalid, not_found
from serverless_mlflow.request import workspace as request_workspace
from serverless_mlflow.storage import table
from serverless_mlflow.storage.schema import ENTITY, model_scope
from serverless_mlflow.store import logged_models, runs
from serverless_mlflow.store.artifact_locations import relative_path, safe_relative_path

MODEL_VERSION = ENTITY["model_version"]
MAX_VERSION = 10**10


def _served_root(uri: str | None, what: str) -> str:
    """The bucket-relative root of an ``mlflow-artifacts:`` location; other schemes are not reachable here."""
    root = relative_path(uri)
    if root is None:
        raise MlflowError(
            f"{what} has artifact location {uri!r}: only 'mlflow-artifacts:' locations are served by this server.",
            "INVALID_PARAMETER_VALUE",
        )
    return root


def _join(root: str, path: str) -> str:
    relative = safe_relative_path(path)
    return posixpath.join(root, relative) if relative else root


def run_artifact_path(run_id: str, path: str) -> str:
    """The bucket-relative path of one of a run's artifact files."""
    safe_relative_path(path)  # MLflow validates the path before it looks the run up
    run = runs.get_run_item(run_id)
    return _join(_served_root(run.get("artifact_uri"), f"Run '{run_id}'"), path)


def model_version_artifact_path(name: str, version: str, path: str) -> str:
    safe_relative_path(path)  # before the version's lookup, as MLflow
    try:
        number = int(version)
    except (TypeError, ValueError):
        raise invalid(f"Model version must be an integer, got '{version}'") from None
    item = (
        table.get(MODEL_VERSION.key(model_name=name, model_scope=model_scope(request_workspace.current()), version=number))
        if 1 <= number <= MAX_VERSION
        else None
    )
    if item is None or item.get("deleting"):
        raise not_found(f"Model Version (name={name}, version={number}) not found")
    uri = item.get("storage_location") or item.get("source")
    return _join(_served_root(uri, f"Model version {name}/{number}"), path)


def logged_model_artifact_path(model_id: str, path: str) -> str:
    item = logged_models.get_logged_model(model_id)
    return _join(_served_root(item.get("artifact_location"), f"Logged model '{model_id}'"), path)
