"""Gateway model definitions: a provider's model plus the secret that authenticates it, reusable by endpoints."""

from __future__ import annotations

import uuid
from typing import Any

from serverless_mlflow.core import clock
from serverless_mlflow.core.errors import MlflowError, already_exists, invalid, wrong_state
from serverless_mlflow.llm_gateway import provider_filter, records
from serverless_mlflow.llm_gateway.records import MODEL_DEFINITION, MODEL_DEFINITION_NAME, current_workspace
from serverless_mlflow.storage import table

from . import catalog


def _name_taken(name: str) -> MlflowError:
    return already_exists(f"Model definition with name '{name}' already exists")


def _claim(name: str, model_definition_id: str) -> dict[str, Any]:
    return MODEL_DEFINITION_NAME.item({"model_definition_id": model_definition_id}, workspace=current_workspace(), name=name)


def _secret_exists(secret_id: str) -> dict[str, Any]:
    return table.check_op(records.secret_key(secret_id), "attribute_exists(pk)")


def check_provider(provider: str) -> None:
    """A provider of MLflow's catalog (``gateway/supported-providers`` lists them; every provider the runtime serves is
    one). MLflow stores any string and then answers every call to the endpoint with a 500 (its LiteLLM fallback
    fails); refused here before anything is written."""
    known = catalog.load().providers
    if provider not in known and provider_filter.normalize(provider) not in known:
        raise invalid(f"Unknown provider '{provider}'. Choose one of the providers listed by gateway/supported-providers.")


def create_model_definition(name: str, secret_id: str, provider: str, model_name: str, created_by: str | None) -> dict[str, Any]:
    check_provider(provider)
    secret = records.get_secret(secret_id)
    model_definition_id = f"d-{uuid.uuid4().hex}"
    now = clock.now_millis()
    attributes = {
        "model_definition_id": model_definition_id,
        "name": name,
        "secret_id": secret_id,
        "provider": provider,
        "model_name": model_name,
        "endpoint_count": 0,
        "created_at": now,
        "last_updated_at": now,
        "created_by": created_by,
        "last_updated_by": created_by,
    }
    item = MODEL_DEFINITION.item(attributes, workspace=current_workspace(), model_definition_id=model_definition_id)
    operations = [
        table.put_op(_claim(name, model_definition_id), condition="attribute_not_exists(pk)"),
        table.put_op(item, condition="attribute_not_exists(pk)"),
        _secret_exists(secret_id),  # the secret must not vanish between the read and the write
    ]
    try:
        table.transact(operations)
    except table.ConditionFailed as failure:
        if failure.reasons[2] == "ConditionalCheckFailed":
            raise records.missing("GatewaySecret", "secret_id", secret_id) from None
        raise _name_taken(name) from None
    return records.model_definition_json(item, {secret_id: secret["secret_name"]})


def get_model_definition(model_definition_id: str) -> dict[str, Any]:
    return records.model_definitions_json([records.get_model_definition(model_definition_id)])[0]


def list_model_definitions(provider: str | None, secret_id: str | None) -> list[dict[str, Any]]:
    items = [item for item in records.query_kind(MODEL_DEFINITION.sk_prefix()) if provider is None or item.get("provider") == provider]
    # Filter on the rendered secret_id: a definition whose secret was deleted no longer names it (SET NULL).
    return [body for body in records.model_definitions_json(items) if secret_id is None or body.get("secret_id") == secret_id]


def update_model_definition(
    model_definition_id: str,
    name: str | None,
    secret_id: str | None,
    model_name: str | None,
    updated_by: str | None,
    provider: str | None,
) -> dict[str, Any]:
    """Only the fields given change; a new name moves the name claim in the same transaction."""
    if provider is not None:
        check_provider(provider)
    item = records.get_model_definition(model_definition_id)
    if secret_id is not None:
        records.get_secret(secret_id)
        item["secret_id"] = secret_id
    old_name = item["name"]
    for field, value in (("name", name), ("model_name", model_name), ("provider", provider)):
        if value is not None:
            item[field] = value
    item["last_updated_at"] = clock.now_millis()
    if updated_by:
        item["last_updated_by"] = updated_by
    operations = [table.put_op(item, condition="attribute_exists(pk)")]
    if secret_id is not None:
        operations.append(_secret_exists(secret_id))
    if item["name"] != old_name:
        operations += [
            table.delete_op(MODEL_DEFINITION_NAME.key(workspace=current_workspace(), name=old_name)),
            table.put_op(_claim(item["name"], model_definition_id), condition="attribute_not_exists(pk)"),
        ]
    try:
        table.transact(operations)
    except table.ConditionFailed as failure:
        reasons = failure.reasons
        if reasons[0] == "ConditionalCheckFailed":
            raise records.missing("GatewayModelDefinition", "model_definition_id", model_definition_id) from None
        if secret_id is not None and reasons[1] == "ConditionalCheckFailed":
            raise records.missing("GatewaySecret", "secret_id", secret_id) from None
        raise _name_taken(item["name"]) from None
    return records.model_definitions_json([item])[0]


def delete_model_definition(model_definition_id: str) -> None:
    """Refused (INVALID_STATE) while an endpoint uses the definition, as MLflow's RESTRICT foreign key does."""
    item = records.get_model_definition(model_definition_id)
    try:
        table.transact(
            [
                table.delete_op(
                    records.model_definition_key(model_definition_id),
                    condition="attribute_exists(pk) AND (attribute_not_exists(endpoint_count) OR endpoint_count = :zero)",
                    values={":zero": 0},
                ),
                table.delete_op(MODEL_DEFINITION_NAME.key(workspace=current_workspace(), name=item["name"])),
            ]
        )
    except table.ConditionFailed:
        if table.get(records.model_definition_key(model_definition_id)) is None:
            raise records.missing("GatewayModelDefinition", "model_definition_id", model_definition_id) from None
        raise wrong_state(
            "Cannot delete model definition that is currently in use by endpoints. Detach it from all endpoints first."
        ) from None
