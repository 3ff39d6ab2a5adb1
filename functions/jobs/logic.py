"""Submitting a job by name (the jobs API): a name this server runs, then its item and message."""

from __future__ import annotations

from typing import Any

from serverless_mlflow.core.errors import invalid
from serverless_mlflow.jobs import job_queue
from serverless_mlflow.store import job_kinds


def submit(job_name: str, params: dict[str, Any], timeout: float | None, creator: str | None) -> dict[str, Any]:
    if job_kinds.target(job_name) is None:
        raise invalid(f"Invalid job name: {job_name}")
    return job_queue.create_and_submit(job_name, params, timeout, creator)
