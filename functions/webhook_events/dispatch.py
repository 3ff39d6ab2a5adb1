"""One registry event: resolve MLflow's entity (prompt or model), publish it, queue its webhook deliveries."""

from __future__ import annotations

import json
import os
import threading
from typing import Any

from serverless_mlflow.storage import schema, table
from serverless_mlflow.store import registry_events, webhooks

SOURCE = "mlflow-serverless"
RM_TAG = schema.entity("registered_model_tag")
SQS_BATCH = 10
MAX_DETAIL_BYTES = 240_000

_lock = threading.Lock()
_clients: dict[str, Any] = {}


def _client(service: str) -> Any:
    with _lock:
        if service not in _clients:
            import boto3

            endpoint = os.environ.get("SQS_ENDPOINT_URL" if service == "sqs" else "EVENTS_ENDPOINT_URL") or None
            _clients[service] = boto3.client(service, endpoint_url=endpoint)
        return _clients[service]


def is_prompt(event: dict[str, Any], cache: dict[tuple[str, str], bool]) -> bool:
    """MLflow's ``_is_prompt(name)``: the model's ``mlflow.prompt.is_prompt`` tag (in the event's workspace), read
    when dispatching."""
    scope, model_name = registry_events.model_scope_of(event), event["model_name"]
    if (scope, model_name) not in cache:
        tag = table.get(RM_TAG.key(model_name=model_name, model_scope=scope, key=registry_events.IS_PROMPT_TAG_KEY))
        cache[scope, model_name] = registry_events.is_prompt_value(tag.get("value") if tag else None)
    return cache[scope, model_name]


def dispatch(event: dict[str, Any], prompt_flags: dict[tuple[str, str], bool]) -> None:
    entity: str | None = event["entity"]
    if event.get("prompt_aware"):
        entity = registry_events.resolve_entity(event["entity"], is_prompt(event, prompt_flags))
    if entity is None:
        return  # MLflow sends no event for this change (a tag on a registered model that is not a prompt)
    action = event["action"]
    workspace = event.get("workspace") or webhooks.DEFAULT_WORKSPACE
    _publish(event, entity, action, workspace)
    hooks = webhooks.subscribed(registry_events.event_name(entity, action), workspace)
    messages = [
        {
            "Id": str(i),
            "MessageBody": json.dumps(
                {
                    "event_id": event["event_id"],
                    "webhook_id": hook["webhook_id"],
                    "workspace": workspace,
                    "entity": entity,
                    "action": action,
                    "delivery_id": registry_events.delivery_id(event["event_id"], hook["webhook_id"]),
                }
            ),
        }
        for i, hook in enumerate(hooks)
    ]
    queue_url = os.environ.get("WEBHOOK_QUEUE_URL")
    if messages and queue_url:
        for start in range(0, len(messages), SQS_BATCH):
            answer = _client("sqs").send_message_batch(QueueUrl=queue_url, Entries=messages[start : start + SQS_BATCH])
            if answer.get("Failed"):
                raise RuntimeError(f"SQS refused delivery messages: {answer['Failed']}")


def _publish(event: dict[str, Any], entity: str, action: str, workspace: str) -> None:
    """The same event on the stack's EventBridge bus, for AWS consumers (beyond MLflow)."""
    bus = os.environ.get("EVENT_BUS_NAME")
    if not bus:
        return
    detail: dict[str, Any] = {
        "event_id": event["event_id"],
        "workspace": workspace,
        "entity": entity,
        "action": action,
        "timestamp": int(event["created_at"]),
        "data": registry_events.full_payload(event),
    }
    if event.get("split"):
        detail["split"] = event["split"]
    body = json.dumps(detail)
    if len(body.encode("utf-8")) > MAX_DETAIL_BYTES:
        # EventBridge takes 256 KB per entry: hundreds of large tags do not fit; consumers read them.
        detail["data"] = {k: v for k, v in detail["data"].items() if k != "tags"}
        detail["tags_omitted"] = True
        body = json.dumps(detail)
    answer = _client("events").put_events(
        Entries=[{"Source": SOURCE, "DetailType": registry_events.event_name(entity, action), "Detail": body, "EventBusName": bus}]
    )
    if answer.get("FailedEntryCount"):
        raise RuntimeError(f"EventBridge refused the event: {answer.get('Entries')}")
