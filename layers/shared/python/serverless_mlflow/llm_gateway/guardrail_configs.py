"""An endpoint's guardrails in MLflow's execution order, read by the configuration routes and by the runtime
on every call: one Query of the endpoint's ``E#<id>#G#`` configs and one BatchGetItem of their guardrails."""

from __future__ import annotations

from typing import Any

from serverless_mlflow.request.workspace import current as current_workspace
from serverless_mlflow.storage import table
from serverless_mlflow.storage.schema import ENTITY

from . import records

GUARDRAIL = ENTITY["gateway_guardrail"]
CONFIG = ENTITY["gateway_guardrail_config"]


def guardrail_key(guardrail_id: str) -> dict[str, str]:
    return GUARDRAIL.key(workspace=current_workspace(), guardrail_id=guardrail_id)


def sorted_configs(configs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """MLflow's order: configs with an execution order first, ascending; then by guardrail id."""
    return sorted(configs, key=lambda c: (c.get("execution_order") is None, int(c.get("execution_order") or 0), c["guardrail_id"]))


def endpoint_configs(endpoint_id: str) -> list[tuple[dict[str, Any], dict[str, Any] | None]]:
    """(config, its guardrail item or None) of one endpoint, in execution order."""
    configs = table.query(records.partition(), CONFIG.sk_prefix(endpoint_id=endpoint_id))
    ids = sorted({c["guardrail_id"] for c in configs})
    guardrails = {g["guardrail_id"]: g for g in (table.batch_get([guardrail_key(i) for i in ids]) if ids else [])}
    return [(c, guardrails.get(c["guardrail_id"])) for c in sorted_configs(configs)]


def endpoint_names(endpoint_ids: list[str]) -> dict[str, str]:
    """endpoint id -> name for the endpoints that still exist (a guardrail's action endpoint is named by name)."""
    endpoint = ENTITY["gateway_endpoint"]
    keys = [endpoint.key(workspace=current_workspace(), endpoint_id=i) for i in sorted(set(endpoint_ids))]
    return {item["endpoint_id"]: item["name"] for item in table.batch_get(keys)} if keys else {}
