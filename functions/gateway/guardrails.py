"""Gateway guardrails (SqlAlchemyGatewayStoreMixin's guardrail methods): a registered scorer version run
BEFORE or AFTER an endpoint's calls, and the per-endpoint configs that order them.

A guardrail is a ``G#`` item of the workspace's gateway partition carrying a copy of its scorer version
(versions never change), so it answers without a second read; its scorer is found by id through the
scorer's ``SCORER#<id>/REF`` pointer. An endpoint's configs sort under ``E#<endpoint_id>#G#``: one Query
lists them, and deleting the endpoint deletes them (MLflow's ON DELETE CASCADE). Deleting a guardrail
removes its configs from every endpoint; the partition is small, so they are found with one Query of its
``E#`` items.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

from serverless_mlflow.core import clock
from serverless_mlflow.core.errors import MlflowError, invalid, not_found
from serverless_mlflow.llm_gateway import guardrail_configs, records
from serverless_mlflow.llm_gateway.records import current_workspace
from serverless_mlflow.storage import table
from serverless_mlflow.storage.schema import ENTITY
from serverless_mlflow.store import scorer_refs

GUARDRAIL = guardrail_configs.GUARDRAIL
CONFIG = guardrail_configs.CONFIG
ENDPOINT = ENTITY["gateway_endpoint"]
STAGES = ("BEFORE", "AFTER")
ACTIONS = ("VALIDATION", "SANITIZATION")
SEARCH_MAX_RESULTS_DEFAULT = 1000
CUSTOM_SCORER_REFUSED = (
    "Gateway guardrails do not support custom scorers defined with the @scorer decorator. Use a built-in scorer "
    "or a judge created with make_judge."
)


def enum(name: str, value: Any, allowed: tuple[str, ...]) -> str:
    """``GuardrailStage/GuardrailAction.from_proto``: a name or number of the proto enum. UNSPECIFIED (0) makes
    MLflow's enum constructor raise (a 500 there); it is refused as an invalid value here."""
    if isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= len(allowed):
        value = allowed[value - 1]
    if value not in allowed:
        raise invalid(f"Invalid {name}: {value}")
    return str(value)


_key = guardrail_configs.guardrail_key


def _config_key(endpoint_id: str, guardrail_id: str) -> dict[str, str]:
    return CONFIG.key(workspace=current_workspace(), endpoint_id=endpoint_id, guardrail_id=guardrail_id)


def _usable(value: str) -> bool:
    """An id that can be part of a key (anything else names nothing that exists)."""
    return 0 < len(value.encode("utf-8")) <= 512 and "#" not in value


def _missing(guardrail_id: str) -> MlflowError:
    return records.missing("Guardrail", "guardrail_id", guardrail_id)


def _get_item(guardrail_id: str) -> dict[str, Any]:
    item = table.get(_key(guardrail_id)) if _usable(guardrail_id) else None
    if item is None:
        raise _missing(guardrail_id)
    return item


def _endpoint_item(endpoint_id: str) -> dict[str, Any]:
    item = table.get(ENDPOINT.key(workspace=current_workspace(), endpoint_id=endpoint_id)) if _usable(endpoint_id) else None
    if item is None:
        raise records.missing("Endpoint", "endpoint_id", endpoint_id)
    return item


def _endpoint_names(items: list[dict[str, Any]]) -> dict[str, str]:
    """action endpoint id -> the endpoint's name (MLflow answers the name in ``action_endpoint_id``), for the
    endpoints that still exist (a deleted one reads as unset: ON DELETE SET NULL)."""
    return guardrail_configs.endpoint_names([item["action_endpoint_id"] for item in items if item.get("action_endpoint_id")])


def guardrail_json(item: dict[str, Any], names: dict[str, str]) -> dict[str, Any]:
    """``GatewayGuardrail.to_proto()`` through ``message_to_json``."""
    out: dict[str, Any] = {
        "guardrail_id": item["guardrail_id"],
        "name": item["name"],
        "scorer": json.loads(item["scorer"]),
        "stage": item["stage"],
        "action": item["action"],
    }
    if item.get("action_endpoint_id") in names:
        out["action_endpoint_id"] = names[item["action_endpoint_id"]]
    out["created_by"] = item.get("created_by") or ""
    out["created_at"] = int(item["created_at"])
    out["last_updated_by"] = item.get("last_updated_by") or ""
    out["last_updated_at"] = int(item["last_updated_at"])
    return out


def _one_json(item: dict[str, Any]) -> dict[str, Any]:
    return guardrail_json(item, _endpoint_names([item]))


def config_json(config: dict[str, Any], guardrail: dict[str, Any] | None) -> dict[str, Any]:
    """``GatewayGuardrailConfig.to_proto()``: the guardrail inline when it exists."""
    out: dict[str, Any] = {"endpoint_id": config["endpoint_id"], "guardrail_id": config["guardrail_id"]}
    if config.get("execution_order") is not None:
        out["execution_order"] = int(config["execution_order"])
    if guardrail is not None:
        out["guardrail"] = guardrail
    out["created_by"] = config.get("created_by") or ""
    out["created_at"] = int(config["created_at"])
    return out


def create_guardrail(msg: dict[str, Any], stage: str, action: str) -> dict[str, Any]:
    version = scorer_refs.get_version(msg["scorer_id"], int(msg["scorer_version"]))
    if scorer_refs.has_call_source(json.loads(version["serialized_scorer"])):
        raise invalid(CUSTOM_SCORER_REFUSED)
    action_endpoint_id = msg.get("action_endpoint_id") or None
    if action_endpoint_id is not None:
        # MLflow's foreign key refuses an endpoint that does not exist.
        _endpoint_item(action_endpoint_id)
    now = clock.now_millis()
    guardrail_id = f"gr-{uuid.uuid4().hex}"
    attributes = {
        "guardrail_id": guardrail_id,
        "name": msg["name"],
        "scorer_id": version["scorer_id"],
        "scorer_version": int(version["version"]),
        "scorer": json.dumps(scorer_refs.scorer_version_json(version)),
        "stage": stage,
        "action": action,
        "action_endpoint_id": action_endpoint_id,
        "created_at": now,
        "last_updated_at": now,
        "created_by": msg.get("created_by") or None,
        "last_updated_by": msg.get("created_by") or None,
    }
    item = GUARDRAIL.item(attributes, workspace=current_workspace(), guardrail_id=guardrail_id)
    table.put(item, condition="attribute_not_exists(pk)")
    return _one_json(item)


def get_guardrail(guardrail_id: str) -> dict[str, Any]:
    return _one_json(_get_item(guardrail_id))


def delete_guardrail(guardrail_id: str) -> None:
    _get_item(guardrail_id)
    try:
        table.delete(_key(guardrail_id), condition="attribute_exists(pk)")
    except table.ConditionFailed:
        raise _missing(guardrail_id) from None
    attached = [
        table.key_of(item)
        for item in records.query_kind(ENDPOINT.sk_prefix())
        if item.get("entity_type") == CONFIG.name and item["guardrail_id"] == guardrail_id
    ]
    if attached:
        table.batch_write(deletes=attached)


def list_guardrails(max_results: int | None, page_token: str | None) -> tuple[list[dict[str, Any]], str | None]:
    """In guardrail id order, paged by offset (SqlAlchemyStore's ``order_by(guardrail_id)``)."""
    # The MCP search module carries the filter grammar (sqlparse); only a list call needs its paging helpers.
    from .mcp.search import page, start_offset, validate_max_results

    max_results = max_results or SEARCH_MAX_RESULTS_DEFAULT
    validate_max_results(max_results)
    offset = start_offset(page_token)
    items = sorted(table.query(records.partition(), GUARDRAIL.sk_prefix()), key=lambda item: item["guardrail_id"])
    rows, token = page(items, offset, max_results)
    names = _endpoint_names(rows)
    return [guardrail_json(item, names) for item in rows], token


def add_to_endpoint(endpoint_id: str, guardrail_id: str, execution_order: int | None, created_by: str | None) -> dict[str, Any]:
    _endpoint_item(endpoint_id)
    guardrail = _get_item(guardrail_id)
    attributes = {
        "endpoint_id": endpoint_id,
        "guardrail_id": guardrail_id,
        "execution_order": execution_order,
        "created_at": clock.now_millis(),
        "created_by": created_by,
    }
    config = CONFIG.item(attributes, workspace=current_workspace(), endpoint_id=endpoint_id, guardrail_id=guardrail_id)
    try:
        table.put(config, condition="attribute_not_exists(pk)")
    except table.ConditionFailed:
        raise MlflowError(f"Guardrail '{guardrail_id}' is already added to endpoint '{endpoint_id}'", "RESOURCE_ALREADY_EXISTS") from None
    return config_json(config, _one_json(guardrail))


def _config_missing(endpoint_id: str, guardrail_id: str) -> MlflowError:
    return not_found(f"GuardrailConfig not found (endpoint_id='{endpoint_id}', guardrail_id='{guardrail_id}')")


def update_config(endpoint_id: str, guardrail_id: str, execution_order: int | None) -> dict[str, Any]:
    """The order given replaces the stored one; none given clears it (MLflow's ``execution_order=None``)."""
    if not (_usable(endpoint_id) and _usable(guardrail_id)):
        raise _config_missing(endpoint_id, guardrail_id)
    key = _config_key(endpoint_id, guardrail_id)
    if execution_order is None:
        expression, values = "REMOVE execution_order", None
    else:
        expression, values = "SET execution_order = :order", {":order": execution_order}
    try:
        config = table.update(key, expression, values=values, condition="attribute_exists(pk)", return_values="ALL_NEW")
    except table.ConditionFailed:
        raise _config_missing(endpoint_id, guardrail_id) from None
    assert config is not None
    guardrail = table.get(_key(guardrail_id))
    return config_json(config, _one_json(guardrail) if guardrail else None)


def remove_from_endpoint(endpoint_id: str, guardrail_id: str) -> None:
    if not (_usable(endpoint_id) and _usable(guardrail_id)):
        raise _config_missing(endpoint_id, guardrail_id)
    try:
        table.delete(_config_key(endpoint_id, guardrail_id), condition="attribute_exists(pk)")
    except table.ConditionFailed:
        raise _config_missing(endpoint_id, guardrail_id) from None


def list_for_endpoint(endpoint_id: str) -> list[dict[str, Any]]:
    _endpoint_item(endpoint_id)
    configs = guardrail_configs.endpoint_configs(endpoint_id)
    names = _endpoint_names([guardrail for _, guardrail in configs if guardrail])
    return [config_json(config, guardrail_json(guardrail, names) if guardrail else None) for config, guardrail in configs]
