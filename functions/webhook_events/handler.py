"""Table stream -> registry events: each new ``registry_event`` (outbox) item becomes one EventBridge event on
the stack's bus and one SQS delivery message per webhook subscribed to it.

At least once: a record that fails (EventBridge or SQS refused) is reported as a partial batch failure and
retried by the event source mapping, then dead-lettered. A retried record sends its messages again with
the same delivery ids (receivers de-duplicate on ``X-MLflow-Delivery-Id``) and its EventBridge event again
with the same ``event_id`` in its detail.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.data_classes.dynamo_db_stream_event import DynamoDBRecord

from serverless_mlflow.storage import table

from . import dispatch

logger = Logger(service="webhook-events")
processor = BatchProcessor(event_type=EventType.DynamoDBStreams, raise_on_entire_batch_failure=False)


@logger.inject_lambda_context
def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    prompt_flags: dict[tuple[str, str], bool] = {}

    def handle(record: DynamoDBRecord) -> None:
        image = (record.raw_event.get("dynamodb") or {}).get("NewImage")
        if record.raw_event.get("eventName") != "INSERT" or not image:
            return
        dispatch.dispatch(table.from_item(image), prompt_flags)

    return process_partial_response(event=event, record_handler=handle, processor=processor, context=context)
