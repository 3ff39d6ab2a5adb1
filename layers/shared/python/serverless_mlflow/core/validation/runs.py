"""Runs: ids, metrics, params, tags and log_batch requests."""

from __future__ import annotations

import numbers
import re
from collections.abc import Sequence
from typing import Any

from serverless_mlflow.core.errors import invalid

from .common import (
    MISSING_KEY_NAME_MESSAGE,
    append_to_json_path,
    bad_character_message,
    bad_path_message,
    invalid_value,
    missing_value,
    path_not_unique,
    validate_length_limit,
    validate_param_and_metric_name,
    validate_tag_name,
)
from .limits import (
    MAX_BATCH_LOG_REQUEST_SIZE,
    MAX_ENTITIES_PER_BATCH,
    MAX_ENTITY_KEY_LENGTH,
    MAX_METRICS_PER_BATCH,
    MAX_PARAM_VAL_LENGTH,
    MAX_PARAMS_TAGS_PER_BATCH,
    MAX_TAG_VAL_LENGTH,
)

# Regex for valid run IDs: an alphanumeric first character, then up to 255 word chars or dashes.
RUN_ID_REGEX = re.compile(r"^[a-zA-Z0-9][\w\-]{0,255}$")

PARAM_VALIDATION_MSG = """

The cause of this error is typically due to repeated calls
to an individual run_id event logging.

Incorrect Example:
---------------------------------------
with mlflow.start_run():
    mlflow.log_param("depth", 3)
    mlflow.log_param("depth", 5)
---------------------------------------

Which will throw an MlflowException for overwriting a
logged parameter.

Correct Example:
---------------------------------------
with mlflow.start_run():
    with mlflow.start_run(nested=True):
        mlflow.log_param("depth", 3)
    with mlflow.start_run(nested=True):
        mlflow.log_param("depth", 5)
---------------------------------------

Which will create a new nested run for each individual
model and prevent parameter key collisions within the
tracking store."""


# --- metrics, params, tags -----------------------------------------------------------------------


def validate_metric_name(name: str | None, path: str = "name") -> None:
    if name is None:
        raise invalid(invalid_value(path, name, f"Metric name cannot be None. {MISSING_KEY_NAME_MESSAGE}"))
    if not validate_param_and_metric_name(name):
        raise invalid(invalid_value(path, name, bad_character_message()))
    if path_not_unique(name):
        raise invalid(invalid_value(path, name, bad_path_message(name)))


def is_numeric(value: Any) -> bool:
    # bool is a numbers.Number subclass; MLflow refuses it as a metric value.
    return not isinstance(value, bool) and isinstance(value, numbers.Number)


def validate_metric(key: str | None, value: Any, timestamp: Any, step: Any, path: str = "") -> None:
    validate_metric_name(key, append_to_json_path(path, "name"))
    if value is None:
        raise invalid(missing_value(append_to_json_path(path, "value")))
    if not is_numeric(value):
        raise invalid(
            invalid_value(
                append_to_json_path(path, "value"),
                value,
                f"(timestamp={timestamp}). Please specify value as a valid double (64-bit floating point)",
            )
        )
    if not isinstance(timestamp, numbers.Number) or timestamp < 0:
        raise invalid(
            invalid_value(
                append_to_json_path(path, "timestamp"),
                timestamp,
                f"metric '{key}' (value={value}). Timestamp must be a nonnegative long (64-bit integer) ",
            )
        )
    if not isinstance(step, numbers.Number):
        raise invalid(
            invalid_value(
                append_to_json_path(path, "step"),
                step,
                f"metric '{key}' (value={value}). Step must be a valid long (64-bit integer).",
            )
        )
    validate_length_limit("Metric name", MAX_ENTITY_KEY_LENGTH, key)


def validate_param(key: str | None, value: str | None, path: str = "") -> tuple[str, str | None]:
    """Returns (key, value) with the value truncated to 6000 chars when MLFLOW_TRUNCATE_LONG_VALUES."""
    validate_param_name(key, append_to_json_path(path, "key"))
    assert key is not None
    return (
        validate_length_limit("Param key", MAX_ENTITY_KEY_LENGTH, key),
        validate_length_limit("Param value", MAX_PARAM_VAL_LENGTH, value, truncate=True),
    )


def validate_tag(key: str | None, value: str | None, path: str = "") -> tuple[str, str | None]:
    """Returns (key, value) with the value truncated to 8000 chars when MLFLOW_TRUNCATE_LONG_VALUES."""
    validate_tag_name(key, append_to_json_path(path, "key"))
    assert key is not None
    return (
        validate_length_limit(append_to_json_path(path, "key"), MAX_ENTITY_KEY_LENGTH, key),
        validate_length_limit(append_to_json_path(path, "value"), MAX_TAG_VAL_LENGTH, value, truncate=True),
    )


def validate_param_keys_unique(params: Sequence[dict[str, Any]] | Sequence[tuple[str, Any]]) -> None:
    """No key twice in one log_batch (entries are {"key", "value"} dicts or (key, value) pairs)."""
    unique_keys: list[Any] = []
    dupe_keys: list[Any] = []
    for param in params:
        key = param.get("key") if isinstance(param, dict) else param[0]
        if key not in unique_keys:
            unique_keys.append(key)
        else:
            dupe_keys.append(key)
    if dupe_keys:
        raise invalid(
            f"Duplicate parameter keys have been submitted: {dupe_keys}. Please ensure "
            "the request contains only one param value per param key."
        )


def validate_param_name(name: str | None, path: str = "key") -> None:
    if name is None:
        raise invalid(invalid_value(path, "", MISSING_KEY_NAME_MESSAGE))
    if not validate_param_and_metric_name(name):
        raise invalid(invalid_value(path, name, bad_character_message()))
    if path_not_unique(name):
        raise invalid(invalid_value(path, name, bad_path_message(name)))


# --- ids -------------------------------------------------------------------------------------------


def validate_run_id(run_id: str, path: str = "run_id") -> None:
    if RUN_ID_REGEX.match(run_id) is None:
        raise invalid(invalid_value(path, run_id))


# --- batches ---------------------------------------------------------------------------------------


def validate_batch_limit(entity_name: str, limit: int, length: int) -> None:
    if length > limit:
        raise invalid(
            f"A batch logging request can contain at most {limit} {entity_name}. "
            f"Got {length} {entity_name}. Please split up {entity_name} across multiple"
            " requests and try again."
        )


def validate_batch_log_limits(metrics: Sequence[Any], params: Sequence[Any], tags: Sequence[Any]) -> None:
    validate_batch_limit("metrics", MAX_METRICS_PER_BATCH, len(metrics))
    validate_batch_limit("params", MAX_PARAMS_TAGS_PER_BATCH, len(params))
    validate_batch_limit("tags", MAX_PARAMS_TAGS_PER_BATCH, len(tags))
    validate_batch_limit("metrics, params, and tags", MAX_ENTITIES_PER_BATCH, len(metrics) + len(params) + len(tags))


def validate_batch_log_data(
    metrics: Sequence[dict[str, Any]], params: Sequence[dict[str, Any]], tags: Sequence[dict[str, Any]]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    """Validate each entry (dicts with key/value/timestamp/step); params and tags come back truncated."""
    for index, metric in enumerate(metrics):
        validate_metric(metric.get("key"), metric.get("value"), metric.get("timestamp"), metric.get("step"), path=f"metrics[{index}]")
    out_params = []
    for idx, param in enumerate(params):
        key, value = validate_param(param.get("key"), param.get("value"), path=f"params[{idx}]")
        out_params.append({**param, "key": key, "value": value})
    out_tags = []
    for idx, tag in enumerate(tags):
        key, value = validate_tag(tag.get("key"), tag.get("value"), path=f"tags[{idx}]")
        out_tags.append({**tag, "key": key, "value": value})
    return list(metrics), out_params, out_tags


def validate_batch_log_api_req(json_req: str | bytes) -> None:
    if len(json_req) > MAX_BATCH_LOG_REQUEST_SIZE:
        raise invalid(
            f"Batched logging API requests must be at most {MAX_BATCH_LOG_REQUEST_SIZE} bytes, got a request of size {len(json_req)}."
        )
