"""Delivering one event to one webhook, and what happens to the message after."""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from typing import Any

from serverless_mlflow.core.errors import MlflowError
from serverless_mlflow.jobs import webhook_http
from serverless_mlflow.storage import schema, table
from serverless_mlflow.store import registry_events, webhooks

EVENT = schema.entity("registry_event")
RETRY_STATUSES = frozenset({408, 429, 500, 502, 503, 504})
# Backoff before attempt n+1: BASE * 3**(n-1) seconds, capped (SQS allows 12 hours; 15 minutes is plenty).
DEFAULT_BACKOFF_BASE_SECONDS = 10
MAX_BACKOFF_SECONDS = 900

_lock = threading.Lock()
_sqs: Any = None


class RetryLater(Exception):
    """Reported as a batch item failure: SQS redelivers the message after its visibility timeout."""


@dataclass(frozen=True)
class Outcome:
    delivered: bool = False
    retry: bool = False
    dead: bool = False
    reason: str = ""


def _client() -> Any:
    global _sqs
    with _lock:
        if _sqs is None:
            import boto3

            _sqs = boto3.client("sqs", endpoint_url=os.environ.get("SQS_ENDPOINT_URL") or None)
        return _sqs


def deliver(message: dict[str, Any], attempt: int) -> Outcome:
    try:
        hook = webhooks.get(message["webhook_id"], message.get("workspace") or webhooks.DEFAULT_WORKSPACE)
    except MlflowError:
        return Outcome(reason="webhook deleted")
    if hook.get("status", webhooks.ACTIVE) != webhooks.ACTIVE:
        return Outcome(reason="webhook disabled")
    event = table.get(EVENT.key(event_id=message["event_id"]))
    if event is None:
        return Outcome(dead=True, reason="event expired before delivery")
    body = webhook_http.envelope(message["entity"], message["action"], registry_events.full_payload(event), hook)
    try:
        headers = webhook_http.headers(message["delivery_id"], body, webhooks.secret_of(hook))
        status, _ = webhook_http.post(hook["url"], body, headers)
    except (webhook_http.BlockedAddress, MlflowError) as error:
        return Outcome(dead=True, reason=str(error))
    except Exception as error:  # network failure, timeout: the receiver may come back
        return Outcome(retry=True, reason=f"attempt {attempt}: {error!r}")
    if status < 400:
        return Outcome(delivered=True)
    if status in RETRY_STATUSES:
        return Outcome(retry=True, reason=f"attempt {attempt}: HTTP {status}")
    return Outcome(dead=True, reason=f"HTTP {status}")


def backoff_seconds(attempt: int) -> int:
    base = int(os.environ.get("WEBHOOK_BACKOFF_BASE_SECONDS", DEFAULT_BACKOFF_BASE_SECONDS))
    return min(MAX_BACKOFF_SECONDS, base * 3 ** max(0, attempt - 1))


def postpone(queue_url: str, receipt_handle: str, attempt: int) -> None:
    _client().change_message_visibility(QueueUrl=queue_url, ReceiptHandle=receipt_handle, VisibilityTimeout=backoff_seconds(attempt))


def dead_letter(body: str, reason: str) -> None:
    _client().send_message(
        QueueUrl=os.environ["WEBHOOK_DEAD_LETTER_QUEUE_URL"],
        MessageBody=body,
        MessageAttributes={"reason": {"DataType": "String", "StringValue": reason[:1000] or "undeliverable"}},
    )
