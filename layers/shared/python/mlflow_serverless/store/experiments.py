"""Experiment items: building, reading and the Default experiment."""

from __future__ import annotations

import time
from typing import Any

from mlflow_serverless import table
from mlflow_serverless.artifact_locations import default_experiment_artifact_location
from mlflow_serverless.schema import ENTITY

EXPERIMENT = ENTITY["experiment"]
EXPERIMENT_NAME = ENTITY["experiment_name"]
EXPERIMENT_TAG = ENTITY["experiment_tag"]

DEFAULT_EXPERIMENT_ID = "0"
DEFAULT_EXPERIMENT_NAME = "Default"
DEFAULT_WORKSPACE = "default"
ACTIVE = "active"
DELETED = "deleted"


def now_millis() -> int:
    return int(time.time() * 1000)


def experiment_item(
    experiment_id: str,
    name: str,
    artifact_location: str,
    creation_time: int,
    lifecycle_stage: str = ACTIVE,
    workspace: str = DEFAULT_WORKSPACE,
) -> dict[str, Any]:
    attributes = {
        "experiment_id": experiment_id,
        "name": name,
        "artifact_location": artifact_location,
        "lifecycle_stage": lifecycle_stage,
        "creation_time": creation_time,
        "last_update_time": creation_time,
        "workspace": workspace,
    }
    return EXPERIMENT.item(attributes, **attributes, experiment_num=int(experiment_id))


def name_claim_item(experiment_id: str, name: str, workspace: str = DEFAULT_WORKSPACE) -> dict[str, Any]:
    return EXPERIMENT_NAME.item({"experiment_id": experiment_id, "name": name}, workspace=workspace, name=name)


def default_experiment_items() -> list[dict[str, Any]]:
    created = now_millis()
    return [
        experiment_item(DEFAULT_EXPERIMENT_ID, DEFAULT_EXPERIMENT_NAME, default_experiment_artifact_location(DEFAULT_EXPERIMENT_ID), created),
        name_claim_item(DEFAULT_EXPERIMENT_ID, DEFAULT_EXPERIMENT_NAME),
    ]


def get_experiment_item(experiment_id: str) -> dict[str, Any] | None:
    return table.get(EXPERIMENT.key(experiment_id=experiment_id))
