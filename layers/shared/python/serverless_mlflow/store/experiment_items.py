"""Experiment items as they are written: the entities, their keys and attributes, and the default experiment.

Layout (see ``schema.py`` and ``experiments``): ``EXP#<id> / E#META`` and its tags ``E#TAG#<key>``; the name
claim ``EXPNAME#<ws>#<name>``; the copy of every experiment and tag in ``EXPLIST#<ws>``. Apart from the reads
and writes (``experiments``) so a writer (bootstrap, the experiments feature's renames and deletes) builds the
same items and keys without taking the store's reads.
"""

from __future__ import annotations

from typing import Any

from serverless_mlflow.core import clock
from serverless_mlflow.request import workspace as request_workspace
from serverless_mlflow.storage.schema import ENTITY
from serverless_mlflow.store.artifact_locations import default_experiment_artifact_location

EXPERIMENT = ENTITY["experiment"]
EXPERIMENT_NAME = ENTITY["experiment_name"]
EXPERIMENT_TAG = ENTITY["experiment_tag"]
EXPERIMENT_ENTRY = ENTITY["experiment_entry"]
EXPERIMENT_ENTRY_TAG = ENTITY["experiment_entry_tag"]
ISSUE_SCHEDULE = ENTITY["issue_schedule"]
CONFIG = ENTITY["config"]

DEFAULT_EXPERIMENT_ID = "0"
DEFAULT_EXPERIMENT_NAME = "Default"
DEFAULT_WORKSPACE = request_workspace.DEFAULT_WORKSPACE
ACTIVE = "active"
DELETED = "deleted"
EXPERIMENT_COUNTER_KEY = "seq#experiment"  # CFG#seq#experiment (see catalog.py)

_EXPERIMENT_FIELDS = ("experiment_id", "name", "artifact_location", "lifecycle_stage", "creation_time", "last_update_time", "workspace")


def experiment_attributes(
    experiment_id: str,
    name: str,
    artifact_location: str,
    creation_time: int,
    lifecycle_stage: str = ACTIVE,
    workspace: str = DEFAULT_WORKSPACE,
    last_update_time: int | None = None,
) -> dict[str, Any]:
    return {
        "experiment_id": experiment_id,
        "name": name,
        "artifact_location": artifact_location,
        "lifecycle_stage": lifecycle_stage,
        "creation_time": creation_time,
        "last_update_time": creation_time if last_update_time is None else last_update_time,
        "workspace": workspace,
    }


def experiment_item(
    experiment_id: str,
    name: str,
    artifact_location: str,
    creation_time: int,
    lifecycle_stage: str = ACTIVE,
    workspace: str = DEFAULT_WORKSPACE,
) -> dict[str, Any]:
    attributes = experiment_attributes(experiment_id, name, artifact_location, creation_time, lifecycle_stage, workspace)
    return EXPERIMENT.item(attributes, **attributes, experiment_num=int(experiment_id))


def entry_item(attributes: dict[str, Any]) -> dict[str, Any]:
    """The collection copy of an experiment (same attributes as E#META)."""
    attrs = {name: attributes[name] for name in _EXPERIMENT_FIELDS}
    # All attributes as key values too: the lsi5 "name not yet indexed" flag is built from last_update_time.
    return EXPERIMENT_ENTRY.item(attrs, **attrs, experiment_num=int(attrs["experiment_id"]))


def tag_item(experiment_id: str, key: str, value: str) -> dict[str, Any]:
    return EXPERIMENT_TAG.item({"key": key, "value": value}, experiment_id=experiment_id, key=key)


def entry_tag_item(experiment_id: str, key: str, value: str, workspace: str = DEFAULT_WORKSPACE) -> dict[str, Any]:
    return EXPERIMENT_ENTRY_TAG.item(
        {"experiment_id": experiment_id, "key": key, "value": value},
        workspace=workspace,
        experiment_num=int(experiment_id),
        key=key,
    )


def issue_schedule_item(experiment_id: str, workspace: str, due: int | None, created_by: str | None) -> dict[str, Any]:
    """The monitor's view of an experiment's issue-detection schedule (``schema``: ``issue_schedule``); without
    ``due`` it leaves the monitor's index (a paused or removed schedule)."""
    attributes: dict[str, Any] = {"experiment_id": experiment_id, "workspace": workspace}
    if created_by:
        attributes["created_by"] = created_by
    if due is not None:
        attributes["due"] = due
        return ISSUE_SCHEDULE.item(attributes, experiment_id=experiment_id, due=due)
    return ISSUE_SCHEDULE.item(attributes, experiment_id=experiment_id)


def name_claim_item(experiment_id: str, name: str, workspace: str = DEFAULT_WORKSPACE) -> dict[str, Any]:
    return EXPERIMENT_NAME.item({"experiment_id": experiment_id, "name": name}, workspace=workspace, name=name)


def name_claim_key(name: str, workspace: str = DEFAULT_WORKSPACE) -> dict[str, str]:
    return EXPERIMENT_NAME.key(workspace=workspace, name=name)


def meta_key(experiment_id: str) -> dict[str, str]:
    return EXPERIMENT.key(experiment_id=experiment_id)


def entry_key(experiment_id: str, workspace: str = DEFAULT_WORKSPACE) -> dict[str, str]:
    return EXPERIMENT_ENTRY.key(workspace=workspace, experiment_num=int(experiment_id))


def tag_key(experiment_id: str, key: str) -> dict[str, str]:
    return EXPERIMENT_TAG.key(experiment_id=experiment_id, key=key)


def entry_tag_key(experiment_id: str, key: str, workspace: str = DEFAULT_WORKSPACE) -> dict[str, str]:
    return EXPERIMENT_ENTRY_TAG.key(workspace=workspace, experiment_num=int(experiment_id), key=key)


def counter_key() -> dict[str, str]:
    return CONFIG.key(key=EXPERIMENT_COUNTER_KEY)


def default_experiment_items() -> list[dict[str, Any]]:
    created = clock.now_millis()
    meta = experiment_item(
        DEFAULT_EXPERIMENT_ID, DEFAULT_EXPERIMENT_NAME, default_experiment_artifact_location(DEFAULT_EXPERIMENT_ID), created
    )
    return [meta, name_claim_item(DEFAULT_EXPERIMENT_ID, DEFAULT_EXPERIMENT_NAME), entry_item(meta)]
