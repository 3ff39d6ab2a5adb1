"""The job worker: SQS (the jobs queue, one message per job attempt) -> ``runner.run``.

Not on a request path: cold start does not matter here, so kinds may import ``mlflow`` (the demo generators run
the stock client against this server's API). Batch size 1: a job can take the whole invocation.
"""

from __future__ import annotations

import json
import os
from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord

from serverless_mlflow.jobs import job_queue

from . import runner

logger = Logger(service="job-worker")
processor = BatchProcessor(event_type=EventType.SQS, raise_on_entire_batch_failure=False)


@logger.inject_lambda_context
def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    def handle(record: SQSRecord) -> None:
        attempt = int(record.attributes.approximate_receive_count or 1)
        message = json.loads(record.body)
        job_id = message["job_id"]
        try:
            delay = runner.run(job_id, context, attempt, message.get("token"))
        except runner.DeadLetter:
            _visible_after(record, 0)  # the next receive is past maxReceiveCount: SQS dead-letters it
            raise
        if delay is not None:
            _visible_after(record, delay)
            raise runner.Retry(f"job {job_id} retried in {delay} s")

    return process_partial_response(event=event, record_handler=handle, processor=processor, context=context)


def _visible_after(record: SQSRecord, seconds: int) -> None:
    job_queue.client().change_message_visibility(
        QueueUrl=os.environ["JOB_QUEUE_URL"], ReceiptHandle=record.receipt_handle, VisibilityTimeout=seconds
    )
