"""SQS -> webhook receivers: one POST per message, signed as MLflow signs it.

Each message names an event (its outbox item holds the payload) and a webhook (read at delivery time, so a
webhook disabled or deleted meanwhile gets nothing). Outcomes, as MLflow's retry policy has them:

* 2xx/3xx: delivered; the event source mapping deletes the message.
* 408, 429, 5xx or a network error: retried. The message is made visible again after an exponential
  backoff (``ChangeMessageVisibility``) and reported as a batch item failure; after the queue's
  ``maxReceiveCount`` attempts SQS moves it to the dead-letter queue.
* any other answer, or a target that resolves to a non-public address: final. The message goes to the
  dead-letter queue at once, with the reason, so an operator sees it.
"""

from __future__ import annotations

import json
import os
from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord

from . import deliver

logger = Logger(service="webhook-delivery")
processor = BatchProcessor(event_type=EventType.SQS, raise_on_entire_batch_failure=False)


@logger.inject_lambda_context
def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    def handle(record: SQSRecord) -> None:
        attempt = int(record.attributes.approximate_receive_count or 1)
        outcome = deliver.deliver(json.loads(record.body), attempt)
        if outcome.retry:
            deliver.postpone(os.environ["WEBHOOK_QUEUE_URL"], record.receipt_handle, attempt)
            raise deliver.RetryLater(outcome.reason)
        if outcome.dead:
            deliver.dead_letter(record.body, outcome.reason)

    return process_partial_response(event=event, record_handler=handle, processor=processor, context=context)
