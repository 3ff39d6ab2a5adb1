"""Refuse writes under a deleted run's artifact root, as MLflow refuses every other write to a deleted run."""

from __future__ import annotations

from typing import Any

from serverless_mlflow.core.errors import MlflowError
from serverless_mlflow.store import runs
from serverless_mlflow.store.artifact_locations import relative_path


def check_writable(relative: str) -> None:
    """``<exp>/<run_id>/artifacts/...`` of a deleted run -> 400 INVALID_PARAMETER_VALUE, before any S3 write.

    Costs nothing for paths that cannot be a run's (models/, traces/, ids that are not uuid hex) and one
    GetItem otherwise (the run locator is cached by warm functions).
    """
    segments = relative.split("/")
    if len(segments) < 3 or segments[2] != "artifacts":
        return
    run = _run_item(segments[1])
    if run is None:
        return
    root = relative_path(run.get("artifact_uri"))
    # Only the run's own root counts: the same id under another experiment is not that run's storage.
    if root is None or not (relative == root or relative.startswith(root + "/")):
        return
    if run.get("lifecycle_stage") != runs.ACTIVE:
        raise runs.run_not_active(run["run_id"], run.get("lifecycle_stage", ""))


def _run_item(run_id: str) -> dict[str, Any] | None:
    if runs.find_experiment_id(run_id) is None:  # not a run id, or no such run: not a run's root
        return None
    try:
        return runs.get_run_item(run_id)
    except MlflowError as error:
        if error.error_code == "RESOURCE_DOES_NOT_EXIST":
            return None
        raise
