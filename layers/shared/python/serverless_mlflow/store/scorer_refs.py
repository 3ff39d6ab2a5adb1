"""Registered scorers as other features see them: a scorer version found by scorer id (gateway guardrails),
MLflow's Scorer JSON for it, and whether its serialized form carries ``@scorer`` source code."""

from __future__ import annotations

from typing import Any

from serverless_mlflow.core.errors import not_found
from serverless_mlflow.storage import keys, table
from serverless_mlflow.storage.schema import ENTITY

SCORER_REF = ENTITY["scorer_ref"]
SCORER_VERSION = ENTITY["scorer_version"]


def has_call_source(value: Any) -> bool:
    """MLflow's ``_obj_has_call_source``: a custom ``@scorer`` (its stored source would run), nested ones too."""
    if isinstance(value, dict):
        return value.get("call_source") is not None or any(has_call_source(v) for v in value.values())
    if isinstance(value, list):
        return any(has_call_source(v) for v in value)
    return False


def custom_scorer_without_source(value: Any) -> str | None:
    """MLflow 3.18's ``find_custom_scorer_without_source``: the name of a custom ``@scorer`` (ensembles searched
    too) whose stored source code is empty, a scorer that can never run; None when every one has source."""
    if isinstance(value, dict):
        call_source = value.get("call_source")
        if isinstance(call_source, str) and not call_source.strip():
            return str(value.get("name") or value.get("original_func_name") or "")
        values: list[Any] = list(value.values())
    elif isinstance(value, list):
        values = value
    else:
        return None
    return next((name for name in map(custom_scorer_without_source, values) if name is not None), None)


def scorer_version_json(version: dict[str, Any]) -> dict[str, Any]:
    """The Scorer message (experiment_id is an int32 there)."""
    return {
        "experiment_id": int(version["experiment_id"]),
        "scorer_name": version["name"],
        "scorer_version": int(version["version"]),
        "serialized_scorer": version["serialized_scorer"],
        "creation_time": int(version["creation_time"]),
        "scorer_id": version["scorer_id"],
    }


def ref_item(scorer_id: str, experiment_id: str, name: str) -> dict[str, Any]:
    return SCORER_REF.item({"scorer_id": scorer_id, "experiment_id": experiment_id, "name": name}, scorer_id=scorer_id)


def ref_key(scorer_id: str) -> dict[str, str]:
    return SCORER_REF.key(scorer_id=scorer_id)


def get_version(scorer_id: str, version: int) -> dict[str, Any]:
    """SqlAlchemyStore._get_scorer_version: the version item, or MLflow's 404 texts (two GetItems)."""
    ref = table.get(ref_key(scorer_id)) if 0 < len(scorer_id.encode("utf-8")) <= 1024 else None
    if ref is None:
        raise not_found(f"Scorer with ID '{scorer_id}' not found.")
    try:
        key = SCORER_VERSION.key(experiment_id=ref["experiment_id"], name=ref["name"], version=version)
    except keys.OutOfRange:
        key = None  # a negative or huge version: none is stored (MLflow answers the same 404)
    item = table.get(key) if key is not None else None
    if item is None:
        raise not_found(f"Scorer with ID '{scorer_id}' and version {version} not found.")
    return item


def model_of(data: dict[str, Any]) -> Any:
    """``extract_model_from_serialized_scorer``."""
    for field in ("instructions_judge_pydantic_data", "builtin_scorer_pydantic_data"):
        if section := data.get(field):
            return section.get("model") if isinstance(section, dict) else None
    if memory := data.get("memory_augmented_judge_data"):
        base = memory.get("base_judge", {}) if isinstance(memory, dict) else {}
        return model_of(base) if isinstance(base, dict) else None
    if third_party := data.get("third_party_scorer_data"):
        return third_party.get("model") if isinstance(third_party, dict) else None
    return None


def is_gateway_model(model: Any) -> bool:
    """``is_gateway_model``: ``_parse_model_uri`` gives provider ``gateway`` (a malformed URI is not one)."""
    if not isinstance(model, str):
        return False
    provider, separator, path = model.partition(":/")
    return bool(separator and provider == "gateway" and path.lstrip("/"))
