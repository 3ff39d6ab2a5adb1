"""Gateway secrets (SqlAlchemyGatewayStoreMixin's secret methods): encrypted values, masked answers."""

from __future__ import annotations

import json
import uuid
from typing import Any

from serverless_mlflow.core import clock
from serverless_mlflow.core.errors import already_exists
from serverless_mlflow.llm_gateway import crypto, records
from serverless_mlflow.llm_gateway.records import SECRET, SECRET_NAME, current_workspace
from serverless_mlflow.storage import table

MASK = "***"


def mask(value: Any) -> str:
    """MLflow's ``_mask_string_value``: first 3 and last 4 characters; short or non-string values fully masked."""
    if not isinstance(value, str) or len(value) < 8:
        return MASK
    return f"{value[:3]}...{value[-4:]}"


def secrets_config() -> dict[str, Any]:
    """MLflow's ``_get_secrets_config``. ``using_default_passphrase`` warns (in MLflow's UI) that values are
    encrypted under MLflow's built-in default passphrase; here they are always under the stack's KMS key."""
    return {"secrets_available": True, "using_default_passphrase": False}


def _sealed(secret_id: str, secret_name: str, secret_value: dict[str, str]) -> dict[str, Any]:
    return {
        "ciphertext": crypto.encrypt(json.dumps(secret_value), secret_id, secret_name),
        "masked_value": json.dumps({key: mask(value) for key, value in secret_value.items()}),
    }


def create_secret(
    secret_name: str, secret_value: dict[str, str], provider: str | None, auth_config: dict[str, Any] | None, created_by: str | None
) -> dict[str, Any]:
    secret_id = f"s-{uuid.uuid4().hex}"
    now = clock.now_millis()
    attributes = {
        "secret_id": secret_id,
        "secret_name": secret_name,
        **_sealed(secret_id, secret_name, secret_value),
        "provider": provider,
        "auth_config": json.dumps(auth_config) if auth_config else None,
        "created_at": now,
        "last_updated_at": now,
        "created_by": created_by,
        "last_updated_by": created_by,
    }
    item = SECRET.item(attributes, workspace=current_workspace(), secret_id=secret_id)
    claim = SECRET_NAME.item({"secret_id": secret_id}, workspace=current_workspace(), secret_name=secret_name)
    try:
        table.transact(
            [table.put_op(claim, condition="attribute_not_exists(pk)"), table.put_op(item, condition="attribute_not_exists(pk)")]
        )
    except table.ConditionFailed:
        raise already_exists(f"Secret with name '{secret_name}' already exists") from None
    return records.secret_json(item)


def get_secret(secret_id: str) -> dict[str, Any]:
    return records.secret_json(records.get_secret(secret_id))


def update_secret(
    secret_id: str, secret_value: dict[str, str] | None, auth_config: dict[str, Any] | None, updated_by: str | None
) -> dict[str, Any]:
    """``auth_config``: None leaves it, ``{}`` clears it. The id and name are immutable (encryption context)."""
    item = records.get_secret(secret_id)
    if secret_value is not None:
        item.update(_sealed(secret_id, item["secret_name"], secret_value))
    if auth_config is not None:
        item["auth_config"] = json.dumps(auth_config) if auth_config else None
    item["last_updated_by"] = updated_by
    item["last_updated_at"] = clock.now_millis()
    try:
        table.put(item, condition="attribute_exists(pk)")
    except table.ConditionFailed:
        raise records.missing("GatewaySecret", "secret_id", secret_id) from None
    return records.secret_json(item)


def delete_secret(secret_id: str) -> None:
    """The secret and its name claim together; definitions that used it read as orphaned from then on
    (``records.model_definition_json``), as MLflow's ``ON DELETE SET NULL`` leaves them."""
    item = records.get_secret(secret_id)
    claim_key = SECRET_NAME.key(workspace=current_workspace(), secret_name=item["secret_name"])
    try:
        table.transact([table.delete_op(records.secret_key(secret_id), condition="attribute_exists(pk)"), table.delete_op(claim_key)])
    except table.ConditionFailed:
        raise records.missing("GatewaySecret", "secret_id", secret_id) from None


def list_secrets(provider: str | None) -> list[dict[str, Any]]:
    items = records.query_kind(SECRET.sk_prefix())
    return [records.secret_json(item) for item in items if provider is None or item.get("provider") == provider]
