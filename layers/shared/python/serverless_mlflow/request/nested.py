"""Nested messages of MLflow's protos (Metric; Param / RunTag / InputTag) read from request JSON."""

from __future__ import annotations

from typing import Any

from serverless_mlflow.core.errors import MlflowError

from .answers import type_error
from .proto import NestedParseError, to_double, to_int64, to_string


def nested_error(path: str, value: Any) -> MlflowError:
    return type_error(path, value)


def message_of(value: Any, path: str) -> dict[str, Any]:
    """A nested message (a JSON object; absent reads as empty), or MLflow's type error at ``path``."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise nested_error(path, value)
    return value


def _entries(entries: Any, list_name: str) -> list[Any]:
    """A repeated nested message: a list, or MLflow's type error (a number where a list belongs)."""
    if not isinstance(entries, list):
        raise nested_error(list_name, entries)
    return entries


def metrics_of(entries: Any, list_name: str = "metrics") -> list[dict[str, Any]]:
    """Metric messages -> {key, value, timestamp, step, model_id, dataset_name, dataset_digest}.

    Unset fields take proto defaults as ``Metric.from_proto`` sees them: step 0; key "" only if a
    check upstream let it through.
    """
    out = []
    for idx, entry in enumerate(_entries(entries, list_name)):
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


def key_values_of(entries: Any, list_name: str) -> list[dict[str, Any]]:
    """Param / RunTag / InputTag messages -> {key, value}; unset fields are "" (proto defaults)."""
    out = []
    for idx, entry in enumerate(_entries(entries, list_name)):
        if not isinstance(entry, dict):
            raise nested_error(f"{list_name}[{idx}]", entry)
        pair: dict[str, Any] = {}
        for name in ("key", "value"):
            value = entry.get(name)
            if value is None:
                pair[name] = ""
                continue
            try:
                pair[name] = to_string(value)
            except NestedParseError:
                raise nested_error(f"{list_name}[{idx}].{name}", value) from None
        out.append(pair)
    return out
