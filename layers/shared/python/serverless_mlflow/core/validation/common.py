"""Message builders and the name/length checks every entity shares (MLflow's wording)."""

from __future__ import annotations

import json
import logging
import posixpath
import re
from typing import Any

from serverless_mlflow.core.errors import invalid

from .limits import truncate_long_values

# Named as before the split, so log filters keep matching.
_logger = logging.getLogger("serverless_mlflow.core.validation")

# Linux/macOS rule (the server never runs on Windows): slashes, word chars, periods, dashes, spaces, colons.
_PARAM_METRIC_NAME_REGEX = re.compile(r"^[/\w.\- :]*$")
MISSING_KEY_NAME_MESSAGE = "A key name must be provided."


# --- message builders ----------------------------------------------------------------------------


def invalid_value(path: str, value: Any, message: str | None = None) -> str:
    formatted = json.dumps(value, sort_keys=True, separators=(",", ":"))
    if message:
        return f"Invalid value {formatted} for parameter '{path}' supplied: {message}"
    return f"Invalid value {formatted} for parameter '{path}' supplied."


def missing_value(path: str) -> str:
    return f"Missing value for required parameter '{path}'."


def not_integer_value(path: str, value: Any) -> str:
    return f"Parameter '{path}' must be an integer, got '{value}'."


def exceeds_maximum_length(path: str, limit: int) -> str:
    return f"'{path}' exceeds the maximum length of {limit} characters"


def append_to_json_path(current_path: str, value: str) -> str:
    if not current_path:
        return value
    if value.startswith("["):
        return f"{current_path}{value}"
    return f"{current_path}.{value}"


def bad_path_message(name: str) -> str:
    return (
        "Names may be treated as files in certain cases, and must not resolve to other names"
        f" when treated as such. This name would resolve to {posixpath.normpath(name)!r}"
    )


def validate_param_and_metric_name(name: str) -> bool:
    return _PARAM_METRIC_NAME_REGEX.match(name) is not None


def bad_character_message() -> str:
    return "Names may only contain alphanumerics, underscores (_), dashes (-), periods (.), spaces ( ), colon(:) and slashes (/)."


def path_not_unique(name: str) -> bool:
    norm = posixpath.normpath(name)
    return norm != str(name) or norm == "." or norm.startswith("..") or norm.startswith("/")


def validate_tag_name(name: str | None, path: str = "key") -> None:
    if name is None:
        raise invalid(missing_value(path))
    if not validate_param_and_metric_name(name):
        raise invalid(invalid_value(path, name, bad_character_message()))
    if path_not_unique(name):
        raise invalid(invalid_value(path, name, bad_path_message(name)))


def validate_length_limit(entity_name: str, limit: int, value: Any, *, truncate: bool = False) -> Any:
    if value is None:
        return None
    if len(value) <= limit:
        return value
    if truncate and truncate_long_values():
        _logger.warning(
            "%s '%s...' (%d characters) is truncated to %d characters to meet the length limit.",
            entity_name,
            value[:100],
            len(value),
            limit,
        )
        return value[:limit]
    raise invalid(exceeds_maximum_length(entity_name, limit))


def validate_tag_value(value: Any) -> None:
    if value is None:
        raise invalid("Tag value cannot be None")


def validate_list_param(param_name: str, param_value: Any, allow_none: bool = False) -> None:
    if allow_none and param_value is None:
        return
    if not isinstance(param_value, list):
        raise invalid(f"{param_name} must be a list, got {type(param_value).__name__}. Did you mean to use {param_name}=[{param_value!r}]?")
