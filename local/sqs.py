"""Lambda's SQS event source mapping, on a laptop: long-poll a queue (moto), invoke a function with SQS events,
delete the messages it did not report as failed. A failed message stays invisible for whatever visibility the
function set, and moto moves it to the dead-letter queue after the queue's ``maxReceiveCount``, as SQS's redrive
policy does."""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Callable
from typing import Any

from serverless_mlflow.storage import stats

log = logging.getLogger("serverless_mlflow.local")

Invoke = Callable[[dict[str, Any]], dict[str, Any] | None]
RETRY_PAUSE_SECONDS = 0.2


def create_queue_pair(sqs: Any, name: str, max_receives: int, visibility_seconds: int) -> tuple[str, str, str]:
    """A queue with its dead-letter queue: (queue url, queue arn, dead-letter queue url)."""
    dead = sqs.create_queue(QueueName=f"{name}-dlq")["QueueUrl"]
    dead_arn = sqs.get_queue_attributes(QueueUrl=dead, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    redrive = json.dumps({"deadLetterTargetArn": dead_arn, "maxReceiveCount": str(max_receives)})
    queue = sqs.create_queue(QueueName=name, Attributes={"RedrivePolicy": redrive, "VisibilityTimeout": str(visibility_seconds)})[
        "QueueUrl"
    ]
    arn = sqs.get_queue_attributes(QueueUrl=queue, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    return queue, arn, dead


class SqsEventSource:
    def __init__(self, sqs: Any, queue_url: str, queue_arn: str, invoke: Invoke, batch_size: int = 10) -> None:
        self.sqs = sqs
        self.queue_url = queue_url
        self.queue_arn = queue_arn
        self.invoke = invoke
        self.batch_size = batch_size

    def start(self, stopping: threading.Event, name: str) -> None:
        threading.Thread(target=self._poll, args=(stopping,), daemon=True, name=name).start()

    def _poll(self, stopping: threading.Event) -> None:
        with stats.uncounted():
            while not stopping.is_set():
                try:
                    self.deliver_once(wait_seconds=1)
                except Exception:
                    if not stopping.is_set():
                        log.exception("SQS poll of %s failed; retried", self.queue_url)
                        stopping.wait(RETRY_PAUSE_SECONDS)

    def deliver_once(self, wait_seconds: int = 0) -> int:
        """One receive and invocation, as Lambda's SQS event source mapping does it; returns messages received."""
        answer = self.sqs.receive_message(
            QueueUrl=self.queue_url,
            MaxNumberOfMessages=self.batch_size,
            WaitTimeSeconds=wait_seconds,
            AttributeNames=["All"],
            MessageAttributeNames=["All"],
        )
        messages = answer.get("Messages") or []
        if not messages:
            return 0
        records = [
            {
                "messageId": m["MessageId"],
                "receiptHandle": m["ReceiptHandle"],
                "body": m["Body"],
                "attributes": m.get("Attributes") or {},
                "messageAttributes": m.get("MessageAttributes") or {},
                "md5OfBody": m.get("MD5OfBody", ""),
                "eventSource": "aws:sqs",
                "eventSourceARN": self.queue_arn,
                "awsRegion": os.environ.get("AWS_DEFAULT_REGION", "us-east-1"),
            }
            for m in messages
        ]
        result = self.invoke({"Records": records}) or {}
        failed = {f["itemIdentifier"] for f in result.get("batchItemFailures", [])}
        done = [{"Id": str(i), "ReceiptHandle": r["receiptHandle"]} for i, r in enumerate(records) if r["messageId"] not in failed]
        if done:
            self.sqs.delete_message_batch(QueueUrl=self.queue_url, Entries=done)
        return len(messages)
