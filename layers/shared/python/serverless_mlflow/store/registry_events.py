"""Registry events (MLflow's webhook events) and the outbox items that carry them to the stream.

A registry change writes one ``registry_event`` item in the same transaction as the change itself (the
transactional outbox pattern), so an event exists exactly when its change committed, with MLflow's payload
as the request saw it. Deletes and renames that cascade through a model's items write none, as MLflow
sends none. The webhook dispatcher (``functions/webhooks/dispatch.py``) reads these items from the table's
stream; nothing is delivered from a request path.

Where MLflow picks the prompt or the model flavour of an event by reading the registered model
(``handlers._is_prompt(name)``), the item records the model flavour with ``prompt_aware`` set, and the
dispatcher resolves it from the model's ``mlflow.prompt.is_prompt`` tag when it dispatches.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

from ulid import ULID

from serverless_mlflow.core import clock
from serverless_mlflow.request import workspace as request_workspace
from serverless_mlflow.storage import schema, table

EVENT = schema.entity("registry_event")
# Long enough for SQS's whole retry schedule (the delivery queue keeps a message 4 days).
EVENT_TTL_SECONDS = 5 * 24 * 3600
# The payload stays in the item up to this size; past it (hundreds of large tags) the tags are left out
# and read from the model when the event is dispatched.
MAX_PAYLOAD_BYTES = 300_000

IS_PROMPT_TAG_KEY = "mlflow.prompt.is_prompt"
PROMPT_TEXT_TAG_KEY = "mlflow.prompt.text"
PROMPT_TYPE_TAG_KEY = "_mlflow_prompt_type"

# MLflow's WebhookEntity -> valid WebhookAction values (mlflow/entities/webhook.py VALID_ENTITY_ACTIONS).
VALID_ENTITY_ACTIONS: dict[str, tuple[str, ...]] = {
    "registered_model": ("created",),
    "model_version": ("created",),
    "model_version_tag": ("set", "deleted"),
    "model_version_alias": ("created", "deleted"),
    "prompt": ("created",),
    "prompt_version": ("created",),
    "prompt_tag": ("set", "deleted"),
    "prompt_version_tag": ("set", "deleted"),
    "prompt_alias": ("created", "deleted"),
    "budget_policy": ("exceeded",),
}

# The model-side entity a write records -> the entity MLflow sends when the model is a prompt. A model tag
# has no model-side event in MLflow (only prompts send prompt_tag events): its model flavour is dropped.
PROMPT_FLAVOUR = {
    "model_version": "prompt_version",
    "model_version_tag": "prompt_version_tag",
    "model_version_alias": "prompt_alias",
    "registered_model_tag": "prompt_tag",
}
MODEL_ONLY_ENTITIES = frozenset({"registered_model_tag"})


def is_prompt_value(value: str | None) -> bool:
    """MLflow's ``RegisteredModel._is_prompt`` / ``_is_prompt_request``: case-insensitive ``true``."""
    return (value or "false").lower() == "true"


def event_op(
    entity: str,
    action: str,
    payload: dict[str, Any],
    model_name: str,
    *,
    prompt_aware: bool = False,
    workspace: str | None = None,
    split: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The outbox put for one event, to add to the change's own transaction."""
    return table.put_op(event_item(entity, action, payload, model_name, prompt_aware=prompt_aware, workspace=workspace, split=split))


def event_item(
    entity: str,
    action: str,
    payload: dict[str, Any],
    model_name: str,
    *,
    prompt_aware: bool = False,
    workspace: str | None = None,
    split: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """One event's outbox item, in ``workspace`` (the request's when not given: MLflow delivers an event to the
    webhooks of the workspace its change was made in)."""
    now = clock.now_millis()
    event_id = str(ULID())
    attributes: dict[str, Any] = {
        "event_id": event_id,
        "workspace": workspace or request_workspace.current(),
        "entity": entity,
        "action": action,
        "payload": payload,
        "model_name": model_name,
        "created_at": now,
        schema.TTL_ATTRIBUTE: now // 1000 + EVENT_TTL_SECONDS,
    }
    floats = sorted(key for key, value in payload.items() if isinstance(value, float))
    if floats:
        # The table stores no floats (a budget's amounts): as text, made numbers again when dispatched.
        attributes["payload"] = {key: repr(value) if key in floats else value for key, value in payload.items()}
        attributes["float_fields"] = floats
    if prompt_aware:
        attributes["prompt_aware"] = True
    if split:
        attributes["split"] = split
    if "tags" in payload and len(payload_json(payload).encode("utf-8")) > MAX_PAYLOAD_BYTES:
        attributes["payload"] = {k: v for k, v in payload.items() if k != "tags"}
        attributes["tags_deferred"] = True
    return EVENT.item(attributes, event_id=event_id)


# --- MLflow's payloads (mlflow/webhooks/types.py), as its handlers build them --------------------------


def model_created(name: str, tags: dict[str, str], description: str) -> tuple[str, dict[str, Any]]:
    """(entity, payload) of create_registered_model: the prompt flavour drops the prompt marker tags."""
    if is_prompt_value(tags.get(IS_PROMPT_TAG_KEY)):
        kept = {k: v for k, v in tags.items() if k not in (IS_PROMPT_TAG_KEY, PROMPT_TYPE_TAG_KEY)}
        return "prompt", {"name": name, "tags": kept, "description": description}
    return "registered_model", {"name": name, "tags": dict(tags), "description": description}


def version_created(
    name: str, version: int, source: str, run_id: str | None, tags: dict[str, str], description: str, is_prompt: bool
) -> tuple[str, dict[str, Any]]:
    if is_prompt:
        kept = dict(tags)
        template = kept.pop(PROMPT_TEXT_TAG_KEY, None)
        kept.pop(IS_PROMPT_TAG_KEY, None)
        kept.pop(PROMPT_TYPE_TAG_KEY, None)
        return "prompt_version", {
            "name": name, "version": str(version), "template": template, "tags": kept, "description": description or None,
        }  # fmt: skip
    return "model_version", {
        "name": name, "version": str(version), "source": source, "run_id": run_id or None, "tags": dict(tags),
        "description": description or None,
    }  # fmt: skip


def resolve_entity(entity: str, is_prompt: bool) -> str | None:
    """The entity MLflow sends for a recorded model-side entity; None when MLflow sends nothing."""
    if is_prompt:
        return PROMPT_FLAVOUR.get(entity, entity)
    return None if entity in MODEL_ONLY_ENTITIES else entity


def event_name(entity: str, action: str) -> str:
    return f"{entity}.{action}"


def payload_json(payload: dict[str, Any]) -> str:
    return json.dumps(payload)


# MLflow's example payloads (``get_example_payload_for_event``): what ``webhooks/<id>/test`` sends.
EXAMPLE_PAYLOADS: dict[str, dict[str, Any]] = {
    "registered_model.created": {"name": "example_model", "tags": {"example_key": "example_value"}, "description": "An example registered model"},
    "model_version.created": {
        "name": "example_model", "version": "1", "source": "models:/123", "run_id": "abcd1234abcd5678",
        "tags": {"example_key": "example_value"}, "description": "An example model version",
    },
    "model_version_tag.set": {"name": "example_model", "version": "1", "key": "example_key", "value": "example_value"},
    "model_version_tag.deleted": {"name": "example_model", "version": "1", "key": "example_key"},
    "model_version_alias.created": {"name": "example_model", "alias": "example_alias", "version": "1"},
    "model_version_alias.deleted": {"name": "example_model", "alias": "example_alias"},
    "prompt.created": {"name": "example_prompt", "tags": {"example_key": "example_value"}, "description": "An example prompt"},
    "prompt_version.created": {
        "name": "example_prompt", "version": "1", "template": "Hello {{name}}!", "tags": {"example_key": "example_value"},
        "description": "An example prompt version",
    },
    "prompt_tag.set": {"name": "example_prompt", "key": "example_key", "value": "example_value"},
    "prompt_tag.deleted": {"name": "example_prompt", "key": "example_key"},
    "prompt_version_tag.set": {"name": "example_prompt", "version": "1", "key": "example_key", "value": "example_value"},
    "prompt_version_tag.deleted": {"name": "example_prompt", "version": "1", "key": "example_key"},
    "prompt_alias.created": {"name": "example_prompt", "alias": "example_alias", "version": "1"},
    "prompt_alias.deleted": {"name": "example_prompt", "alias": "example_alias"},
    "budget_policy.exceeded": {
        "budget_policy_id": "bp-abc123", "budget_unit": "USD", "budget_amount": 100.0, "current_spend": 105.5,
        "duration_unit": "MONTHS", "duration_value": 1, "target_scope": "ENDPOINT", "workspace": "default",
        "target_value": "ep-abc123", "window_start": 1704067200000,
    },
}  # fmt: skip


def model_scope_of(event: dict[str, Any]) -> str:
    """The ``model_scope`` of the partition of the model an event is about (its workspace's)."""
    return schema.model_scope(event.get("workspace") or "default")


def new_delivery_id() -> str:
    return str(uuid.uuid4())


def delivery_id(event_id: str, webhook_id: str) -> str:
    """The same id for every attempt at delivering one event to one webhook, so receivers de-duplicate."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"mlflow-serverless:{event_id}:{webhook_id}"))


def full_payload(event: dict[str, Any]) -> dict[str, Any]:
    """The event's payload; tags left out of an oversized outbox item are read back from the model."""
    payload = dict(event.get("payload") or {})
    for key in event.get("float_fields") or ():
        payload[key] = float(payload[key])
    if not event.get("tags_deferred"):
        return payload
    name, scope = event["model_name"], model_scope_of(event)
    if "version" in payload:
        query = schema.entity("model_version_tag").query("of_version", model_name=name, model_scope=scope, version=int(payload["version"]))
    else:
        query = schema.entity("registered_model_tag").query("of_model", model_name=name, model_scope=scope)
    tags = {item["key"]: item["value"] for item in table.iter_query(**query)}
    if event["entity"].startswith("prompt"):
        payload["template"] = tags.pop(PROMPT_TEXT_TAG_KEY, None) if "version" in payload else payload.get("template")
        tags.pop(IS_PROMPT_TAG_KEY, None)
        tags.pop(PROMPT_TYPE_TAG_KEY, None)
        if "version" not in payload:
            payload.pop("template", None)
    payload["tags"] = tags
    return payload
