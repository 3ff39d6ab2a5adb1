"""One delivery of a job's message: claim the job, run its kind, record the outcome.

* Cancel: a PENDING job is never claimed, and every later state change is conditional on RUNNING, so a job
  canceled while it runs stays CANCELED; kinds also ask ``JobRun.canceled()`` between steps and stop early.
* Retries: a kind raises ``TransientJobError`` (MLflow's ``TransientError``) for a failure worth retrying. The
  job goes back to PENDING with ``retry_count`` + 1 and the message is made visible again after a backoff
  (``Retry``: the handler reports it failed). After ``MAX_RETRIES`` the job is FAILED and its message fails once
  more (``DeadLetter``), visible at once: its next receive is past the queue's ``maxReceiveCount`` and SQS moves
  it to the dead-letter queue, where an operator sees it. Any other error fails the job at once, as MLflow's
  runner does.
* Runs longer than one invocation: a kind saves a checkpoint and raises ``Suspend`` when
  ``JobRun.time_left()`` is short. The job goes back to PENDING with the checkpoint and a fresh message starts the
  next invocation from it (not a retry). A worker killed mid-run (Lambda's timeout, out of memory) leaves the job
  RUNNING with a lease that expires with the invocation; the message's next delivery claims it again, as a retry.
* Timeout: a job's ``timeout`` (seconds, from its creation) ends it as TIMEOUT at the next step that checks.
"""

from __future__ import annotations

import importlib
import json
import os
from dataclasses import dataclass, field
from typing import Any

from serverless_mlflow.core import clock
from serverless_mlflow.jobs import job_queue
from serverless_mlflow.store import job_kinds
from serverless_mlflow.store import jobs as store

from . import workspace

MAX_RETRIES = job_queue.MAX_RETRIES
MAX_RECEIVES = job_queue.MAX_RECEIVES
# Time kept back for saving a checkpoint and handing over before Lambda stops the invocation.
DEFAULT_HANDOVER_MS = 60_000
DEFAULT_BACKOFF_BASE_SECONDS = 10.0
BACKOFF_MAX_SECONDS = 600


class TransientJobError(RuntimeError):
    """A failure worth retrying (MLflow's ``mlflow.server.jobs.TransientError``)."""


class Suspend(Exception):
    """A kind saved its checkpoint and asks to continue in a new invocation."""

    def __init__(self, checkpoint: Any) -> None:
        super().__init__("suspended")
        self.checkpoint = checkpoint


class Stopped(Exception):
    """The job was canceled or timed out while it ran."""


class Retry(Exception):
    """Report the message failed: SQS delivers it again after its visibility timeout."""


class DeadLetter(Retry):
    """The job failed for good: its message fails once more, at once, so SQS moves it to the dead-letter queue."""


@dataclass
class JobRun:
    """What a kind sees of its run: its job, checkpoint, remaining time, cancel and progress."""

    item: dict[str, Any]
    context: Any
    # Under basic auth: the job's token (``auth.job_tokens``), the password its creator's API calls are made with.
    token: str | None = field(default=None, repr=False)

    @property
    def job_id(self) -> str:
        return str(self.item["job_id"])

    @property
    def checkpoint(self) -> Any:
        return store.checkpoint_of(self.item)

    def time_left(self) -> bool:
        """False when the invocation should hand over (checkpoint and ``Suspend``)."""
        return self.context.get_remaining_time_in_millis() > int(os.environ.get("JOB_HANDOVER_MS") or DEFAULT_HANDOVER_MS)

    def check(self) -> None:
        """Between steps: stop a job that was canceled or ran past its timeout."""
        current = store.get(self.job_id)
        if current["status"] != store.RUNNING:
            raise Stopped(current["status"])
        timeout = current.get("timeout")
        if timeout is not None and clock.now_millis() - int(current["creation_time"]) > float(json.loads(timeout)) * 1000:
            store.finish(self.job_id, store.TIMEOUT, error=f"The job exceeded its timeout of {json.loads(timeout)} seconds.")
            raise Stopped(store.TIMEOUT)

    def progress(self, phase: str, completed: int, total: int, unit: str) -> None:
        store.report_progress(self.job_id, {"phase": phase, "completed": completed, "total": total, "unit": unit}, None)


def load_kind(job_name: str) -> Any:
    target = job_kinds.target(job_name)
    if target is None:
        raise ValueError(f"Invalid job name: {job_name}")
    module, function = target.split(":")
    return getattr(importlib.import_module(module), function)


def backoff_seconds(retry_count: int) -> int:
    base = float(os.environ.get("JOB_BACKOFF_BASE_SECONDS") or DEFAULT_BACKOFF_BASE_SECONDS)
    return int(min(base * 2 ** (retry_count - 1), BACKOFF_MAX_SECONDS))


def run(job_id: str, context: Any, attempt: int, token: str | None = None) -> int | None:
    """Run one delivery. Returns the visibility delay (seconds) to retry the message after, or None when the
    message is done (raises ``Retry`` through the handler instead of returning when it must be delivered again)."""
    lease_ms = context.get_remaining_time_in_millis() + 1000
    item = store.claim(job_id, lease_ms)
    if item is None:
        return None  # canceled, finished, or held by a live worker: nothing to do with this message
    if attempt > MAX_RECEIVES or int(item.get("retry_count") or 0) > MAX_RETRIES:
        # Redelivered after the worker died each time (e.g. a kind that never checkpoints outlives Lambda's limit).
        store.finish(job_id, store.FAILED, error=f"The job's worker stopped {attempt - 1} times without finishing (timeout or crash).")
        raise DeadLetter(job_id)
    job_run = JobRun(item, context, token)
    try:
        kind = load_kind(item["job_name"])
        with workspace.of_job(item):
            result = kind(json.loads(item["params"]), job_run)
    except Suspend as suspend:
        if store.requeue(job_id, retry=False, checkpoint=suspend.checkpoint) is not None:
            job_queue.enqueue(job_id, token=token)  # the continuation runs as the same user, until the same expiry
        return None
    except Stopped:
        return None
    except TransientJobError as error:
        retries = int(item.get("retry_count") or 0)
        if retries < MAX_RETRIES and store.requeue(job_id, retry=True) is not None:
            return backoff_seconds(retries + 1)
        store.finish(job_id, store.FAILED, error=f"{error} (after {retries} retries)")
        raise DeadLetter(job_id) from error
    except Exception as error:  # a kind's failure is the job's outcome, not the worker's
        store.finish(job_id, store.FAILED, error=f"{type(error).__name__}: {error}")
        return None
    store.finish(job_id, store.SUCCEEDED, result=result)
    return None
