"""The jobs queue: one SQS message per job attempt (``{"job_id": ...}``), read by the job worker.

The API enqueues a job it created; the worker enqueues a job again to continue it from its checkpoint in a
fresh invocation (a run longer than one Lambda invocation). Retries are the same message made visible again.
Under basic auth the message also carries the job's token (``auth.job_tokens``): the worker calls the API as the
job's creator with it. It lives only in the message (SQS-encrypted), never in the table or a log.
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


def create_and_submit(
    job_name: str,
    params: dict[str, Any],
    timeout: float | None,
    creator: str | None,
    job_id: str | None = None,
    workspace: str | None = None,
) -> dict[str, Any]:
    """A new job (in ``workspace``, the request's by default): its item first (PENDING), then its message. A job
    whose message could not be sent is failed at once, so no job waits forever for a worker that will never hear of it."""
    from serverless_mlflow.store import jobs as store

    item = store.create(job_name, params, timeout, creator, workspace=workspace, job_id=job_id)
    try:
        submit(item["job_id"], creator)
    except Exception:
        store.fail_unqueued(item["job_id"])
        raise
    return item


def submit(job_id: str, creator: str | None) -> None:
    """A new job's message: under basic auth with the token its worker calls the API with, as ``creator``."""
    from serverless_mlflow import auth
    from serverless_mlflow.auth import job_tokens

    token = job_tokens.mint(creator, job_id) if creator and auth.basic_enabled() else None
    enqueue(job_id, token=token)


def enqueue(job_id: str, delay_seconds: int = 0, token: str | None = None) -> None:
    body: dict[str, str] = {"job_id": job_id}
    if token:
        body["token"] = token
    client().send_message(
        QueueUrl=os.environ["JOB_QUEUE_URL"],
        MessageBody=json.dumps(body),
        DelaySeconds=max(0, min(delay_seconds, MAX_DELAY_SECONDS)),
    )
