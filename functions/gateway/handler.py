"""AI gateway configuration routes (``/api/3.0/mlflow/gateway/...``): parse as MLflow's handlers do, call one
domain function, answer MLflow's JSON. Secrets are answered masked; their values are stored KMS-encrypted.
The UI's provider/model catalog routes (``/ajax-api/3.0/mlflow/gateway/...`` only) answer from the catalog file
shipped with this function and MLflow's provider auth table (``catalog``, ``provider_auth``)."""

from __future__ import annotations

import math
import re
from typing import Any

from serverless_mlflow.core.errors import MlflowError, invalid
from serverless_mlflow.http.api import Request, build_app, lambda_entry
from serverless_mlflow.http.server_info import GATEWAY_DISABLED, gateway_enabled
from serverless_mlflow.request import read_float, read_int32, to_string, type_error
from serverless_mlflow.request.pages import page_response

from . import (
    budgets,
    catalog,
    endpoint_bindings,
    endpoint_writes,
    endpoints,
    guardrails,
    model_definitions,
    provider_auth,
    secrets,
    validation,
)
from .mcp.operations import OPERATIONS as MCP_OPERATIONS
from .messages import DEFINITION_UPDATES, MESSAGES
from .skills import OPERATIONS as SKILL_OPERATIONS


def _require_enabled() -> None:
    """MLflow's ``@_disable_if_gateway_disabled``: runs before the request is parsed."""
    if not gateway_enabled():
        raise MlflowError(GATEWAY_DISABLED, "NOT_IMPLEMENTED")


def _message(req: Request, operation: str) -> dict[str, Any]:
    _require_enabled()
    return req.message(MESSAGES[operation])


def _or_none(message: dict[str, Any], name: str) -> Any:
    """MLflow passes ``request.field or None``: an empty string is absent."""
    return message.get(name) or None


# --- secrets -----------------------------------------------------------------------------------------


def create_secret(req: Request) -> dict[str, Any]:
    msg = _message(req, "create_gateway_secret")
    auth_config = validation.validate_auth_config(msg.get("auth_config") or {}) or None
    secret_value = msg.get("secret_value") or {}
    validation.validate_secret_value(secret_value)
    secret = secrets.create_secret(msg["secret_name"], secret_value, _or_none(msg, "provider"), auth_config, _or_none(msg, "created_by"))
    return {"secret": secret}


def get_secret(req: Request) -> dict[str, Any]:
    msg = _message(req, "get_gateway_secret")
    return {"secret": secrets.get_secret(msg["secret_id"])}


def update_secret(req: Request) -> dict[str, Any]:
    msg = _message(req, "update_gateway_secret")
    raw_auth_config = msg.get("auth_config") or {}
    # A map that normalizes to empty (only a blank api_base) clears auth_config; no map leaves it.
    auth_config = (validation.validate_auth_config(raw_auth_config) or {}) if raw_auth_config else None
    secret_value = msg.get("secret_value") or None
    validation.validate_secret_value(secret_value)
    secret = secrets.update_secret(msg["secret_id"], secret_value, auth_config, _or_none(msg, "updated_by"))
    return {"secret": secret}


def delete_secret(req: Request) -> dict[str, Any]:
    msg = _message(req, "delete_gateway_secret")
    secrets.delete_secret(msg["secret_id"])
    return {}


def list_secrets(req: Request) -> dict[str, Any]:
    msg = _message(req, "list_gateway_secrets")
    found = secrets.list_secrets(_or_none(msg, "provider"))
    return {"secrets": found} if found else {}


# --- model definitions --------------------------------------------------------------------------------


def create_model_definition(req: Request) -> dict[str, Any]:
    msg = _message(req, "create_gateway_model_definition")
    created = model_definitions.create_model_definition(
        msg["name"], msg["secret_id"], msg["provider"], msg["model_name"], _or_none(msg, "created_by")
    )
    return {"model_definition": created}


def get_model_definition(req: Request) -> dict[str, Any]:
    msg = _message(req, "get_gateway_model_definition")
    return {"model_definition": model_definitions.get_model_definition(msg["model_definition_id"])}


def list_model_definitions(req: Request) -> dict[str, Any]:
    msg = _message(req, "list_gateway_model_definitions")
    found = model_definitions.list_model_definitions(_or_none(msg, "provider"), _or_none(msg, "secret_id"))
    return {"model_definitions": found} if found else {}


def update_model_definition(req: Request) -> dict[str, Any]:
    msg = _message(req, "update_gateway_model_definition")
    updated = model_definitions.update_model_definition(msg["model_definition_id"], *(_or_none(msg, name) for name in DEFINITION_UPDATES))
    return {"model_definition": updated}


def delete_model_definition(req: Request) -> dict[str, Any]:
    msg = _message(req, "delete_gateway_model_definition")
    model_definitions.delete_model_definition(msg["model_definition_id"])
    return {}


# --- endpoints --------------------------------------------------------------------------------------------

_ENUMS = {
    "routing_strategy": ("ROUTING_STRATEGY_UNSPECIFIED", "REQUEST_BASED_TRAFFIC_SPLIT"),
    "strategy": ("FALLBACK_STRATEGY_UNSPECIFIED", "SEQUENTIAL"),
    "linkage_type": ("LINKAGE_TYPE_UNSPECIFIED", "PRIMARY", "FALLBACK"),
}
_ENDPOINT_NAME_CHARS = re.compile(r"[a-zA-Z0-9_\-\.]+")


def _enum(field: str, value: Any) -> str | None:
    """A proto enum given by name or number -> its name; UNSPECIFIED (0) reads as unset, as the entities map it."""
    names = _ENUMS[field]
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < len(names):
        value = names[value]
    if value not in names:
        raise type_error(field, value)
    return None if value == names[0] else value


def _check_endpoint_name(name: str | None) -> None:
    if name and not _ENDPOINT_NAME_CHARS.fullmatch(name):
        raise invalid(f"Invalid endpoint name '{name}'. Name can only contain letters, numbers, underscores, hyphens, and dots.")


def _model_config(raw: Any, location: str) -> dict[str, Any]:
    """``GatewayEndpointModelConfig.from_proto`` after MLflow's ``_assert_linkage_type_specified``. Fields are read
    as protobuf reads them: a value it refuses (a bare ``NaN`` weight, an order that is not an integer) leaves
    the field at its default, as on MLflow's server."""
    raw = raw if isinstance(raw, dict) else {}
    linkage = _enum("linkage_type", raw["linkage_type"]) if raw.get("linkage_type") is not None else None
    if linkage is None:
        raise invalid(f"Invalid or missing value for required parameter 'linkage_type' in {location}. Must be one of: PRIMARY, FALLBACK.")
    definition_id = raw.get("model_definition_id")
    config: dict[str, Any] = {
        "model_definition_id": to_string(definition_id) if isinstance(definition_id, str) else "",
        "linkage_type": linkage,
    }
    weight = read_float(raw.get("weight"), float32=True)
    if weight is not None and math.isnan(weight):
        # The string "NaN" reaches MLflow's store, which then refuses the insert (a 400); no route can use it.
        raise invalid(f"Invalid value \"NaN\" for parameter '{location}.weight' supplied: a weight must be a number.")
    config["weight"] = 1.0 if weight is None else weight
    if (order := read_int32(raw.get("fallback_order"))) is not None:
        config["fallback_order"] = order
    return config


def _fallback(raw: Any) -> dict[str, Any] | None:
    if raw is None:
        return None
    raw = raw if isinstance(raw, dict) else {}
    strategy = _enum("strategy", raw["strategy"]) if raw.get("strategy") is not None else None
    return {"strategy": strategy, "max_attempts": read_int32(raw.get("max_attempts"))}


def create_endpoint(req: Request) -> dict[str, Any]:
    msg = _message(req, "create_gateway_endpoint")
    _check_endpoint_name(msg.get("name"))
    fallback = _fallback(msg.get("fallback_config"))
    configs = [_model_config(raw, f"model_configs[{i}]") for i, raw in enumerate(msg.get("model_configs") or [])]
    endpoint = endpoint_writes.create_endpoint(
        msg["name"],
        configs,
        _or_none(msg, "created_by"),
        _enum("routing_strategy", msg["routing_strategy"]) if "routing_strategy" in msg else None,
        fallback,
        msg.get("experiment_id"),
        msg.get("usage_tracking", True),
    )
    return {"endpoint": endpoint}


def get_endpoint(req: Request) -> dict[str, Any]:
    msg = _message(req, "get_gateway_endpoint")
    endpoint_id, name = _or_none(msg, "endpoint_id"), _or_none(msg, "name")
    if (endpoint_id is None) == (name is None):
        raise invalid("Exactly one of endpoint_id or name must be provided")
    return {"endpoint": endpoints.get_endpoint(endpoint_id) if endpoint_id else endpoints.get_endpoint_by_name(name)}


def update_endpoint(req: Request) -> dict[str, Any]:
    msg = _message(req, "update_gateway_endpoint")
    _check_endpoint_name(msg.get("name"))
    fallback = _fallback(msg.get("fallback_config"))
    raw_configs = msg.get("model_configs") or []
    configs = [_model_config(raw, f"model_configs[{i}]") for i, raw in enumerate(raw_configs)] if raw_configs else None
    endpoint = endpoint_writes.update_endpoint(
        msg["endpoint_id"],
        _or_none(msg, "name"),
        configs,
        _or_none(msg, "updated_by"),
        _enum("routing_strategy", msg["routing_strategy"]) if "routing_strategy" in msg else None,
        fallback,
        msg.get("experiment_id"),
        msg.get("usage_tracking"),
    )
    return {"endpoint": endpoint}


def delete_endpoint(req: Request) -> dict[str, Any]:
    msg = _message(req, "delete_gateway_endpoint")
    endpoint_writes.delete_endpoint(msg["endpoint_id"])
    return {}


def list_endpoints(req: Request) -> dict[str, Any]:
    msg = _message(req, "list_gateway_endpoints")
    found = endpoints.list_endpoints(_or_none(msg, "provider"), _or_none(msg, "secret_id"))
    return {"endpoints": found} if found else {}


def attach_model(req: Request) -> dict[str, Any]:
    msg = _message(req, "attach_model_to_gateway_endpoint")
    config = _model_config(msg["model_config"], "model_config")
    return {"mapping": endpoint_writes.attach_model(msg["endpoint_id"], config, _or_none(msg, "created_by"))}


def detach_model(req: Request) -> dict[str, Any]:
    msg = _message(req, "detach_model_from_gateway_endpoint")
    endpoint_writes.detach_model(msg["endpoint_id"], msg["model_definition_id"])
    return {}


_RESOURCE_TYPES = ("scorer",)


def create_binding(req: Request) -> dict[str, Any]:
    msg = _message(req, "create_gateway_endpoint_binding")
    if msg["resource_type"] not in _RESOURCE_TYPES:
        # MLflow's GatewayResourceType(value) raises ValueError, which its server answers as a 500; bad input
        # answers 400 here.
        raise MlflowError(f"'{msg['resource_type']}' is not a valid GatewayResourceType", "INVALID_PARAMETER_VALUE")
    binding = endpoint_bindings.create_binding(msg["endpoint_id"], msg["resource_type"], msg["resource_id"], _or_none(msg, "created_by"))
    return {"binding": binding}


def delete_binding(req: Request) -> dict[str, Any]:
    msg = _message(req, "delete_gateway_endpoint_binding")
    endpoint_bindings.delete_binding(msg["endpoint_id"], msg["resource_type"], msg["resource_id"])
    return {}


def list_bindings(req: Request) -> dict[str, Any]:
    msg = _message(req, "list_gateway_endpoint_bindings")
    found = endpoint_bindings.list_bindings(_or_none(msg, "endpoint_id"), _or_none(msg, "resource_type"), _or_none(msg, "resource_id"))
    return {"bindings": found} if found else {}


def set_endpoint_tag(req: Request) -> dict[str, Any]:
    msg = _message(req, "set_gateway_endpoint_tag")
    endpoint_bindings.set_tag(msg["endpoint_id"], msg["key"], msg.get("value", ""))
    return {}


def delete_endpoint_tag(req: Request) -> dict[str, Any]:
    msg = _message(req, "delete_gateway_endpoint_tag")
    endpoint_bindings.delete_tag(msg["endpoint_id"], msg["key"])
    return {}


# --- budget policies -------------------------------------------------------------------------------------


def create_budget_policy(req: Request) -> dict[str, Any]:
    return {"budget_policy": budgets.create_policy(_message(req, "create_gateway_budget_policy"))}


def get_budget_policy(req: Request) -> dict[str, Any]:
    return {"budget_policy": budgets.get_policy(_message(req, "get_gateway_budget_policy")["budget_policy_id"])}


def update_budget_policy(req: Request) -> dict[str, Any]:
    return {"budget_policy": budgets.update_policy(_message(req, "update_gateway_budget_policy"))}


def delete_budget_policy(req: Request) -> dict[str, Any]:
    budgets.delete_policy(_message(req, "delete_gateway_budget_policy")["budget_policy_id"])
    return {}


def list_budget_policies(req: Request) -> dict[str, Any]:
    _message(req, "list_gateway_budget_policies")
    found = budgets.list_policies()
    return {"budget_policies": found} if found else {}


def list_budget_windows(req: Request) -> dict[str, Any]:
    _message(req, "list_gateway_budget_windows")
    found = budgets.list_windows()
    return {"windows": found} if found else {}


# --- guardrails ----------------------------------------------------------------------------------------


def _user(req: Request) -> str | None:
    """MLflow's ``_get_user()``: the signed-in user, none without auth."""
    return req.identity.username if req.identity is not None else None


def create_guardrail(req: Request) -> dict[str, Any]:
    msg = _message(req, "create_gateway_guardrail")
    stage = guardrails.enum("stage", msg["stage"], guardrails.STAGES)
    action = guardrails.enum("action", msg["action"], guardrails.ACTIONS)
    msg["created_by"] = _user(req)
    return {"guardrail": guardrails.create_guardrail(msg, stage, action)}


def get_guardrail(req: Request) -> dict[str, Any]:
    return {"guardrail": guardrails.get_guardrail(_message(req, "get_gateway_guardrail")["guardrail_id"])}


def delete_guardrail(req: Request) -> dict[str, Any]:
    guardrails.delete_guardrail(_message(req, "delete_gateway_guardrail")["guardrail_id"])
    return {}


def list_guardrails(req: Request) -> dict[str, Any]:
    msg = _message(req, "list_gateway_guardrails")
    found, token = guardrails.list_guardrails(msg.get("max_results"), _or_none(msg, "page_token"))
    return page_response("guardrails", found, token)


def add_guardrail_to_endpoint(req: Request) -> dict[str, Any]:
    msg = _message(req, "add_guardrail_to_endpoint")
    config = guardrails.add_to_endpoint(msg["endpoint_id"], msg["guardrail_id"], msg.get("execution_order"), _user(req))
    return {"config": config}


def remove_guardrail_from_endpoint(req: Request) -> dict[str, Any]:
    msg = _message(req, "remove_guardrail_from_endpoint")
    guardrails.remove_from_endpoint(msg["endpoint_id"], msg["guardrail_id"])
    return {}


def list_endpoint_guardrail_configs(req: Request) -> dict[str, Any]:
    found = guardrails.list_for_endpoint(_message(req, "list_endpoint_guardrail_configs")["endpoint_id"])
    return {"configs": found} if found else {}


def update_endpoint_guardrail_config(req: Request) -> dict[str, Any]:
    msg = _message(req, "update_endpoint_guardrail_config")
    return {"config": guardrails.update_config(msg["endpoint_id"], msg["guardrail_id"], msg.get("execution_order"))}


# --- provider and model catalog (UI-only ajax routes; MLflow reads ``request.args`` itself) ---------------


def _arg(req: Request, name: str) -> str | None:
    """Flask's ``request.args.get``: the first value, an empty string kept."""
    values = req.query.get(name)
    return values[0] if values else None


def list_supported_providers(req: Request) -> dict[str, Any]:
    _require_enabled()
    return {"providers": catalog.supported_providers()}


def list_supported_models(req: Request) -> dict[str, Any]:
    _require_enabled()
    return {"models": catalog.supported_models(_arg(req, "provider"))}


def get_provider_config(req: Request) -> dict[str, Any]:
    _require_enabled()
    return provider_auth.provider_config(_arg(req, "provider"))


def get_secrets_config(req: Request) -> dict[str, Any]:
    _require_enabled()
    return secrets.secrets_config()


app = build_app(
    "gateway",
    {
        "create_gateway_secret": create_secret,
        "get_gateway_secret": get_secret,
        "update_gateway_secret": update_secret,
        "delete_gateway_secret": delete_secret,
        "list_gateway_secrets": list_secrets,
        "create_gateway_model_definition": create_model_definition,
        "get_gateway_model_definition": get_model_definition,
        "list_gateway_model_definitions": list_model_definitions,
        "update_gateway_model_definition": update_model_definition,
        "delete_gateway_model_definition": delete_model_definition,
        "create_gateway_endpoint": create_endpoint,
        "get_gateway_endpoint": get_endpoint,
        "update_gateway_endpoint": update_endpoint,
        "delete_gateway_endpoint": delete_endpoint,
        "list_gateway_endpoints": list_endpoints,
        "attach_model_to_gateway_endpoint": attach_model,
        "detach_model_from_gateway_endpoint": detach_model,
        "create_gateway_endpoint_binding": create_binding,
        "delete_gateway_endpoint_binding": delete_binding,
        "list_gateway_endpoint_bindings": list_bindings,
        "set_gateway_endpoint_tag": set_endpoint_tag,
        "delete_gateway_endpoint_tag": delete_endpoint_tag,
        "create_gateway_budget_policy": create_budget_policy,
        "get_gateway_budget_policy": get_budget_policy,
        "update_gateway_budget_policy": update_budget_policy,
        "delete_gateway_budget_policy": delete_budget_policy,
        "list_gateway_budget_policies": list_budget_policies,
        "list_gateway_budget_windows": list_budget_windows,
        "create_gateway_guardrail": create_guardrail,
        "get_gateway_guardrail": get_guardrail,
        "delete_gateway_guardrail": delete_guardrail,
        "list_gateway_guardrails": list_guardrails,
        "add_guardrail_to_endpoint": add_guardrail_to_endpoint,
        "remove_guardrail_from_endpoint": remove_guardrail_from_endpoint,
        "list_endpoint_guardrail_configs": list_endpoint_guardrail_configs,
        "update_endpoint_guardrail_config": update_endpoint_guardrail_config,
        "list_gateway_supported_providers": list_supported_providers,
        "list_gateway_supported_models": list_supported_models,
        "get_gateway_provider_config": get_provider_config,
        "get_gateway_secrets_config": get_secrets_config,
        # The MCP server registry shares this function (small, admin-curated configuration like the gateway's).
        **MCP_OPERATIONS,
        # So does the skill registry (skills are curated metadata; their content lives at its source).
        **SKILL_OPERATIONS,
    },
)
lambda_handler = lambda_entry(app)
