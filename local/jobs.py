"""The deployed jobs runner, on a laptop: the jobs queue and its dead-letter queue in moto (the embedded moto
server that also holds S3 and KMS), and Lambda's SQS event source mapping feeding the ``job_worker`` function
(``local/sqs.py``). The worker's kinds call this runtime's own API (``JOB_SERVER_URL``), as the deployed worker
calls the stack's.

The invocation's time limit is the deployed function's (``JOB_WORKER_TIMEOUT_SECONDS``, 900 s), so a job longer
than that continues from its checkpoint in a new invocation here too; tests shorten it to see that happen.
"""

from __future__ import annotations

import os
import threading
from typing import Any

from local import iam
from local.events import LambdaContext
from local.sqs import SqsEventSource, create_queue_pair
from serverless_mlflow.jobs import job_queue

WORKER_FUNCTION = "job_worker"
DEFAULT_WORKER_TIMEOUT_SECONDS = 900
# Locally the retries come quicker (deployed: 10 s, then 20 s, 40 s).
LOCAL_BACKOFF_BASE_SECONDS = "1"
# Parallel worker invocations (Lambda runs one per message; two keep a long job from holding up small ones).
DEFAULT_CONCURRENCY = 2


class LocalJobs:
    def __init__(self, handler_for: Any, endpoint: str, table_name: str) -> None:
        self.handler_for = handler_for
        self.endpoint = endpoint
        # Named after the table: runtimes sharing one moto server (tests) never share a queue.
        self.queue_name = f"{table_name}-jobs"
        self.source: SqsEventSource | None = None
        self.dead_letter_queue_url = ""
        self._stopping = threading.Event()

    def setup(self) -> None:
        import boto3

        os.environ["SQS_ENDPOINT_URL"] = self.endpoint
        os.environ.setdefault("JOB_BACKOFF_BASE_SECONDS", LOCAL_BACKOFF_BASE_SECONDS)
        sqs = boto3.client("sqs", endpoint_url=self.endpoint)
        timeout = self.worker_timeout()
        queue, arn, self.dead_letter_queue_url = create_queue_pair(
            sqs, self.queue_name, job_queue.MAX_RECEIVES, visibility_seconds=int(timeout) + 30
        )
        os.environ["JOB_QUEUE_URL"] = queue
        os.environ["JOB_DEAD_LETTER_QUEUE_URL"] = self.dead_letter_queue_url
        job_queue.reset_client()
        self.source = SqsEventSource(sqs, queue, arn, self._invoke, batch_size=1)

    @staticmethod
    def worker_timeout() -> float:
        return float(os.environ.get("JOB_WORKER_TIMEOUT_SECONDS") or DEFAULT_WORKER_TIMEOUT_SECONDS)

    def start(self, server_url: str) -> None:
        os.environ["JOB_SERVER_URL"] = server_url  # this runtime (a child runtime never inherits its parent's)
        # litellm (MLflow's GenAI extras, when installed) would fetch its model price map from GitHub at import,
        # retrying for about 15 s without a network: the worker uses the copy litellm ships, as deployed.
        os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        if self.source is None:
            return
        for number in range(int(os.environ.get("JOB_WORKER_CONCURRENCY") or DEFAULT_CONCURRENCY)):
            self.source.start(self._stopping, f"job-worker-{number}")

    def stop(self) -> None:
        self._stopping.set()

    def _invoke(self, event: dict[str, Any]) -> dict[str, Any] | None:
        with iam.acting_as(WORKER_FUNCTION):
            return self.handler_for(WORKER_FUNCTION)(event, LambdaContext(WORKER_FUNCTION, self.worker_timeout()))
