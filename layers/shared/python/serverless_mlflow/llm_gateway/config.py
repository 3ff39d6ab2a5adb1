"""An endpoint's runtime configuration, resolved by name (MLflow's ``get_endpoint_config``).

Three reads of the workspace's gateway partition: the name claim (GetItem), the endpoint's items
(one Query by its prefix: the endpoint, its mappings, tags), then its model definitions and their secrets
(one BatchGetItem each). Secret values are decrypted with KMS here, in the runtime functions only, and kept
in memory for ``SECRET_CACHE_SECONDS`` per warm container (keyed by the ciphertext, so a rotation is seen
on the next read of the item).
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from serverless_mlflow.storage import table
from serverless_mlflow.storage.schema import ENTITY

from . import crypto, records
from .records import current_workspace

ENDPOINT = ENTITY["gateway_endpoint"]
ENDPOINT_NAME = ENTITY["gateway_endpoint_name"]
MAPPING = ENTITY["gateway_endpoint_mapping"]
PRIMARY, FALLBACK = "PRIMARY", "FALLBACK"
SECRET_CACHE_SECONDS = 300.0

_cache_lock = threading.Lock()
_secret_cache: dict[str, tuple[float, dict[str, Any]]] = {}


@dataclass
class ModelConfig:
    model_definition_id: str
    provider: str
    model_name: str
    secret_value: dict[str, Any]
    auth_config: dict[str, Any]
    linkage_type: str
    weight: float = 1.0
    fallback_order: int | None = None


@dataclass
class EndpointConfig:
    endpoint_id: str
    endpoint_name: str
    experiment_id: str | None
    usage_tracking: bool
    routing_strategy: str | None
    fallback: dict[str, Any] | None
    models: list[ModelConfig] = field(default_factory=list)

    @property
    def primary(self) -> list[ModelConfig]:
        return [m for m in self.models if m.linkage_type == PRIMARY]

    @property
    def fallbacks(self) -> list[ModelConfig]:
        found = [m for m in self.models if m.linkage_type == FALLBACK]
        return sorted(found, key=lambda m: m.fallback_order if m.fallback_order is not None else float("inf"))


def endpoint_not_found(name: str) -> Exception:
    """MLflow's ``get_endpoint_config`` (``_get_entity_or_raise`` on the name): RESOURCE_DOES_NOT_EXIST, 404."""
    return records.missing("GatewayEndpoint", "name", name)


def endpoint_id_of(endpoint_name: str) -> str:
    """The endpoint a name claims (one GetItem); RESOURCE_DOES_NOT_EXIST when none does."""
    claim = table.get(ENDPOINT_NAME.key(workspace=current_workspace(), name=endpoint_name)) if endpoint_name else None
    if claim is None:
        raise endpoint_not_found(endpoint_name)
    return str(claim["endpoint_id"])


def resolve(endpoint_name: str) -> EndpointConfig:
    items = table.query(records.partition(), ENDPOINT.sk.render({"endpoint_id": endpoint_id_of(endpoint_name)}))
    endpoint = next((item for item in items if item.get("entity_type") == ENDPOINT.name), None)
    if endpoint is None:
        raise endpoint_not_found(endpoint_name)
    mappings = sorted(
        (item for item in items if item.get("entity_type") == MAPPING.name), key=lambda m: (int(m.get("position", 0)), m["mapping_id"])
    )
    definitions = {
        item["model_definition_id"]: item
        for item in (
            table.batch_get([records.model_definition_key(i) for i in sorted({m["model_definition_id"] for m in mappings})])
            if mappings
            else []
        )
    }
    secret_ids = sorted({d["secret_id"] for d in definitions.values() if d.get("secret_id")})
    secrets = {item["secret_id"]: item for item in (table.batch_get([records.secret_key(i) for i in secret_ids]) if secret_ids else [])}
    config = EndpointConfig(
        endpoint_id=endpoint["endpoint_id"],
        endpoint_name=endpoint.get("name") or endpoint_name,
        experiment_id=str(endpoint["experiment_id"]) if endpoint.get("experiment_id") is not None else None,
        usage_tracking=bool(endpoint.get("usage_tracking", True)),
        routing_strategy=endpoint.get("routing_strategy") or None,
        fallback=json.loads(endpoint["fallback_config"]) if endpoint.get("fallback_config") else None,
    )
    for mapping in mappings:
        definition = definitions.get(mapping["model_definition_id"])
        if definition is None:
            continue
        secret = secrets.get(definition.get("secret_id") or "")
        config.models.append(
            ModelConfig(
                model_definition_id=definition["model_definition_id"],
                provider=definition["provider"],
                model_name=definition["model_name"],
                secret_value=_secret_value(secret) if secret else {},
                auth_config=json.loads(secret["auth_config"]) if secret and secret.get("auth_config") else {},
                linkage_type=mapping["linkage_type"],
                weight=float(mapping.get("weight") or 1.0),
                fallback_order=int(mapping["fallback_order"]) if mapping.get("fallback_order") is not None else None,
            )
        )
    return config


def _secret_value(secret: dict[str, Any]) -> dict[str, Any]:
    ciphertext = bytes(secret["ciphertext"])
    key = hashlib.sha256(ciphertext).hexdigest()
    now = time.monotonic()
    with _cache_lock:
        cached = _secret_cache.get(key)
        if cached and cached[0] > now:
            return dict(cached[1])
    value = json.loads(crypto.decrypt(ciphertext, secret["secret_id"], secret["secret_name"]))
    with _cache_lock:
        _secret_cache[key] = (now + SECRET_CACHE_SECONDS, value)
    return dict(value)


def list_endpoint_names() -> list[tuple[str, int]]:
    """(name, created_at) of the endpoints with at least one model (MLflow lists through a join on the
    mappings), for ``/gateway/mlflow/v1/models``: one Query of the partition's endpoint items."""
    items = records.query_kind(ENDPOINT.sk_prefix())
    mapped = {item["endpoint_id"] for item in items if item.get("entity_type") == MAPPING.name}
    endpoints = [item for item in items if item.get("entity_type") == ENDPOINT.name and item["endpoint_id"] in mapped and item.get("name")]
    return sorted(((e["name"], int(e["created_at"])) for e in endpoints), key=lambda pair: pair[0])
