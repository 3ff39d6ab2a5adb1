"""The deployed webhook pipeline, on a laptop: the table's stream -> the ``webhook_events`` function -> an SQS
queue -> the ``webhook_delivery`` function, with the stack's EventBridge bus beside it.

The queue, its dead-letter queue and the bus live in moto (the embedded moto server that also holds S3 and
KMS). Two threads stand in for Lambda's event source mappings: one follows the table's stream as a second
consumer (its own checkpoints; only ``registry_event`` inserts reach the function, as the deployed filter
has it) and one long-polls the queue for the delivery function (``local/sqs.py``, Lambda's SQS event source mapping).
"""

from __future__ import annotations

import logging
import os
import threading
from pathlib import Path
from typing import Any

from local import iam
from local.events import LambdaContext
from local.sqs import SqsEventSource, create_queue_pair
from local.streams import StreamFollower
from serverless_mlflow.storage import schema, stats

log = logging.getLogger("serverless_mlflow.local")

EVENTS_FUNCTION = "webhook_events"
DELIVERY_FUNCTION = "webhook_delivery"
# SQS redrive: attempts before a message moves to the dead-letter queue (WEBHOOK_MAX_RECEIVES in infra).
MAX_RECEIVES = 6
# Locally the retries come quicker (deployed: 10 s, then 30 s, 90 s, ...).
LOCAL_BACKOFF_BASE_SECONDS = "1"
POLL_SECONDS = 0.2
# The stream reader sleeps until a request wrote a registry event (``wake``); this slow poll is only a backstop
# for events written by another process on the same table. Polling constantly cost every local runtime (and
# every test's) a stream read five times a second.
IDLE_POLL_SECONDS = 10.0
# After a wake, a few short retries in case the records are not readable at once.
WAKE_RETRIES = 3


def is_registry_event(record: dict[str, Any]) -> bool:
    """The deployed mapping's filter: inserts of outbox items only."""
    image = record["dynamodb"].get("NewImage") or {}
    return record.get("eventName") == "INSERT" and image.get(schema.ENTITY_TYPE, {}).get("S") == "registry_event"


class LocalWebhooks:
    def __init__(self, handler_for: Any, endpoint: str, table_name: str) -> None:
        self.handler_for = handler_for
        self.endpoint = endpoint
        # Named after the table: runtimes sharing one moto server (tests) never share a queue or a bus.
        self.queue_name = f"{table_name}-webhooks"
        self.bus_name = f"{table_name}-events"
        self.follower: StreamFollower | None = None
        self.queue_arn = ""
        self.deliveries: SqsEventSource | None = None
        self._stopping = threading.Event()
        self._wake = threading.Event()

    def setup(self, streams_client: Any, stream_arn: str, checkpoints: Path | None) -> None:
        import boto3

        os.environ["SQS_ENDPOINT_URL"] = self.endpoint
        os.environ["EVENTS_ENDPOINT_URL"] = self.endpoint
        os.environ.setdefault("WEBHOOK_BACKOFF_BASE_SECONDS", LOCAL_BACKOFF_BASE_SECONDS)
        sqs = boto3.client("sqs", endpoint_url=self.endpoint)
        queue, self.queue_arn, dead = create_queue_pair(sqs, self.queue_name, MAX_RECEIVES, visibility_seconds=30)
        self.deliveries = SqsEventSource(sqs, queue, self.queue_arn, self._invoke_delivery)
        os.environ["WEBHOOK_QUEUE_URL"] = queue
        os.environ["WEBHOOK_DEAD_LETTER_QUEUE_URL"] = dead
        events = boto3.client("events", endpoint_url=self.endpoint)
        if self.bus_name not in [bus["Name"] for bus in events.list_event_buses().get("EventBuses", [])]:
            events.create_event_bus(Name=self.bus_name)
        os.environ["EVENT_BUS_NAME"] = self.bus_name
        self.follower = StreamFollower(
            streams_client, stream_arn, self._invoke_events, checkpoints, keep=is_registry_event, complete_pages=True, consumer="webhooks"
        )

    def start(self) -> None:
        self._wake.set()  # catch up at once with what was written while no runtime read the stream
        threading.Thread(target=self._follow_stream, daemon=True, name="webhook-events").start()
        if self.deliveries is not None:
            self.deliveries.start(self._stopping, "webhook-delivery")

    def stop(self) -> None:
        self._stopping.set()
        self._wake.set()

    def wake(self) -> None:
        """A request wrote a registry event: read the stream now."""
        self._wake.set()

    def drain(self) -> int:
        return self.follower.drain() if self.follower else 0

    def _invoke_events(self, records: list[dict[str, Any]]) -> dict[str, Any] | None:
        with iam.acting_as(EVENTS_FUNCTION):
            return self.handler_for(EVENTS_FUNCTION)({"Records": records}, LambdaContext(EVENTS_FUNCTION))

    def _follow_stream(self) -> None:
        with stats.uncounted():
            self._follow_stream_counted_elsewhere()

    def _follow_stream_counted_elsewhere(self) -> None:
        while not self._stopping.is_set():
            woken = self._wake.wait(IDLE_POLL_SECONDS)
            self._wake.clear()
            if self._stopping.is_set():
                return
            for _ in range(WAKE_RETRIES if woken else 1):
                try:
                    if self.drain():
                        break
                except Exception:
                    log.exception("webhook events drain failed; retried on the next poll")
                if self._stopping.wait(POLL_SECONDS):
                    return

    def _invoke_delivery(self, event: dict[str, Any]) -> dict[str, Any] | None:
        with iam.acting_as(DELIVERY_FUNCTION):
            return self.handler_for(DELIVERY_FUNCTION)(event, LambdaContext(DELIVERY_FUNCTION))
