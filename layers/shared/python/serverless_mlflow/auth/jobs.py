"""MLflow's auth rules for its job routes (``_get_job_route_validator``, ``_filter_search_jobs``,
``validate_is_job_owner``): any signed-in user submits and searches; a job is read or canceled by its creator
(admins: any job), on the FastAPI routes and their Flask twins alike; a search answers a non-admin only the jobs
they created (jobs with no creator stay hidden). And the invoke routes that submit jobs
(``validate_can_invoke_scorer``, ``validate_can_invoke_genai_evaluate``): UPDATE on the experiment. Their other
requirements are "not denied" on traces, assessments, scorers and scorer versions, kinds that take no grants
here, so they always hold."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from serverless_mlflow import table
from serverless_mlflow.auth import resources
from serverless_mlflow.auth.checks import Identity, is_admin, need
from serverless_mlflow.auth.permissions import UPDATE
from serverless_mlflow.errors import invalid
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


_update_experiment = need(resources.experiment, UPDATE)


def can_invoke_genai_evaluate(req: Request, identity: Identity) -> bool:
    """``validate_can_invoke_genai_evaluate``: a registered scorer entry (a non-null version) whose name cannot be
    read denies a non-admin; unpaired lists are refused before the handler runs, with the handler's text."""
    body = req.json
    scorers, versions = body.get("serialized_scorers"), body.get("scorer_versions")
    if isinstance(scorers, list) and isinstance(versions, list):
        if len(scorers) != len(versions):
            raise invalid("scorer_versions must have the same length as serialized_scorers")
        for serialized, version in zip(scorers, versions, strict=True):
            if version is None:
                continue
            try:
                name = json.loads(serialized)["name"]
            except (json.JSONDecodeError, KeyError, TypeError):
                return is_admin(identity)
            if not isinstance(name, str) or not name:
                return is_admin(identity)
    return _update_experiment(req, identity)
