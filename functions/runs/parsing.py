"""Request messages of the run routes, parsed and checked as MLflow's handlers do.

``FIELDS`` mirror the proto messages (service.proto) and ``SCHEMAS`` the handler's
``_get_request_message(..., schema=...)`` checks. Nested messages (metrics, params, tags, datasets)
are coerced here with protobuf's JSON rules: doubles accept numbers and the strings "NaN",
"Infinity", "-Infinity"; int64 accepts integral numbers and decimal strings.
"""

from __future__ import annotations

from typing import Any

from serverless_mlflow import request as rp
from serverless_mlflow.api import Request

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1
INT32_MIN = -(2**31)
INT32_MAX = 2**31 - 1

# RunStatus enum (service.proto) and ViewType (experiments/search).
RUN_STATUS_NAMES = {1: "RUNNING", 2: "SCHEDULED", 3: "FINISHED", 4: "FAILED", 5: "KILLED"}
RUN_STATUS_NUMBERS = {name: number for number, name in RUN_STATUS_NAMES.items()}
VIEW_TYPES = {1: "ACTIVE_ONLY", 2: "DELETED_ONLY", 3: "ALL"}
VIEW_TYPE_NUMBERS = {name: number for number, name in VIEW_TYPES.items()}

FIELDS: dict[str, dict[str, str]] = {
    "create_run": {"experiment_id": "string", "user_id": "string", "run_name": "string", "start_time": "int64", "tags": "[message]"},
    "update_run": {"run_id": "string", "run_uuid": "string", "status": "enum", "end_time": "int64", "run_name": "string"},
    "delete_run": {"run_id": "string"},
    "restore_run": {"run_id": "string"},
    "get_run": {"run_id": "string", "run_uuid": "string"},
    "log_metric": {
        "run_id": "string", "run_uuid": "string", "key": "string", "value": "double", "timestamp": "int64", "step": "int64",
        "model_id": "string", "dataset_name": "string", "dataset_digest": "string",
    },
    "log_param": {"run_id": "string", "run_uuid": "string", "key": "string", "value": "string"},
    "set_tag": {"run_id": "string", "run_uuid": "string", "key": "string", "value": "string"},
    "delete_tag": {"run_id": "string", "key": "string"},
    "log_batch": {"run_id": "string", "metrics": "[message]", "params": "[message]", "tags": "[message]"},
    "log_model": {"run_id": "string", "model_json": "string"},
    "log_inputs": {"run_id": "string", "datasets": "[message]", "models": "[message]"},
    "log_outputs": {"run_id": "string", "models": "[message]"},
    "search_runs": {
        "experiment_ids": "[string]", "filter": "string", "run_view_type": "enum", "max_results": "int32",
        "order_by": "[string]", "page_token": "string",
    },
    "get_metric_history": {"run_id": "string", "run_uuid": "string", "metric_key": "string", "page_token": "string", "max_results": "int32"},
    "get_metric_history_bulk_interval": {
        "run_ids": "[string]", "metric_key": "string", "start_step": "int32", "end_step": "int32", "max_results": "int32",
    },
}

MAX_RUNS_GET_METRIC_HISTORY_BULK = 100
MAX_RESULTS_PER_RUN = 2500

SCHEMAS: dict[str, dict[str, list[rp.Check]]] = {
    "create_run": {"experiment_id": [rp.string], "start_time": [rp.intlike], "run_name": [rp.string]},
    "update_run": {"run_id": [rp.required, rp.string], "end_time": [rp.intlike], "status": [rp.string], "run_name": [rp.string]},
    "delete_run": {"run_id": [rp.required, rp.string]},
    "restore_run": {"run_id": [rp.required, rp.string]},
    "get_run": {"run_id": [rp.required, rp.string]},
    "log_metric": {
        "run_id": [rp.required, rp.string], "key": [rp.required, rp.string], "value": [rp.required, rp.floatlike],
        "timestamp": [rp.intlike, rp.required], "step": [rp.intlike], "model_id": [rp.string],
        "dataset_name": [rp.string], "dataset_digest": [rp.string],
    },
    "log_param": {"run_id": [rp.required, rp.string], "key": [rp.required, rp.string], "value": [rp.string]},
    "set_tag": {"run_id": [rp.required, rp.string], "key": [rp.required, rp.string], "value": [rp.string]},
    "delete_tag": {"run_id": [rp.required, rp.string], "key": [rp.required, rp.string]},
    "log_batch": {
        "run_id": [rp.string, rp.required],
        "metrics": [rp.array, rp.each_has(("key", "value", "timestamp"), "metrics")],
        "params": [rp.array, rp.each_has(("key",), "params")],
        "tags": [rp.array, rp.each_has(("key",), "tags")],
    },
    "log_model": {"run_id": [rp.string, rp.required], "model_json": [rp.string, rp.required]},
    "log_inputs": {"run_id": [rp.required, rp.string], "datasets": [rp.array], "models": [rp.array]},
    "log_outputs": {"run_id": [rp.required, rp.string], "models": [rp.required, rp.array]},
    "search_runs": {
        "experiment_ids": [rp.array],
        "filter": [rp.string],
        "max_results": [rp.intlike, rp.less_than_or_equal(50000)],
        "order_by": [rp.array, rp.item_type_string],
    },
    "get_metric_history": {"run_id": [rp.string, rp.required], "metric_key": [rp.string, rp.required], "page_token": [rp.string]},
    "get_metric_history_bulk_interval": {
        "run_ids": [
            rp.required, rp.array, rp.item_type_string,
            lambda x: _at_most(
                len(x), MAX_RUNS_GET_METRIC_HISTORY_BULK,
                f"GetMetricHistoryBulkInterval request must specify at most {MAX_RUNS_GET_METRIC_HISTORY_BULK} run_ids. Received {len(x)} run_ids.",
            ),
        ],
        "metric_key": [rp.required, rp.string],
        "start_step": [rp.intlike],
        "end_step": [rp.intlike],
        "max_results": [rp.intlike, lambda x: _within(int(x), 1, MAX_RESULTS_PER_RUN, f"max_results must be between 1 and {MAX_RESULTS_PER_RUN}.")],
    },
}


def _at_most(value: int, limit: int, message: str) -> None:
    if value > limit:
        raise AssertionError(message)


def _within(value: int, low: int, high: int, message: str) -> None:
    if not low <= value <= high:
        raise AssertionError(message)


def message(req: Request, operation: str) -> dict[str, Any]:
    """Parse and check a run route's request like MLflow; only fields that were sent come back.

    MLflow's schema check of ``run_id`` falls back to ``run_uuid`` (old clients send only that), and
    the handlers then use ``run_id or run_uuid``; the returned ``run_id`` is that value.
    """
    fields = FIELDS[operation]
    repeated = tuple(name for name, kind in fields.items() if kind.startswith("["))
    booleans = tuple(name for name, kind in fields.items() if kind == "bool")
    return message_from(dict(req.params(repeated, booleans)), operation)


def message_from(raw: dict[str, Any], operation: str) -> dict[str, Any]:
    """``message`` for fields that arrive as a dict (GraphQL inputs)."""
    fields = FIELDS[operation]
    raw = dict(raw)
    if raw.get("run_id") in (None, "") and raw.get("run_uuid") not in (None, ""):
        raw["run_id"] = raw["run_uuid"]
    parsed = rp.message(raw, fields, SCHEMAS.get(operation))
    for name, kind in fields.items():
        if kind in ("int64", "int32") and name in parsed:
            parsed[name] = _int_in_range(parsed[name], name, raw[name], kind)
    return parsed


def _int_in_range(value: int, name: str, raw: Any, kind: str) -> int:
    low, high = (INT64_MIN, INT64_MAX) if kind == "int64" else (INT32_MIN, INT32_MAX)
    if not low <= value <= high:
        raise rp.type_error(name, raw)
    return value


# --- nested messages (protobuf JSON rules) --------------------------------------------------------

class NestedParseError(ValueError):
    pass


def to_double(value: Any) -> float:
    # protobuf reads JSON true/false as 1.0/0.0 for doubles.
    if value is None:
        raise NestedParseError
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        if value == "nan":  # protobuf insists on "NaN"
            raise NestedParseError
        try:
            return float(value)
        except ValueError:
            raise NestedParseError from None
    raise NestedParseError


def to_int64(value: Any) -> int:
    if isinstance(value, bool) or value is None:
        raise NestedParseError
    if isinstance(value, float):
        if not value.is_integer():
            raise NestedParseError
        value = int(value)
    elif isinstance(value, str):
        try:
            value = int(value)
        except ValueError:
            try:
                as_float = float(value)
            except ValueError:
                raise NestedParseError from None
            if not as_float.is_integer():
                raise NestedParseError from None
            value = int(as_float)
    if not isinstance(value, int) or not INT64_MIN <= value <= INT64_MAX:
        raise NestedParseError
    return value


def to_string(value: Any) -> str:
    if not isinstance(value, str):
        raise NestedParseError
    return value


def nested_error(path: str, value: Any) -> Exception:
    return rp.type_error(path, value)


def metrics_of(entries: list[Any], list_name: str = "metrics") -> list[dict[str, Any]]:
    """Metric messages -> {key, value, timestamp, step, model_id, dataset_name, dataset_digest}.

    Unset fields take proto defaults as ``Metric.from_proto`` sees them: step 0; key "" only if a
    check upstream let it through.
    """
    out = []
    for idx, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise nested_error(f"{list_name}[{idx}]", entry)
        metric: dict[str, Any] = {"key": entry.get("key"), "value": entry.get("value"), "timestamp": entry.get("timestamp"), "step": 0}
        for name, convert in (("key", to_string), ("value", to_double), ("timestamp", to_int64), ("step", to_int64)):
            if entry.get(name) is not None:
                try:
                    metric[name] = convert(entry[name])
                except NestedParseError:
                    raise nested_error(f"{list_name}[{idx}].{name}", entry[name]) from None
        for name in ("model_id", "dataset_name", "dataset_digest"):
            metric[name] = entry.get(name) or None
        out.append(metric)
    return out


def key_values_of(entries: list[Any], list_name: str) -> list[dict[str, Any]]:
    """Param / RunTag / InputTag messages -> {key, value}; unset fields are "" (proto defaults)."""
    out = []
    for idx, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise nested_error(f"{list_name}[{idx}]", entry)
        pair: dict[str, Any] = {}
        for name in ("key", "value"):
            value = entry.get(name)
            if value is None:
                pair[name] = ""
                continue
            if not isinstance(value, str):
                raise nested_error(f"{list_name}[{idx}].{name}", value)
            pair[name] = value
        out.append(pair)
    return out
