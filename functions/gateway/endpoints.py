"""Gateway endpoints: a name, the model definitions attached to it (primary / fallback, weights), tags,
bindings to MLflow resources, and the experiment its usage is traced to (SqlAlchemyGatewayStoreMixin).

An endpoint and everything hanging off it share the sort-key prefix ``E#<endpoint_id>``, so one Query
reads it whole. Every attached mapping adds one to its model definition's ``endpoint_count`` in the same
transaction (conditioned on the definition existing), which is what refuses deleting a definition in use.

Reads and rendering live here; changes of an endpoint and its model mappings are in ``endpoint_writes``, its
tags and resource bindings in ``endpoint_bindings``.
"""

from __future__ import annotations

import json
from typing import Any

from serverless_mlflow.core.errors import MlflowError
from serverless_mlflow.core.validation.json_values import float_json
from serverless_mlflow.llm_gateway import records
from serverless_mlflow.llm_gateway.records import current_workspace
from serverless_mlflow.storage import table
from serverless_mlflow.storage.schema import ENTITY

ENDPOINT = ENTITY["gateway_endpoint"]
ENDPOINT_NAME = ENTITY["gateway_endpoint_name"]
MAPPING = ENTITY["gateway_endpoint_mapping"]
TAG = ENTITY["gateway_endpoint_tag"]
BINDING = ENTITY["gateway_endpoint_binding"]
GUARDRAIL_CONFIG = ENTITY["gateway_guardrail_config"]


def endpoint_key(endpoint_id: str) -> dict[str, str]:
    return ENDPOINT.key(workspace=current_workspace(), endpoint_id=endpoint_id)


def missing_endpoint(endpoint_id: str) -> MlflowError:
    return records.missing("GatewayEndpoint", "endpoint_id", endpoint_id)


def endpoint_items(endpoint_id: str) -> list[dict[str, Any]]:
    return table.query(records.partition(), ENDPOINT.sk.render({"endpoint_id": endpoint_id})) if endpoint_id else []


def get_endpoint_item(endpoint_id: str) -> dict[str, Any]:
    item = table.get(endpoint_key(endpoint_id)) if endpoint_id else None
    if item is None:
        raise missing_endpoint(endpoint_id)
    return item


# --- rendering ---------------------------------------------------------------------------------------


def group_items(items: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """endpoint id -> {"endpoint", "mappings", "tags", "bindings"} from the items of one or more endpoints."""
    grouped: dict[str, dict[str, Any]] = {}
    for item in items:
        kind = item.get("entity_type")
        entry = grouped.setdefault(item["endpoint_id"] if "endpoint_id" in item else "", {"mappings": [], "tags": [], "bindings": []})
        if kind == ENDPOINT.name:
            entry["endpoint"] = item
        elif kind == MAPPING.name:
            entry["mappings"].append(item)
        elif kind == TAG.name:
            entry["tags"].append(item)
        elif kind == BINDING.name:
            entry["bindings"].append(item)
    return {endpoint_id: entry for endpoint_id, entry in grouped.items() if "endpoint" in entry}


def _definitions(mappings: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """model definition id -> its JSON (with its secret's name), for the mappings given (BatchGetItem)."""
    ids = sorted({m["model_definition_id"] for m in mappings})
    items = table.batch_get([records.model_definition_key(i) for i in ids]) if ids else []
    return {item["model_definition_id"]: body for item, body in zip(items, records.model_definitions_json(items), strict=True)}


def mapping_json(mapping: dict[str, Any], definitions: dict[str, dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {
        "mapping_id": mapping["mapping_id"],
        "endpoint_id": mapping["endpoint_id"],
        "model_definition_id": mapping["model_definition_id"],
    }
    if mapping["model_definition_id"] in definitions:
        out["model_definition"] = definitions[mapping["model_definition_id"]]
    # Protobuf JSON for a float: NaN and the infinities as strings (an older version stored "nan" for a bare NaN).
    out["weight"] = float_json(float(mapping["weight"]))
    out["linkage_type"] = mapping["linkage_type"]
    if mapping.get("fallback_order") is not None:
        out["fallback_order"] = int(mapping["fallback_order"])
    out["created_at"] = int(mapping["created_at"])
    if mapping.get("created_by") is not None:
        out["created_by"] = mapping["created_by"]
    return out


def endpoint_json(entry: dict[str, Any], definitions: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """``GatewayEndpoint.to_proto()`` through ``message_to_json`` (proto2: name/created_by are always set)."""
    endpoint = entry["endpoint"]
    mappings = sorted(entry["mappings"], key=lambda m: (int(m.get("position", 0)), m["mapping_id"]))
    out: dict[str, Any] = {"endpoint_id": endpoint["endpoint_id"], "name": endpoint.get("name") or ""}
    out["created_at"] = int(endpoint["created_at"])
    out["last_updated_at"] = int(endpoint["last_updated_at"])
    if mappings:
        out["model_mappings"] = [mapping_json(m, definitions) for m in mappings]
    out["created_by"] = endpoint.get("created_by") or ""
    out["last_updated_by"] = endpoint.get("last_updated_by") or ""
    if entry["tags"]:
        out["tags"] = [{"key": t["key"], **({"value": t["value"]} if t.get("value") is not None else {})} for t in entry["tags"]]
    if endpoint.get("routing_strategy"):
        out["routing_strategy"] = endpoint["routing_strategy"]
    if endpoint.get("fallback_config"):
        stored = json.loads(endpoint["fallback_config"])
        out["fallback_config"] = {
            **({"strategy": stored["strategy"]} if stored.get("strategy") else {}),
            **({"max_attempts": stored["max_attempts"]} if stored.get("max_attempts") is not None else {}),
        }
    if endpoint.get("experiment_id") is not None:
        out["experiment_id"] = str(endpoint["experiment_id"])
    out["usage_tracking"] = bool(endpoint.get("usage_tracking", True))
    return out


def _render(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    grouped = group_items(items)
    definitions = _definitions([m for entry in grouped.values() for m in entry["mappings"]])
    entries = sorted(grouped.values(), key=lambda e: (int(e["endpoint"]["created_at"]), e["endpoint"]["endpoint_id"]))
    return [endpoint_json(entry, definitions) for entry in entries]


def get_endpoint(endpoint_id: str) -> dict[str, Any]:
    rendered = _render(endpoint_items(endpoint_id))
    if not rendered:
        raise missing_endpoint(endpoint_id)
    return rendered[0]


def get_endpoint_by_name(name: str) -> dict[str, Any]:
    claim = table.get(ENDPOINT_NAME.key(workspace=current_workspace(), name=name))
    rendered = _render(endpoint_items(claim["endpoint_id"])) if claim else []
    if not rendered:
        raise records.missing("GatewayEndpoint", "name", name)
    return rendered[0]


def list_endpoints(provider: str | None, secret_id: str | None) -> list[dict[str, Any]]:
    """Endpoints with at least one mapping (MLflow's inner join), optionally using a provider / secret."""
    items = records.query_kind(ENDPOINT.sk_prefix())
    rendered = _render(items)
    out = []
    for endpoint in rendered:
        definitions = [m.get("model_definition", {}) for m in endpoint.get("model_mappings", [])]
        if not definitions:
            continue
        if provider and not any(d.get("provider") == provider for d in definitions):
            continue
        if secret_id and not any(d.get("secret_id") == secret_id for d in definitions):
            continue
        out.append(endpoint)
    return out
