"""MLflow's auth rules for its job routes (``_get_job_route_validator``, ``_filter_search_jobs``): any signed-in
user submits and searches; a job is read or canceled by its creator (admins: any job); a search answers a
non-admin only the jobs they created (jobs with no creator stay hidden)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from serverless_mlflow import table
from serverless_mlflow.auth.checks import Identity, is_admin
from serverless_mlflow.store import jobs

if TYPE_CHECKING:
    from serverless_mlflow.api import Request


def job_creator(req: Request, identity: Identity) -> bool:
    if is_admin(identity):
        return True
    item = table.get(jobs.JOB.key(job_id=req.path_params.get("job_id", "")))
    return item is not None and item.get("creator") == identity.username


def own_jobs(_req: Request, identity: Identity, result: Any, _rerun: Any) -> Any:
    if not isinstance(result, dict) or is_admin(identity):
        return result
    return {**result, "jobs": [job for job in result.get("jobs", []) if job.get("creator") == identity.username]}
