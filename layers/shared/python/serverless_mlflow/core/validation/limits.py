"""MLflow's size and count limits, search page bounds, and the environment switches that move them."""

from __future__ import annotations

import os

from serverless_mlflow.core.errors import invalid

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
