"""Webhook CRUD and the ``test`` call, with MLflow's checks in MLflow's order (handlers, then the store)."""

from __future__ import annotations

import re
from typing import Any

from serverless_mlflow.core.errors import invalid
from serverless_mlflow.jobs import webhook_http
from serverless_mlflow.store import registry_events
from serverless_mlflow.store import webhooks as store

# mlflow/utils/validation.py _WEBHOOK_NAME_REGEX
_NAME = re.compile(r"^[a-zA-Z0-9]([a-zA-Z0-9._-]{0,61}[a-zA-Z0-9])?$")
# webhooks.proto enum numbers
_ENTITIES = (
    "ENTITY_UNSPECIFIED", "REGISTERED_MODEL", "MODEL_VERSION", "MODEL_VERSION_TAG", "MODEL_VERSION_ALIAS", "PROMPT",
    "PROMPT_VERSION", "PROMPT_TAG", "PROMPT_VERSION_TAG", "PROMPT_ALIAS", "BUDGET_POLICY",
)  # fmt: skip
_ACTIONS = ("ACTION_UNSPECIFIED", "CREATED", "UPDATED", "DELETED", "SET", "EXCEEDED")
_STATUSES = {1: store.ACTIVE, 2: store.DISABLED}


def _enum_name(field: str, value: Any, names: tuple[str, ...] | dict[int, str]) -> str:
    numbers = dict(enumerate(names)) if isinstance(names, tuple) else names
    if isinstance(value, int) and not isinstance(value, bool) and value in numbers:
        return numbers[value]
    if isinstance(value, str) and value in numbers.values():
        return value
    # MLflow's server answers 500 here (protobuf leaves the enum unset); a clear 400 instead.
    raise invalid(
        f"Invalid value {value!r} for {field}: expected one of {', '.join(v for v in numbers.values() if 'UNSPECIFIED' not in v)}."
    )


def event_of(raw: Any, field: str = "events") -> str:
    """One WebhookEvent message as ``entity.action`` (MLflow's ``WebhookEvent.from_proto`` checks the pair)."""
    if not isinstance(raw, dict):
        raise invalid(f"Invalid value {raw!r} for {field}: expected a WebhookEvent object with entity and action.")
    entity = _enum_name(f"{field}.entity", raw.get("entity", 0), _ENTITIES).lower()
    action = _enum_name(f"{field}.action", raw.get("action", 0), _ACTIONS).lower()
    if entity == "entity_unspecified" or action == "action_unspecified":
        raise invalid(f"Invalid value {raw!r} for {field}: entity and action are required.")
    valid = registry_events.VALID_ENTITY_ACTIONS[entity]
    if action not in valid:
        raise invalid(f"Invalid action '{action}' for entity '{entity}'. Valid actions are: {sorted(valid)}")
    return registry_events.event_name(entity, action)


def _status(raw: Any) -> str:
    return _enum_name("status", raw, _STATUSES)


def validate_name(name: Any) -> None:
    if not isinstance(name, str):
        raise invalid(f"Webhook name must be a string, got {type(name).__name__!r}")
    if not _NAME.fullmatch(name):
        raise invalid(
            f"Webhook name {name!r} is invalid. It must start and end with a letter or digit, be less than 63 characters "
            "long, and contain only letters, digits, dots (.), underscores (_), and hyphens (-)."
        )


def _validate_events(events: list[str]) -> None:
    if not events:
        raise invalid(f"Webhook events must be a non-empty list of WebhookEvent objects: {events}.")


def create(msg: dict[str, Any]) -> dict[str, Any]:
    events = [event_of(raw) for raw in msg.get("events") or []]
    status = _status(msg["status"]) if msg.get("status") else None
    validate_name(msg["name"])
    webhook_http.validate_url(msg["url"])
    _validate_events(events)
    item = store.create(msg["name"], msg["url"], events, msg.get("description") or None, msg.get("secret") or None, status)
    return store.webhook_json(item)


def update(webhook_id: str, msg: dict[str, Any]) -> dict[str, Any]:
    events = [event_of(raw) for raw in msg["events"]] if msg.get("events") else None
    status = _status(msg["status"]) if "status" in msg else None
    store.get(webhook_id)
    changes: dict[str, Any] = {}
    if msg.get("name"):
        validate_name(msg["name"])
        changes["name"] = msg["name"]
    if msg.get("url"):
        webhook_http.validate_url(msg["url"])
        changes["url"] = msg["url"]
    if events is not None:
        changes["events"] = events
    if "description" in msg:
        # An empty description clears it (MLflow stores "", and answers no description).
        changes["description"] = msg["description"] or None
    if status is not None:
        changes["status"] = status
    item = store.update(webhook_id, changes, msg.get("secret") if "secret" in msg else None)
    return store.webhook_json(item)


def test(webhook_id: str, raw_event: Any) -> dict[str, Any]:
    """MLflow's ``test_webhook``: the event's example payload, sent now; the outcome as WebhookTestResult."""
    event = event_of(raw_event, "event") if raw_event is not None else None
    item = store.get(webhook_id)
    event = event or (item.get("events") or ["registered_model.created"])[0]
    entity, action = event.split(".", 1)
    body = webhook_http.envelope(entity, action, registry_events.EXAMPLE_PAYLOADS[event], item)
    try:
        headers = webhook_http.headers(registry_events.new_delivery_id(), body, store.secret_of(item))
        status, text = webhook_http.post(item["url"], body, headers)
    except Exception as error:  # MLflow answers every failure as an unsuccessful result
        return {"success": False, "error_message": f"Failed to test webhook: {error!r}"}
    out: dict[str, Any] = {"success": status < 400, "response_status": status}
    if text:
        out["response_body"] = text
    return out
