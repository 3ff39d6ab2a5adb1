"""AI gateway configuration routes (``/api/3.0/mlflow/gateway/...``): parse as MLflow's handlers do, call one
domain function, answer MLflow's JSON. Secrets are answered masked; their values are stored KMS-encrypted."""

from __future__ import annotations

import os
from typing import Any

from serverless_mlflow import request as checks
from serverless_mlflow.api import Request, build_app, lambda_entry
from serverless_mlflow.errors import MlflowError, invalid

from . import model_definitions, secrets, validation

GATEWAY_DISABLED = "The AI Gateway feature is disabled. Set MLFLOW_ENABLE_AI_GATEWAY=true to enable it."


def _message(req: Request, fields: dict[str, str], schema: dict[str, list[checks.Check]]) -> dict[str, Any]:
    # MLflow's @_disable_if_gateway_disabled runs before the request is parsed.
    if os.environ.get("MLFLOW_ENABLE_AI_GATEWAY", "true").strip().lower() not in ("true", "1"):
        raise MlflowError(GATEWAY_DISABLED, "NOT_IMPLEMENTED")
    # proto map<string, string> fields ("map") parse as JSON objects, then their values must be strings.
    message = req.message({name: "message" if kind == "map" else kind for name, kind in fields.items()}, schema)
    for name, kind in fields.items():
        if kind == "map" and name in message:
            message[name] = _string_map(name, message[name])
    return message


def _string_map(name: str, value: Any) -> dict[str, str]:
    """A proto ``map<string, string>`` field: every value must be a string (protobuf's JSON parser)."""
    for key, item in value.items():
        if not isinstance(item, str):
            raise checks.type_error(f"{name}.{key}", item)
    return dict(value)


def _secret_value_present(value: Any) -> None:
    """MLflow's ``_assert_secret_value``: its own text, which never echoes the value."""
    if value is None:
        raise invalid("Missing value for required parameter 'secret_value'.")


def _or_none(message: dict[str, Any], name: str) -> Any:
    """MLflow passes ``request.field or None``: an empty string is absent."""
    return message.get(name) or None


_STRING = [checks.string]
_REQUIRED = [checks.required, checks.string]


# --- secrets -----------------------------------------------------------------------------------------


def create_secret(req: Request) -> dict[str, Any]:
    msg = _message(
        req,
        {"secret_name": "string", "secret_value": "map", "provider": "string", "auth_config": "map", "created_by": "string"},
        {"secret_name": _REQUIRED, "secret_value": [_secret_value_present], "provider": _STRING, "created_by": _STRING},
    )
    auth_config = validation.validate_auth_config(msg.get("auth_config") or {}) or None
    secret_value = msg.get("secret_value") or {}
    validation.validate_secret_value(secret_value)
    secret = secrets.create_secret(msg["secret_name"], secret_value, _or_none(msg, "provider"), auth_config, _or_none(msg, "created_by"))
    return {"secret": secret}


def get_secret(req: Request) -> dict[str, Any]:
    msg = _message(req, {"secret_id": "string", "secret_name": "string"}, {"secret_id": _REQUIRED})
    return {"secret": secrets.get_secret(msg["secret_id"])}


def update_secret(req: Request) -> dict[str, Any]:
    msg = _message(
        req,
        {"secret_id": "string", "secret_value": "map", "auth_config": "map", "updated_by": "string"},
        {"secret_id": _REQUIRED, "updated_by": _STRING},
    )
    raw_auth_config = msg.get("auth_config") or {}
    # A map that normalizes to empty (only a blank api_base) clears auth_config; no map leaves it.
    auth_config = (validation.validate_auth_config(raw_auth_config) or {}) if raw_auth_config else None
    secret_value = msg.get("secret_value") or None
    validation.validate_secret_value(secret_value)
    secret = secrets.update_secret(msg["secret_id"], secret_value, auth_config, _or_none(msg, "updated_by"))
    return {"secret": secret}


def delete_secret(req: Request) -> dict[str, Any]:
    msg = _message(req, {"secret_id": "string"}, {"secret_id": _REQUIRED})
    secrets.delete_secret(msg["secret_id"])
    return {}


def list_secrets(req: Request) -> dict[str, Any]:
    msg = _message(req, {"provider": "string"}, {"provider": _STRING})
    found = secrets.list_secrets(_or_none(msg, "provider"))
    return {"secrets": found} if found else {}


# --- model definitions --------------------------------------------------------------------------------

_DEFINITION = {"model_definition_id": "string"}


def create_model_definition(req: Request) -> dict[str, Any]:
    msg = _message(
        req,
        {"name": "string", "secret_id": "string", "provider": "string", "model_name": "string", "created_by": "string"},
        {"name": _REQUIRED, "secret_id": _REQUIRED, "provider": _REQUIRED, "model_name": _REQUIRED, "created_by": _STRING},
    )
    created = model_definitions.create_model_definition(
        msg["name"], msg["secret_id"], msg["provider"], msg["model_name"], _or_none(msg, "created_by")
    )
    return {"model_definition": created}


def get_model_definition(req: Request) -> dict[str, Any]:
    msg = _message(req, _DEFINITION, {"model_definition_id": _REQUIRED})
    return {"model_definition": model_definitions.get_model_definition(msg["model_definition_id"])}


def list_model_definitions(req: Request) -> dict[str, Any]:
    msg = _message(req, {"provider": "string", "secret_id": "string"}, {"provider": _STRING, "secret_id": _STRING})
    found = model_definitions.list_model_definitions(_or_none(msg, "provider"), _or_none(msg, "secret_id"))
    return {"model_definitions": found} if found else {}


def update_model_definition(req: Request) -> dict[str, Any]:
    fields = ("name", "secret_id", "model_name", "updated_by", "provider")
    msg = _message(
        req,
        {"model_definition_id": "string", **dict.fromkeys(fields, "string")},
        {"model_definition_id": _REQUIRED, **{name: _STRING for name in fields}},
    )
    updated = model_definitions.update_model_definition(msg["model_definition_id"], *(_or_none(msg, name) for name in fields))
    return {"model_definition": updated}


def delete_model_definition(req: Request) -> dict[str, Any]:
    msg = _message(req, _DEFINITION, {"model_definition_id": _REQUIRED})
    model_definitions.delete_model_definition(msg["model_definition_id"])
    return {}


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
    },
)
lambda_handler = lambda_entry(app)
