"""The indexer's trace deferral queue, on a laptop (``serverless_mlflow.index.trace_deferral``): the queue and its
dead-letter queue in moto (which honours DelaySeconds, as SQS does), and Lambda's SQS event source mapping feeding
the queue's messages to the indexer (``local/sqs.py``).

The delay is the deployed one (``LOCAL_TRACE_DEFERRAL_SECONDS`` overrides it), except in the runtime's ``sync``
mode, where a write is answered once everything the indexer derives from it is written: there the indexer is
invoked with a delay of 0 and aggregates a trace in progress at once (``delay_for``). In ``paused`` mode nothing
is delivered, the deferred messages included. ``settle`` waits until the queue is empty (what a test or a
benchmark that waits for the indexer waits for too).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from typing import Any

from local.sqs import RETRY_PAUSE_SECONDS, SqsEventSource, create_queue_pair
from serverless_mlflow.index import trace_deferral
from serverless_mlflow.storage import stats

log = logging.getLogger("serverless_mlflow.local")

# Mirrors the deployed queue's redrive (DEFERRAL_MAX_RECEIVES in infra/constructs/indexer.py).
MAX_RECEIVES = 5
# Locally a failed message comes back sooner than the deployed visibility timeout (the function's timeout + 30 s).
VISIBILITY_SECONDS = 10
BATCH_SIZE = 10  # DEFERRAL_BATCH_SIZE in infra/constructs/indexer.py
_COUNTS = ("ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible", "ApproximateNumberOfMessagesDelayed")


class LocalDeferrals:
    def __init__(self, endpoint: str, table_name: str, invoke: Callable[[dict[str, Any]], dict[str, Any] | None]) -> None:
        self.endpoint = endpoint
        self.queue_name = f"{table_name}-trace-deferrals"  # per table: runtimes sharing one moto server never share it
        self.invoke = invoke
        self.delay_seconds = int(os.environ.get("LOCAL_TRACE_DEFERRAL_SECONDS") or trace_deferral.DEFAULT_DELAY_SECONDS)
        self.source: SqsEventSource | None = None
        self.dead_letter_queue_url = ""
        self._stopping = threading.Event()

    def setup(self) -> None:
        import boto3

        sqs = boto3.client("sqs", endpoint_url=self.endpoint)
        queue, arn, self.dead_letter_queue_url = create_queue_pair(sqs, self.queue_name, MAX_RECEIVES, VISIBILITY_SECONDS)
        os.environ["SQS_ENDPOINT_URL"] = self.endpoint
        os.environ[trace_deferral.QUEUE_URL] = queue
        self.source = SqsEventSource(sqs, queue, arn, self.invoke, batch_size=BATCH_SIZE)

    def delay_for(self, mode: str) -> int:
        return 0 if mode == "sync" else self.delay_seconds

    def start(self, active: Callable[[], bool]) -> None:
        """Deliver the messages as they come due while ``active()`` (the indexer is not paused)."""
        threading.Thread(target=self._poll, args=(active,), daemon=True, name="trace-deferrals").start()

    def stop(self) -> None:
        self._stopping.set()

    def _poll(self, active: Callable[[], bool]) -> None:
        assert self.source is not None
        with stats.uncounted():
            while not self._stopping.is_set():
                if not active():
                    self._stopping.wait(RETRY_PAUSE_SECONDS)
                    continue
                try:
                    self.source.deliver_once(wait_seconds=1)
                except Exception:
                    if not self._stopping.is_set():
                        log.exception("trace deferral delivery failed; retried")
                        self._stopping.wait(RETRY_PAUSE_SECONDS)

    def pending(self) -> int:
        """Messages not yet handled: waiting for their delay, visible, or being (re)tried."""
        assert self.source is not None
        attributes = self.source.sqs.get_queue_attributes(QueueUrl=self.source.queue_url, AttributeNames=list(_COUNTS))["Attributes"]
        return sum(int(attributes.get(name, 0)) for name in _COUNTS)

    def settle(self, timeout: float | None = None) -> None:
        """Until every deferred message is delivered (up to its delay from now), delivering them here as they
        come due (the poller may deliver some meanwhile). ``timeout``: at most this long (default: the delay and
        a visibility timeout per receive a failed message may take)."""
        assert self.source is not None
        limit = timeout if timeout is not None else self.delay_seconds + VISIBILITY_SECONDS * MAX_RECEIVES + 10
        deadline = time.monotonic() + limit
        with stats.uncounted():
            while self.pending():
                if time.monotonic() > deadline:
                    raise TimeoutError(f"trace deferrals still pending after {limit:.0f} s")
                self.source.deliver_once(wait_seconds=1)
