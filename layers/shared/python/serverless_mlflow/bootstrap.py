"""Items a new table needs before the first request: the Default experiment (id 0) and its name."""

from __future__ import annotations

from typing import Any

from serverless_mlflow import table
from serverless_mlflow.store.experiments import default_experiment_items


def bootstrap_items() -> list[dict[str, Any]]:
    return default_experiment_items()


def ensure_bootstrap_items() -> None:
    """Write each bootstrap item unless it exists (safe to run on every start and every deploy)."""
    for item in bootstrap_items():
        try:
            table.put(item, condition="attribute_not_exists(pk)")
        except table.ConditionFailed:
            pass
