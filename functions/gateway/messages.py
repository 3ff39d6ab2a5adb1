"""Request messages of the AI gateway routes: proto field types (service.proto's gateway messages) and the
handler's ``_get_request_message(..., schema=...)`` checks, one entry per operation."""

from __future__ import annotations

from typing import Any

from serverless_mlflow.core.errors import invalid
from serverless_mlflow.request import Message, intlike, required, string

from .mcp.fields import MESSAGES as MCP_MESSAGES
from .skills.fields import MESSAGES as SKILL_MESSAGES


def _secret_value_present(value: Any) -> None:
    """MLflow's ``_assert_secret_value``: its own text, which never echoes the value."""
    if value is None:
        raise invalid("Missing value for required parameter 'secret_value'.")


_STRING = [string]
_REQUIRED = [required, string]

_DEFINITION = {"model_definition_id": "string"}
DEFINITION_UPDATES = ("name", "secret_id", "model_name", "updated_by", "provider")
_ENDPOINT_FIELDS = {
    "name": "string",
    "model_configs": "[message]",
    "created_by": "string",
    "updated_by": "string",
    "routing_strategy": "enum",
    "fallback_config": "message",
    "experiment_id": "string",
    "usage_tracking": "bool",
    "endpoint_id": "string",
}
_BINDING = {"endpoint_id": "string", "resource_type": "string", "resource_id": "string"}

MESSAGES: dict[str, Message] = {
    # --- secrets
    "create_gateway_secret": Message(
        {"secret_name": "string", "secret_value": "map", "provider": "string", "auth_config": "map", "created_by": "string"},
        {"secret_name": _REQUIRED, "secret_value": [_secret_value_present], "provider": _STRING, "created_by": _STRING},
    ),
    "get_gateway_secret": Message({"secret_id": "string", "secret_name": "string"}, {"secret_id": _REQUIRED}),
    "update_gateway_secret": Message(
        {"secret_id": "string", "secret_value": "map", "auth_config": "map", "updated_by": "string"},
        {"secret_id": _REQUIRED, "updated_by": _STRING},
    ),
    "delete_gateway_secret": Message({"secret_id": "string"}, {"secret_id": _REQUIRED}),
    "list_gateway_secrets": Message({"provider": "string"}, {"provider": _STRING}),
    # --- model definitions
    "create_gateway_model_definition": Message(
        {"name": "string", "secret_id": "string", "provider": "string", "model_name": "string", "created_by": "string"},
        {"name": _REQUIRED, "secret_id": _REQUIRED, "provider": _REQUIRED, "model_name": _REQUIRED, "created_by": _STRING},
    ),
    "get_gateway_model_definition": Message(_DEFINITION, {"model_definition_id": _REQUIRED}),
    "list_gateway_model_definitions": Message({"provider": "string", "secret_id": "string"}, {"provider": _STRING, "secret_id": _STRING}),
    "update_gateway_model_definition": Message(
        {"model_definition_id": "string", **dict.fromkeys(DEFINITION_UPDATES, "string")},
        {"model_definition_id": _REQUIRED, **{name: _STRING for name in DEFINITION_UPDATES}},
    ),
    "delete_gateway_model_definition": Message(_DEFINITION, {"model_definition_id": _REQUIRED}),
    # --- endpoints
    "create_gateway_endpoint": Message(
        _ENDPOINT_FIELDS, {"name": _REQUIRED, "created_by": _STRING, "model_configs": [required], "routing_strategy": _STRING}
    ),
    "get_gateway_endpoint": Message({"endpoint_id": "string", "name": "string"}, {"endpoint_id": _STRING, "name": _STRING}),
    "update_gateway_endpoint": Message(
        _ENDPOINT_FIELDS, {"endpoint_id": _REQUIRED, "name": _STRING, "updated_by": _STRING, "routing_strategy": _STRING}
    ),
    "delete_gateway_endpoint": Message({"endpoint_id": "string"}, {"endpoint_id": _REQUIRED}),
    "list_gateway_endpoints": Message({"provider": "string", "secret_id": "string"}, {"provider": _STRING}),
    "attach_model_to_gateway_endpoint": Message(
        {"endpoint_id": "string", "model_config": "message", "created_by": "string"},
        {"endpoint_id": _REQUIRED, "model_config": [required], "created_by": _STRING},
    ),
    "detach_model_from_gateway_endpoint": Message(
        {"endpoint_id": "string", "model_definition_id": "string"}, {"endpoint_id": _REQUIRED, "model_definition_id": _REQUIRED}
    ),
    "create_gateway_endpoint_binding": Message(
        {**_BINDING, "created_by": "string"},
        {"endpoint_id": _REQUIRED, "resource_type": _REQUIRED, "resource_id": _REQUIRED, "created_by": _STRING},
    ),
    "delete_gateway_endpoint_binding": Message(_BINDING, {"endpoint_id": _REQUIRED, "resource_type": _REQUIRED, "resource_id": _REQUIRED}),
    "list_gateway_endpoint_bindings": Message(_BINDING, {name: _STRING for name in _BINDING}),
    "set_gateway_endpoint_tag": Message(
        {"endpoint_id": "string", "key": "string", "value": "string"}, {"endpoint_id": _REQUIRED, "key": _REQUIRED, "value": _STRING}
    ),
    "delete_gateway_endpoint_tag": Message({"endpoint_id": "string", "key": "string"}, {"endpoint_id": _REQUIRED, "key": _REQUIRED}),
    # --- budget policies
    "create_gateway_budget_policy": Message(
        {
            "budget_unit": "enum",
            "budget_amount": "double",
            "duration": "message",
            "target_scope": "enum",
            "target_value": "string",
            "budget_action": "enum",
            "created_by": "string",
        },
        {
            "budget_unit": [required],
            "budget_amount": [required],
            "duration": [required],
            "target_scope": [required],
            "budget_action": [required],
        },
    ),
    "get_gateway_budget_policy": Message({"budget_policy_id": "string"}, {"budget_policy_id": _REQUIRED}),
    "update_gateway_budget_policy": Message(
        {
            "budget_policy_id": "string",
            "budget_unit": "enum",
            "budget_amount": "double",
            "duration": "message",
            "target_scope": "enum",
            "budget_action": "enum",
            "updated_by": "string",
            "target_value": "string",
        },
        {"budget_policy_id": _REQUIRED, "updated_by": _STRING, "target_value": _STRING},
    ),
    "delete_gateway_budget_policy": Message({"budget_policy_id": "string"}, {"budget_policy_id": _REQUIRED}),
    "list_gateway_budget_policies": Message({}, {}),
    "list_gateway_budget_windows": Message({}, {}),
    # --- guardrails
    "create_gateway_guardrail": Message(
        {
            "name": "string",
            "scorer_id": "string",
            "scorer_version": "int32",
            "stage": "enum",
            "action": "enum",
            "action_endpoint_id": "string",
            "created_by": "string",
        },
        {
            "name": _REQUIRED,
            "scorer_id": _REQUIRED,
            "scorer_version": [required, intlike],
            "stage": [required],
            "action": [required],
            "action_endpoint_id": _STRING,
        },
    ),
    "get_gateway_guardrail": Message({"guardrail_id": "string"}, {"guardrail_id": _REQUIRED}),
    "delete_gateway_guardrail": Message({"guardrail_id": "string"}, {"guardrail_id": _REQUIRED}),
    "list_gateway_guardrails": Message({"max_results": "int32", "page_token": "string"}, {"max_results": [intlike], "page_token": _STRING}),
    "add_guardrail_to_endpoint": Message(
        {"endpoint_id": "string", "guardrail_id": "string", "execution_order": "int32"},
        {"endpoint_id": _REQUIRED, "guardrail_id": _REQUIRED, "execution_order": [intlike]},
    ),
    "remove_guardrail_from_endpoint": Message(
        {"endpoint_id": "string", "guardrail_id": "string"}, {"endpoint_id": _REQUIRED, "guardrail_id": _REQUIRED}
    ),
    "list_endpoint_guardrail_configs": Message({"endpoint_id": "string"}, {"endpoint_id": _REQUIRED}),
    "update_endpoint_guardrail_config": Message(
        {"endpoint_id": "string", "guardrail_id": "string", "execution_order": "int32"},
        {"endpoint_id": _REQUIRED, "guardrail_id": _REQUIRED},
    ),
    # --- the UI's catalog routes: ``provider`` read from the raw query, as MLflow does
    "list_gateway_supported_providers": Message({}),
    "list_gateway_supported_models": Message({"provider": "string"}),
    "get_gateway_provider_config": Message({"provider": "string"}),
    "get_gateway_secrets_config": Message({}),
    # --- the MCP server registry (FastAPI routes in MLflow; parsed by mcp/wire.py)
    **MCP_MESSAGES,
    # --- the skill registry (FastAPI routes in MLflow 3.18; parsed by skills/wire.py)
    **SKILL_MESSAGES,
}
