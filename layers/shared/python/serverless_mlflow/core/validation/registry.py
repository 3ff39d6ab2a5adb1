"""Model registry: model names, versions, aliases and tags."""

from __future__ import annotations

import re
from typing import Any

from serverless_mlflow.core.errors import invalid

from .common import (
    bad_path_message,
    invalid_value,
    missing_value,
    not_integer_value,
    path_not_unique,
    validate_length_limit,
    validate_tag_name,
    validate_tag_value,
)
from .limits import MAX_MODEL_REGISTRY_TAG_KEY_LENGTH, MAX_MODEL_REGISTRY_TAG_VALUE_LENGTH, MAX_REGISTERED_MODEL_ALIAS_LENGTH

REGISTERED_MODEL_ALIAS_REGEX = re.compile(r"^[\w\-]*$")
REGISTERED_MODEL_ALIAS_VERSION_REGEX = re.compile(r"^[vV]\d+$")
REGISTERED_MODEL_ALIAS_LATEST = "latest"
BAD_ALIAS_CHARACTERS_MESSAGE = "Names may only contain alphanumerics, underscores (_), and dashes (-)."
PROMPT_TEXT_TAG_KEY = "mlflow.prompt.text"


def validate_registered_model_tag(key: str | None, value: str | None) -> None:
    validate_tag_name(key)
    validate_length_limit("key", MAX_MODEL_REGISTRY_TAG_KEY_LENGTH, key)
    validate_length_limit("value", MAX_MODEL_REGISTRY_TAG_VALUE_LENGTH, value)


def validate_model_version_tag(key: str | None, value: str | None) -> None:
    validate_tag_name(key)
    validate_tag_value(value)
    validate_length_limit("key", MAX_MODEL_REGISTRY_TAG_KEY_LENGTH, key)
    if key == PROMPT_TEXT_TAG_KEY and value is not None and len(value) > MAX_MODEL_REGISTRY_TAG_VALUE_LENGTH:
        raise invalid(f"Prompt text exceeds max length of {MAX_MODEL_REGISTRY_TAG_VALUE_LENGTH} characters.")
    validate_length_limit("value", MAX_MODEL_REGISTRY_TAG_VALUE_LENGTH, value)


def validate_model_name(model_name: str | None) -> None:
    if model_name is None or model_name.strip() == "":
        raise invalid(missing_value("name"))
    if any(c in model_name for c in ("/", ":")):
        raise invalid(f"Invalid model name '{model_name}'. Names cannot contain '/' or ':'.")
    if path_not_unique(model_name):
        raise invalid(invalid_value("name", model_name, bad_path_message(model_name)))


def validate_model_renaming(model_new_name: str | None) -> None:
    if model_new_name is None or str(model_new_name).strip() == "":
        raise invalid(missing_value("new_name"))
    validate_model_name(model_new_name)


def validate_model_version(model_version: Any) -> int:
    try:
        return int(model_version)
    except ValueError:
        raise invalid(not_integer_value("version", model_version)) from None


def validate_model_alias_name(model_alias_name: str | None, resource_type: str = "Registered model") -> None:
    """``_validate_alias_name``: also the skill registry's aliases (``resource_type="Skill"``)."""
    if model_alias_name is None or model_alias_name == "":
        raise invalid(f"{resource_type} alias name cannot be empty.")
    if not REGISTERED_MODEL_ALIAS_REGEX.match(model_alias_name):
        raise invalid(f"Invalid alias name: '{model_alias_name}'. {BAD_ALIAS_CHARACTERS_MESSAGE}")
    validate_length_limit(f"{resource_type} alias name", MAX_REGISTERED_MODEL_ALIAS_LENGTH, model_alias_name)


def validate_model_alias_name_reserved(model_alias_name: str) -> None:
    if model_alias_name.lower() == REGISTERED_MODEL_ALIAS_LATEST:
        raise invalid("'latest' alias name (case insensitive) is reserved.")
    if REGISTERED_MODEL_ALIAS_VERSION_REGEX.match(model_alias_name):
        raise invalid(f"Version alias name '{model_alias_name}' is reserved.")


def validate_model_version_or_stage_exists(version: Any, stage: Any) -> None:
    if version and stage:
        raise invalid("version and stage cannot be set together")
    if not (version or stage):
        raise invalid("version or stage must be set")
