"""Input validation with MLflow's rules and messages (port of ``mlflow/utils/validation.py``).

Only what the tracking and registry server paths use. Function names are MLflow's without the
leading underscore; every failure is ``errors.invalid(...)`` (INVALID_PARAMETER_VALUE, 400) with
the exact text MLflow raises, so clients and tests see the same answers. Entities arrive as plain
dicts parsed from the request JSON instead of MLflow entity objects. This module must not import
``mlflow`` (it runs in Lambda).
"""

from __future__ import annotations

import json
import logging
import numbers
import os
import posixpath
import re
import urllib.parse
from collections.abc import Sequence
from typing import Any

from serverless_mlflow.errors import invalid

_logger = logging.getLogger(__name__)

# Regex for valid run IDs: an alphanumeric first character, then up to 255 word chars or dashes.
RUN_ID_REGEX = re.compile(r"^[a-zA-Z0-9][\w\-]{0,255}$")
EXPERIMENT_ID_REGEX = re.compile(r"^[a-zA-Z0-9][\w\-]{0,63}$")
REGISTERED_MODEL_ALIAS_REGEX = re.compile(r"^[\w\-]*$")
REGISTERED_MODEL_ALIAS_VERSION_REGEX = re.compile(r"^[vV]\d+$")
REGISTERED_MODEL_ALIAS_LATEST = "latest"
# Linux/macOS rule (the server never runs on Windows): slashes, word chars, periods, dashes, spaces, colons.
_PARAM_METRIC_NAME_REGEX = re.compile(r"^[/\w.\- :]*$")
_TRACE_ARCHIVAL_RETENTION_REGEX = re.compile(r"^[1-9][0-9]*[mhd]$")

BAD_ALIAS_CHARACTERS_MESSAGE = "Names may only contain alphanumerics, underscores (_), and dashes (-)."
MISSING_KEY_NAME_MESSAGE = "A key name must be provided."

MAX_PARAMS_TAGS_PER_BATCH = 100
MAX_METRICS_PER_BATCH = 1000
MAX_DATASETS_PER_BATCH = 1000
MAX_ENTITIES_PER_BATCH = 1000
MAX_BATCH_LOG_REQUEST_SIZE = int(1e6)
MAX_PARAM_VAL_LENGTH = 6000
MAX_TAG_VAL_LENGTH = 8000
MAX_EXPERIMENT_NAME_LENGTH = 500
MAX_EXPERIMENT_TAG_KEY_LENGTH = 250
MAX_EXPERIMENT_TAG_VAL_LENGTH = 20000
MAX_CUSTOM_VIEWS_PER_EXPERIMENT = 50
MAX_ENTITY_KEY_LENGTH = 250
MAX_MODEL_REGISTRY_TAG_KEY_LENGTH = 250
MAX_MODEL_REGISTRY_TAG_VALUE_LENGTH = 100_000
MAX_EXPERIMENTS_LISTED_PER_PAGE = 50000
MAX_DATASET_NAME_SIZE = 500
MAX_DATASET_DIGEST_SIZE = 36
MAX_DATASET_SCHEMA_SIZE = 1048575
MAX_DATASET_SOURCE_SIZE = 65535
MAX_DATASET_PROFILE_SIZE = 16777215
MAX_INPUT_TAG_KEY_SIZE = 255
MAX_INPUT_TAG_VALUE_SIZE = 500
MAX_REGISTERED_MODEL_ALIAS_LENGTH = 255
MAX_TRACE_TAG_KEY_LENGTH = 250
MAX_TRACE_TAG_VAL_LENGTH = 8000
MAX_TRACE_ARCHIVAL_RETENTION_LENGTH = 32
DEFAULT_ARTIFACT_LOCATION_MAX_LENGTH = 2048

# mlflow/store/tracking/__init__.py and mlflow/store/model_registry/__init__.py
SEARCH_MAX_RESULTS_DEFAULT = 1000
SEARCH_MAX_RESULTS_THRESHOLD = 50000
SEARCH_LOGGED_MODEL_MAX_RESULTS_DEFAULT = 100
SEARCH_REGISTERED_MODEL_MAX_RESULTS_DEFAULT = 100
SEARCH_REGISTERED_MODEL_MAX_RESULTS_THRESHOLD = 1000
SEARCH_MODEL_VERSION_MAX_RESULTS_DEFAULT = 10000
SEARCH_MODEL_VERSION_MAX_RESULTS_THRESHOLD = 200_000

PROMPT_TEXT_TAG_KEY = "mlflow.prompt.text"
TRACE_ARCHIVAL_RETENTION_TAG = "mlflow.trace.archivalRetention"
TRACE_ARCHIVE_NOW_TAG = "mlflow.trace.archiveNow"

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


# --- environment -------------------------------------------------------------------------------

def _bool_env(name: str, default: bool) -> bool:
    """MLflow's ``_BooleanEnvironmentVariable.get``: true/false/1/0, anything else is an error."""
    raw = os.environ.get(name)
    if raw is None:
        return default
    lowered = raw.lower()
    if lowered not in ("true", "false", "1", "0"):
        raise ValueError(f"{name} value must be one of ['true', 'false', '1', '0'] (case-insensitive), but got {raw}")
    return lowered in ("true", "1")


def truncate_long_values() -> bool:
    return _bool_env("MLFLOW_TRUNCATE_LONG_VALUES", True)


def artifact_location_max_length() -> int:
    return int(os.environ.get("MLFLOW_ARTIFACT_LOCATION_MAX_LENGTH", DEFAULT_ARTIFACT_LOCATION_MAX_LENGTH))


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
    return (
        "Names may only contain alphanumerics, underscores (_), dashes (-), periods (.),"
        " spaces ( ), colon(:) and slashes (/)."
    )


def path_not_unique(name: str) -> bool:
    norm = posixpath.normpath(name)
    return norm != str(name) or norm == "." or norm.startswith("..") or norm.startswith("/")


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


def validate_experiment_tag(key: str | None, value: str | None) -> None:
    validate_tag_name(key)
    validate_length_limit("key", MAX_EXPERIMENT_TAG_KEY_LENGTH, key)
    validate_length_limit("value", MAX_EXPERIMENT_TAG_VAL_LENGTH, value)
    validate_trace_experiment_tag(key, value)


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
            entity_name, value[:100], len(value), limit,
        )
        return value[:limit]
    raise invalid(exceeds_maximum_length(entity_name, limit))


def validate_tag_value(value: Any) -> None:
    if value is None:
        raise invalid("Tag value cannot be None")


# --- ids -------------------------------------------------------------------------------------------

def validate_run_id(run_id: str, path: str = "run_id") -> None:
    if RUN_ID_REGEX.match(run_id) is None:
        raise invalid(invalid_value(path, run_id))


def validate_experiment_id(exp_id: str | None) -> None:
    if exp_id is not None and EXPERIMENT_ID_REGEX.match(exp_id) is None:
        raise invalid(f"Invalid experiment ID: '{exp_id}'")


def parse_experiment_id(experiment_id: str | int | None) -> int:
    """The SQL store's rule: an experiment id must parse as an integer."""
    try:
        return int(experiment_id)  # type: ignore[arg-type]
    except (ValueError, TypeError):
        raise invalid(f"Invalid experiment ID '{experiment_id}'. Experiment ID must be a valid integer.") from None


def parse_experiment_ids(experiment_ids: Sequence[str | int]) -> list[int]:
    return [parse_experiment_id(experiment_id) for experiment_id in experiment_ids]


def validate_experiment_id_type(experiment_id: Any) -> None:
    if experiment_id is not None and not isinstance(experiment_id, (str, int)):
        raise invalid(
            f"Invalid experiment id: {experiment_id} of type {type(experiment_id)}. Must be one of str, int, or None."
        )


def validate_list_param(param_name: str, param_value: Any, allow_none: bool = False) -> None:
    if allow_none and param_value is None:
        return
    if not isinstance(param_value, list):
        raise invalid(
            f"{param_name} must be a list, got {type(param_value).__name__}. Did you mean to use {param_name}=[{param_value!r}]?"
        )


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


_RETENTION_FORMAT_MESSAGE = "Trace archival retention must be in the form `<int><unit>`, where unit is one of 'm', 'h', or 'd'."


def validate_trace_archival_retention_string(value: Any, *, parameter_name: str | None = None) -> str:
    expected = (
        f"Invalid value for '{parameter_name}'. Expected a duration in the form "
        "`<int><unit>`, where unit is one of 'm', 'h', or 'd' (for example '30d' or '12h')."
    )
    if not isinstance(value, str):
        raise invalid(expected if parameter_name is not None else _RETENTION_FORMAT_MESSAGE)
    trimmed = value.strip()
    if len(trimmed) > MAX_TRACE_ARCHIVAL_RETENTION_LENGTH:
        if parameter_name is not None:
            raise invalid(f"Invalid value for '{parameter_name}'. Maximum length is 32 characters.")
        raise invalid("Trace archival duration must be at most 32 characters.")
    if _TRACE_ARCHIVAL_RETENTION_REGEX.fullmatch(trimmed) is None:
        raise invalid(expected if parameter_name is not None else _RETENTION_FORMAT_MESSAGE)
    return trimmed


def parse_trace_archival_duration_config(
    value: str | None, *, duration_key: str, expected_type: str | None = None, allow_missing_duration: bool = False
) -> str | None:
    if value is None:
        return None
    try:
        payload = json.loads(value)
    except Exception as error:
        raise invalid("Trace archival config must be encoded as a JSON object.") from error
    if not isinstance(payload, dict):
        raise invalid("Trace archival config must be encoded as a JSON object.")
    if expected_type is not None and payload.get("type") != expected_type:
        raise invalid(f"Trace archival config must use type '{expected_type}'.")
    duration_value = payload.get(duration_key)
    if duration_value is None and allow_missing_duration:
        return None
    return validate_trace_archival_retention_string(duration_value)


def validate_trace_experiment_tag(key: str | None, value: Any) -> None:
    if key == TRACE_ARCHIVAL_RETENTION_TAG:
        parse_trace_archival_duration_config(value, duration_key="value", expected_type="duration")
    elif key == TRACE_ARCHIVE_NOW_TAG:
        parse_trace_archival_duration_config(value, duration_key="older_than", allow_missing_duration=True)


def validate_trace_archival_location(value: Any, *, parameter_name: str | None = None) -> str:
    message = (
        f"Invalid value for '{parameter_name}'. Expected a URI string."
        if parameter_name is not None
        else "Trace archival location must be a URI string."
    )
    if not isinstance(value, str):
        raise invalid(message)
    trimmed = value.strip()
    parsed = urllib.parse.urlparse(trimmed)
    if not parsed.scheme:
        raise invalid(message)
    if parsed.scheme == "mlflow-artifacts":
        if parameter_name is not None:
            raise invalid(
                f"Invalid value for '{parameter_name}'. Trace archival location cannot use the proxy-only `mlflow-artifacts:` scheme."
            )
        raise invalid("Trace archival location cannot use the proxy-only `mlflow-artifacts:` scheme.")
    return trimmed


def validate_trace_tag(key: str | None, value: str | None) -> tuple[str | None, str | None]:
    validate_tag_name(key)
    key = validate_length_limit("key", MAX_TRACE_TAG_KEY_LENGTH, key)
    value = validate_length_limit("value", MAX_TRACE_TAG_VAL_LENGTH, value, truncate=True)
    return key, value


# --- datasets / inputs -------------------------------------------------------------------------------

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


# --- logged models -------------------------------------------------------------------------------------

LOGGED_MODEL_BAD_CHARS = ("/", ":", ".", "%", '"', "'")


def validate_logged_model_name(name: str | None) -> None:
    if name is None:
        return
    if not name or any(c in name for c in LOGGED_MODEL_BAD_CHARS):
        raise invalid(
            f"Invalid model name ({name!r}) provided. Model name must be a non-empty string "
            f"and cannot contain the following characters: {LOGGED_MODEL_BAD_CHARS}"
        )


# --- model registry ------------------------------------------------------------------------------------

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


def validate_model_alias_name(model_alias_name: str | None) -> None:
    if model_alias_name is None or model_alias_name == "":
        raise invalid("Registered model alias name cannot be empty.")
    if not REGISTERED_MODEL_ALIAS_REGEX.match(model_alias_name):
        raise invalid(f"Invalid alias name: '{model_alias_name}'. {BAD_ALIAS_CHARACTERS_MESSAGE}")
    validate_length_limit("Registered model alias name", MAX_REGISTERED_MODEL_ALIAS_LENGTH, model_alias_name)


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


# --- users -----------------------------------------------------------------------------------------------

def validate_username(username: str | None) -> None:
    if username is None or username == "":
        raise invalid("Username cannot be empty.")


def validate_password(password: str | None) -> None:
    if password is None or len(password) < 12:
        raise invalid("Password must be at least 12 characters.")


# --- max_results -----------------------------------------------------------------------------------------

def validate_max_results_param(max_results: int | None, allow_null: bool = False) -> None:
    """SqlAlchemyStore._validate_max_results_param (search_experiments, search_runs, search_traces)."""
    if (not allow_null and max_results is None) or (max_results is not None and max_results < 1):
        raise invalid(f"Invalid value {max_results} for parameter 'max_results' supplied. It must be a positive integer")
    if max_results is not None and max_results > SEARCH_MAX_RESULTS_THRESHOLD:
        raise invalid(
            f"Invalid value {max_results} for parameter 'max_results' supplied. It must be at most {SEARCH_MAX_RESULTS_THRESHOLD}"
        )


def validate_registered_model_max_results(max_results: int) -> None:
    """Registry SqlAlchemyStore.search_registered_models limit (MLflow checks only the upper bound here)."""
    if max_results > SEARCH_REGISTERED_MODEL_MAX_RESULTS_THRESHOLD:
        raise invalid(
            "Invalid value for request parameter max_results. It must be at most "
            f"{SEARCH_REGISTERED_MODEL_MAX_RESULTS_THRESHOLD}, but got value {max_results}"
        )


def validate_model_version_max_results(max_results: int) -> None:
    """Registry SqlAlchemyStore.search_model_versions limits."""
    if not isinstance(max_results, int) or max_results < 1:
        raise invalid(f"Invalid value for max_results. It must be a positive integer, but got {max_results}")
    if max_results > SEARCH_MODEL_VERSION_MAX_RESULTS_THRESHOLD:
        raise invalid(
            "Invalid value for request parameter max_results. It must be at most "
            f"{SEARCH_MODEL_VERSION_MAX_RESULTS_THRESHOLD}, but got value {max_results}"
        )
