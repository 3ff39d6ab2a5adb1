"""Gateway items of a workspace's ``GW#<workspace>`` partition: keys, reads, and MLflow's JSON for them.

The whole gateway configuration of a workspace is a few hundred small items at most, so one partition
holds it: secrets (``S#``), model definitions (``D#``), their name claims (``SN#``/``DN#``), endpoints
(``E#``) and what hangs off them. Lists are one strongly consistent Query by prefix.
"""

from __future__ import annotations

import json
from typing import Any

from serverless_mlflow.core.errors import not_found
from serverless_mlflow.request.workspace import current as current_workspace
from serverless_mlflow.storage import table
from serverless_mlflow.storage.schema import ENTITY

SECRET = ENTITY["gateway_secret"]
SECRET_NAME = ENTITY["gateway_secret_name"]
MODEL_DEFINITION = ENTITY["gateway_model_definition"]
MODEL_DEFINITION_NAME = ENTITY["gateway_model_definition_name"]


def missing(entity_name: str, field: str, value: str) -> Exception:
    """SqlAlchemyStore._get_entity_or_raise's 404."""
    return not_found(f"{entity_name} not found ({field}='{value}')")


def partition() -> str:
    return SECRET.pk.render({"workspace": current_workspace()})


def query_kind(prefix: str) -> list[dict[str, Any]]:
    """Every item of one kind (``S#``, ``D#``...), in creation order as MLflow's SQL lists them."""
    items = table.query(partition(), prefix)
    return sorted(items, key=lambda item: (int(item.get("created_at", 0)), item["sk"]))


# --- secrets ------------------------------------------------------------------------------------


def secret_key(secret_id: str) -> dict[str, str]:
    return SECRET.key(workspace=current_workspace(), secret_id=secret_id)


def get_secret(secret_id: str) -> dict[str, Any]:
    item = table.get(secret_key(secret_id)) if secret_id else None
    if item is None:
        raise missing("GatewaySecret", "secret_id", secret_id)
    return item


def secret_json(item: dict[str, Any]) -> dict[str, Any]:
    """``GatewaySecretInfo.to_proto()`` through ``message_to_json``: the mask, never the value."""
    out: dict[str, Any] = {"secret_id": item["secret_id"], "secret_name": item["secret_name"]}
    masked = json.loads(item.get("masked_value") or "{}")
    if masked:
        out["masked_values"] = masked
    out["created_at"] = int(item["created_at"])
    out["last_updated_at"] = int(item["last_updated_at"])
    for field in ("provider", "created_by", "last_updated_by"):
        if item.get(field) is not None:
            out[field] = item[field]
    auth_config = json.loads(item["auth_config"]) if item.get("auth_config") else None
    if auth_config:
        out["auth_config"] = auth_config
    return out


# --- model definitions --------------------------------------------------------------------------


def model_definition_key(model_definition_id: str) -> dict[str, str]:
    return MODEL_DEFINITION.key(workspace=current_workspace(), model_definition_id=model_definition_id)


def get_model_definition(model_definition_id: str) -> dict[str, Any]:
    item = table.get(model_definition_key(model_definition_id)) if model_definition_id else None
    if item is None:
        raise missing("GatewayModelDefinition", "model_definition_id", model_definition_id)
    return item


def secret_names(secret_ids: set[str]) -> dict[str, str]:
    """secret id -> name for the secrets that still exist (a deleted secret leaves its definitions orphaned)."""
    wanted = [secret_key(secret_id) for secret_id in sorted(secret_ids)]
    return {item["secret_id"]: item["secret_name"] for item in table.batch_get(wanted)} if wanted else {}


def model_definition_json(item: dict[str, Any], names: dict[str, str]) -> dict[str, Any]:
    """``GatewayModelDefinition.to_proto()``; ``secret_id`` reads as unset once its secret is gone (ON DELETE SET NULL)."""
    out: dict[str, Any] = {"model_definition_id": item["model_definition_id"], "name": item["name"]}
    secret_id = item.get("secret_id")
    if secret_id and secret_id in names:
        out["secret_id"] = secret_id
        out["secret_name"] = names[secret_id]
    out["provider"] = item["provider"]
    out["model_name"] = item["model_name"]
    out["created_at"] = int(item["created_at"])
    out["last_updated_at"] = int(item["last_updated_at"])
    for field in ("created_by", "last_updated_by"):
        if item.get(field) is not None:
            out[field] = item[field]
    return out


def model_definitions_json(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    names = secret_names({item["secret_id"] for item in items if item.get("secret_id")})
    return [model_definition_json(item, names) for item in items]
