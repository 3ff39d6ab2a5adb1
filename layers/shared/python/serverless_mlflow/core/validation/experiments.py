"""Experiments: ids, names, artifact locations and tags."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from serverless_mlflow.core.errors import invalid

from .common import exceeds_maximum_length, validate_length_limit, validate_tag_name
from .limits import MAX_EXPERIMENT_NAME_LENGTH, MAX_EXPERIMENT_TAG_KEY_LENGTH, MAX_EXPERIMENT_TAG_VAL_LENGTH, artifact_location_max_length
from .traces import validate_trace_experiment_tag

EXPERIMENT_ID_REGEX = re.compile(r"^[a-zA-Z0-9][\w\-]{0,63}$")


def validate_experiment_id(exp_id: str | None) -> None:
    if exp_id is not None and EXPERIMENT_ID_REGEX.match(exp_id) is None:
        raise invalid(f"Invalid experiment ID: '{exp_id}'")


def parse_experiment_id(experiment_id: str | int | None) -> int:
    """The SQL store's rule: an experiment id must parse as an integer."""
    try:
        return int(experiment_id)  # type: ignore[arg-type]
    except (ValueError, TypeError, OverflowError):  # OverflowError: a JSON 1e309 arrives as float('inf')
        raise invalid(f"Invalid experiment ID '{experiment_id}'. Experiment ID must be a valid integer.") from None


def parse_experiment_ids(experiment_ids: Sequence[str | int]) -> list[int]:
    return [parse_experiment_id(experiment_id) for experiment_id in experiment_ids]


def validate_experiment_id_type(experiment_id: Any) -> None:
    if experiment_id is not None and not isinstance(experiment_id, (str, int)):
        raise invalid(f"Invalid experiment id: {experiment_id} of type {type(experiment_id)}. Must be one of str, int, or None.")


# --- experiments -------------------------------------------------------------------------------------


def validate_experiment_name(experiment_name: Any) -> None:
    if experiment_name == "" or experiment_name is None:
        raise invalid(f"Invalid experiment name: '{experiment_name}'")
    if not isinstance(experiment_name, str):
        raise invalid(f"Invalid experiment name: {experiment_name}. Expects a string.")
    if len(experiment_name) > MAX_EXPERIMENT_NAME_LENGTH:
        raise invalid(exceeds_maximum_length("name", MAX_EXPERIMENT_NAME_LENGTH))


def validate_experiment_artifact_location(artifact_location: str | None) -> None:
    if artifact_location is not None and artifact_location.startswith("runs:"):
        raise invalid(f"Artifact location cannot be a runs:/ URI. Given: '{artifact_location}'")


def validate_experiment_artifact_location_length(artifact_location: str) -> None:
    max_length = artifact_location_max_length()
    if len(artifact_location) > max_length:
        raise invalid(
            "Invalid artifact path length. The length of the artifact path cannot be "
            f"greater than {max_length} characters. To configure this limit, please set the "
            "MLFLOW_ARTIFACT_LOCATION_MAX_LENGTH environment variable."
        )


def validate_experiment_tag(key: str | None, value: str | None) -> None:
    validate_tag_name(key)
    validate_length_limit("key", MAX_EXPERIMENT_TAG_KEY_LENGTH, key)
    validate_length_limit("value", MAX_EXPERIMENT_TAG_VAL_LENGTH, value)
    validate_trace_experiment_tag(key, value)
