"""MLflow's auth rules for its job routes (``_get_job_route_validator``, ``_filter_search_jobs``,
``validate_is_job_owner``): any signed-in user submits (the demo's deletion excepted: an admin's) and searches; a
job is read or canceled by its creator (admins: any job), on the FastAPI routes and their Flask twins alike; a
search answers a non-admin only the jobs they created (jobs with no creator stay hidden). And the invoke routes that submit jobs
(``validate_can_invoke_scorer``, ``validate_can_invoke_genai_evaluate``): UPDATE on the experiment. Their other
requirements are "not denied" on traces, assessments, scorers and scorer versions, kinds that take no grants
here, so they always hold."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from serverless_mlflow.auth import resources
from serverless_mlflow.auth.checks import Identity, is_admin, need
from serverless_mlflow.auth.permissions import EXPERIMENT, PROMPT, UPDATE
from serverless_mlflow.core.errors import MlflowError, invalid
from serverless_mlflow.store import job_kinds, jobs

if TYPE_CHECKING:
    from serverless_mlflow.auth.resources import Resource
    from serverless_mlflow.http.api import Request


def may_submit(req: Request, identity: Identity) -> bool:
    """Any signed-in user submits a job, except the demo's deletion: MLflow makes ``demo/delete`` an admin's
    (``sender_is_admin``), and the job that does the deleting must not be a way around it."""
    return req.json.get("job_name") != job_kinds.DEMO_DELETE or is_admin(identity)


def job_creator(req: Request, identity: Identity) -> bool:
    if is_admin(identity):
        return True
    # MLflow's ``validate_is_job_owner`` reads the job with its (workspace-scoped) ``get_job``: a missing job, or
    # one of another workspace, is denied.
    try:
        item = jobs.get(req.path_params.get("job_id", ""))
    except MlflowError:
        return False
    return item.get("creator") == identity.username


def own_jobs(_req: Request, identity: Identity, result: Any, _rerun: Any) -> Any:
    if not isinstance(result, dict) or is_admin(identity):
        return result
    return {**result, "jobs": [job for job in result.get("jobs", []) if job.get("creator") == identity.username]}


# --- prompt-optimization jobs (MLflow 3.18: permissions inherit from the job's experiment) ------------------


def optimization_job_experiment(req: Request) -> list[Resource] | None:
    """The experiment named by the job's params. A missing job answers 404 (admins included): MLflow's validators
    read it with ``get_job``, whose not-found escapes them. A job naming no experiment denies a non-admin."""
    item = jobs.get(req.path_params.get("job_id", ""))  # another workspace's job is missing too
    experiment_id = json.loads(item["params"]).get("experiment_id")
    return [(EXPERIMENT, str(experiment_id))] if experiment_id else None


def source_prompts(req: Request) -> list[Resource] | None:
    """``_source_prompt_requirements``: every prompt the request's ``source_prompt_uri`` may load (the name before
    the last ``@`` of a ``prompts:/`` URI or its ``/<version>``; a bare name both whole and before its alias).
    A URI naming no prompt denies a non-admin; no URI names nothing (the handler refuses it)."""
    uri = req.json.get("source_prompt_uri")
    if not isinstance(uri, str) or not uri:
        return []
    if uri.startswith("prompts:/"):
        rest = uri[len("prompts:/") :]
        name = rest.rpartition("@")[0] if "@" in rest else (rest.split("/")[0] if rest.count("/") >= 1 else "")
        return [(PROMPT, name)] if name else None
    names = [uri]
    if "@" in uri and uri.rpartition("@")[0]:
        names.append(uri.rpartition("@")[0])
    return [(PROMPT, name) for name in names]


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
