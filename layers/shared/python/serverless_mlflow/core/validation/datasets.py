"""Dataset inputs of runs (LogInputs): datasets and their input tags."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from serverless_mlflow.core.errors import invalid

from .common import exceeds_maximum_length
from .limits import (
    MAX_DATASET_DIGEST_SIZE,
    MAX_DATASET_NAME_SIZE,
    MAX_DATASET_PROFILE_SIZE,
    MAX_DATASET_SCHEMA_SIZE,
    MAX_DATASET_SOURCE_SIZE,
    MAX_INPUT_TAG_KEY_SIZE,
    MAX_INPUT_TAG_VALUE_SIZE,
)


def validate_dataset_inputs(dataset_inputs: Sequence[dict[str, Any]]) -> None:
    """Each entry is {"dataset": {...}, "tags": [{"key", "value"}, ...]} as in LogInputs."""
    for dataset_input in dataset_inputs:
        validate_dataset(dataset_input.get("dataset"))
        validate_input_tags(dataset_input.get("tags") or [])


def validate_dataset(dataset: dict[str, Any] | None) -> None:
    if dataset is None:
        raise invalid("Dataset cannot be None")
    for name in ("name", "digest", "source_type", "source"):
        if dataset.get(name) is None:
            raise invalid(f"Dataset {name} cannot be None")
    if len(dataset["name"]) > MAX_DATASET_NAME_SIZE:
        raise invalid(exceeds_maximum_length("name", MAX_DATASET_NAME_SIZE))
    if len(dataset["digest"]) > MAX_DATASET_DIGEST_SIZE:
        raise invalid(exceeds_maximum_length("digest", MAX_DATASET_DIGEST_SIZE))
    if len(dataset["source"]) > MAX_DATASET_SOURCE_SIZE:
        raise invalid(exceeds_maximum_length("source", MAX_DATASET_SOURCE_SIZE))
    if dataset.get("schema") is not None and len(dataset["schema"]) > MAX_DATASET_SCHEMA_SIZE:
        raise invalid(exceeds_maximum_length("schema", MAX_DATASET_SCHEMA_SIZE))
    if dataset.get("profile") is not None and len(dataset["profile"]) > MAX_DATASET_PROFILE_SIZE:
        raise invalid(exceeds_maximum_length("profile", MAX_DATASET_PROFILE_SIZE))


def validate_input_tags(input_tags: Sequence[dict[str, Any] | None]) -> None:
    for input_tag in input_tags:
        validate_input_tag(input_tag)


def validate_input_tag(input_tag: dict[str, Any] | None) -> None:
    if input_tag is None:
        raise invalid("InputTag cannot be None")
    if input_tag.get("key") is None:
        raise invalid("InputTag key cannot be None")
    if input_tag.get("value") is None:
        raise invalid("InputTag value cannot be None")
    if len(input_tag["key"]) > MAX_INPUT_TAG_KEY_SIZE:
        raise invalid(exceeds_maximum_length("key", MAX_INPUT_TAG_KEY_SIZE))
    if len(input_tag["value"]) > MAX_INPUT_TAG_VALUE_SIZE:
        raise invalid(exceeds_maximum_length("value", MAX_INPUT_TAG_VALUE_SIZE))
