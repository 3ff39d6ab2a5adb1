"""Where artifacts of experiments, runs, logged models and traces live."""

from __future__ import annotations

import os


def default_experiment_artifact_location(experiment_id: str) -> str:
    """``mlflow-artifacts:/<id>``: the client then talks to our artifact routes (presigned S3)."""
    root = os.environ.get("DEFAULT_ARTIFACT_ROOT", "mlflow-artifacts:/").rstrip("/")
    return f"{root}/{experiment_id}"
