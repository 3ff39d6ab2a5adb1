"""Registry webhooks: one small partition per workspace (``WEBHOOKS#<workspace>``).

Shared by the webhooks API (create, list, get, update, delete, test), the stream dispatcher (which webhooks
an event goes to) and the delivery worker (the URL and secret at delivery time). The HMAC secret is stored
KMS-encrypted with the webhook's id as encryption context and is never answered, as in MLflow.
"""

from __future__ import annotations

import base64
import json
import uuid
from dataclasses import replace
from typing import Any

from serverless_mlflow.core import clock
from serverless_mlflow.core.errors import invalid, not_found
from serverless_mlflow.request import workspace as request_workspace
from serverless_mlflow.request.pages import token_json
from serverless_mlflow.storage import kms_secrets, schema, table

WEBHOOK = schema.entity("webhook")
ACTIVE = "ACTIVE"
DISABLED = "DISABLED"
DEFAULT_WORKSPACE = "default"
MAX_LIST_RESULTS = 1000
DEFAULT_LIST_RESULTS = 100
_TOKEN_VERSION = 1


def not_found_error(webhook_id: str) -> Exception:
    return not_found(f"Webhook with ID {webhook_id} not found.")


def _secret_context(webhook_id: str) -> dict[str, str]:
    return {"mlflow_webhook_id": webhook_id}


def encrypt_secret(webhook_id: str, secret: str) -> bytes:
    data = secret.encode("utf-8")
    if len(data) > kms_secrets.MAX_PLAINTEXT_BYTES:
        raise invalid(f"Webhook secret is too long: {len(data)} bytes, at most {kms_secrets.MAX_PLAINTEXT_BYTES} are accepted.")
    return kms_secrets.encrypt(data, _secret_context(webhook_id))


def secret_of(item: dict[str, Any]) -> str | None:
    """The webhook's HMAC secret in clear (delivery and ``test`` only)."""
    ciphertext = item.get("secret_ciphertext")
    if not ciphertext:
        return None
    return kms_secrets.decrypt(bytes(ciphertext), _secret_context(item["webhook_id"])).decode("utf-8")


def webhook_json(item: dict[str, Any]) -> dict[str, Any]:
    """MLflow's ``Webhook.to_proto`` as JSON (the secret never leaves)."""
    out: dict[str, Any] = {"webhook_id": item["webhook_id"], "name": item["name"]}
    if item.get("description"):
        out["description"] = item["description"]
    out["url"] = item["url"]
    out["events"] = [event_json(event) for event in item.get("events") or []]
    out["status"] = item.get("status") or ACTIVE
    out["creation_timestamp"] = int(item["creation_timestamp"])
    out["last_updated_timestamp"] = int(item["last_updated_timestamp"])
    return out


def _in(workspace: str | None) -> str:
    """The given workspace (the dispatcher's and the deliverer's: the event's), else the request's: MLflow's
    workspace-aware store keeps each webhook in the workspace it was created in, and lists, gets, updates and
    deletes only the request's."""
    return workspace or request_workspace.current()


def event_json(event: str) -> dict[str, str]:
    entity, action = event.split(".", 1)
    return {"entity": entity.upper(), "action": action.upper()}


def create(
    name: str,
    url: str,
    events: list[str],
    description: str | None,
    secret: str | None,
    status: str | None,
    workspace: str | None = None,
) -> dict[str, Any]:
    webhook_id = str(uuid.uuid4())
    now = clock.now_millis()
    attributes: dict[str, Any] = {
        "webhook_id": webhook_id,
        "name": name,
        "url": url,
        "events": events,
        "status": status or ACTIVE,
        "creation_timestamp": now,
        "last_updated_timestamp": now,
        "workspace": _in(workspace),
    }
    if description:
        attributes["description"] = description
    if secret:
        attributes["secret_ciphertext"] = encrypt_secret(webhook_id, secret)
    item = WEBHOOK.item(attributes, workspace=_in(workspace), webhook_id=webhook_id, creation_timestamp=now)
    table.put(item, condition="attribute_not_exists(pk)")
    return item


def get(webhook_id: str, workspace: str | None = None) -> dict[str, Any]:
    item = table.get(WEBHOOK.key(workspace=_in(workspace), webhook_id=webhook_id))
    if item is None:
        raise not_found_error(webhook_id)
    return item


def update(webhook_id: str, changes: dict[str, Any], secret: str | None, workspace: str | None = None) -> dict[str, Any]:
    """Set the given attributes (a ``description`` of None is cleared); ``secret`` replaces the stored one
    ("" clears it, as MLflow stores an empty secret)."""
    sets = {name: value for name, value in changes.items() if value is not None}
    removes = [name for name, value in changes.items() if value is None]
    if secret is not None:
        if secret:
            sets["secret_ciphertext"] = encrypt_secret(webhook_id, secret)
        else:
            removes.append("secret_ciphertext")
    sets["last_updated_timestamp"] = clock.now_millis()
    names = {f"#a{i}": name for i, name in enumerate([*sets, *removes])}
    by_name = {name: alias for alias, name in names.items()}
    expression = "SET " + ", ".join(f"{by_name[name]} = :v{i}" for i, name in enumerate(sets))
    if removes:
        expression += " REMOVE " + ", ".join(by_name[name] for name in removes)
    values = {f":v{i}": value for i, value in enumerate(sets.values())}
    try:
        updated = table.update(
            WEBHOOK.key(workspace=_in(workspace), webhook_id=webhook_id),
            expression,
            names=names,
            values=values,
            condition="attribute_exists(pk)",
            return_values="ALL_NEW",
        )
    except table.ConditionFailed:
        raise not_found_error(webhook_id) from None
    assert updated is not None
    return updated


def delete(webhook_id: str, workspace: str | None = None) -> None:
    try:
        table.delete(WEBHOOK.key(workspace=_in(workspace), webhook_id=webhook_id), condition="attribute_exists(pk)")
    except table.ConditionFailed:
        raise not_found_error(webhook_id) from None


def list_page(max_results: int | None, page_token: str | None, workspace: str | None = None) -> tuple[list[dict[str, Any]], str | None]:
    """Newest first, as MLflow lists them (creation time descending); keyset page tokens."""
    max_results = max_results or DEFAULT_LIST_RESULTS
    if max_results < 1 or max_results > MAX_LIST_RESULTS:
        raise invalid(f"max_results must be between 1 and {MAX_LIST_RESULTS}.")
    query = WEBHOOK.query("by_creation", workspace=_in(workspace))
    after = _decode_token(page_token) if page_token else None
    if after is not None:
        # Every key sorting before the last one answered (the collection holds only webhooks).
        query = replace(query, sk_prefix=None, sk_before=after)
    items = table.query(**query, forward=False, limit=max_results + 1)
    if len(items) <= max_results:
        return items, None
    page = items[:max_results]
    last = page[-1]
    by_creation = WEBHOOK.patterns["by_creation"]
    return page, _encode_token(WEBHOOK.index_sk(by_creation.index or "", **_index_values(last)))


def subscribed(event: str, workspace: str | None = None) -> list[dict[str, Any]]:
    """Active webhooks of a workspace subscribed to ``event`` (``entity.action``), oldest first."""
    items = table.query(**WEBHOOK.query("in_workspace", workspace=_in(workspace)))
    hooks = [item for item in items if item.get("status", ACTIVE) == ACTIVE and event in (item.get("events") or [])]
    return sorted(hooks, key=lambda item: (int(item["creation_timestamp"]), item["webhook_id"]))


def _index_values(item: dict[str, Any]) -> dict[str, Any]:
    return {"workspace": item["workspace"], "webhook_id": item["webhook_id"], "creation_timestamp": int(item["creation_timestamp"])}


def _encode_token(sort_key: str) -> str:
    payload = json.dumps({"v": _TOKEN_VERSION, "k": sort_key}, separators=(",", ":"))
    return base64.b64encode(payload.encode("utf-8")).decode("ascii")


def _decode_token(page_token: str) -> str:
    parsed = token_json(page_token)
    key = parsed.get("k") if isinstance(parsed, dict) else None
    if not isinstance(parsed, dict) or parsed.get("v") != _TOKEN_VERSION or not isinstance(key, str) or not key:
        raise invalid(f"Invalid page token, parsed value={parsed}")
    return key
