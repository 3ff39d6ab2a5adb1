"""The jobs queue: one SQS message per job attempt (``{"job_id": ...}``), read by the job worker.

The API enqueues a job it created; the worker enqueues a job again to continue it from its checkpoint in a
fresh invocation (a run longer than one Lambda invocation). Retries are the same message made visible again.
"""

from __future__ import annotations

import json
import os
from typing import Any

_client: Any = None

# SQS's DelaySeconds ceiling.
MAX_DELAY_SECONDS = 900
# MLflow's MLFLOW_SERVER_JOB_TRANSIENT_ERROR_MAX_RETRIES default: a job is retried this many times.
MAX_RETRIES = 3
# Deliveries of one message before SQS moves it to the dead-letter queue (the queue's maxReceiveCount, in infra
# and locally): the first attempt and its retries.
MAX_RECEIVES = MAX_RETRIES + 1


def client() -> Any:
    global _client
    if _client is None:
        import boto3

        _client = boto3.client("sqs", endpoint_url=os.environ.get("SQS_ENDPOINT_URL") or None)
    return _client


def reset_client() -> None:
    global _client
    _client = None


def enqueue(job_id: str, delay_seconds: int = 0) -> None:
    client().send_message(
        QueueUrl=os.environ["JOB_QUEUE_URL"],
        MessageBody=json.dumps({"job_id": job_id}),
        DelaySeconds=max(0, min(delay_seconds, MAX_DELAY_SECONDS)),
    )
