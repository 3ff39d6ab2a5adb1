"""``POST /ajax-api/3.0/mlflow/scorer/invoke`` (MLflow's ``_invoke_scorer_handler``): the same checks and texts, in
the same order, then one ``invoke_scorer`` job per trace batch, each run by MLflow's own job function in the job
worker. Answers ``{"jobs": [{"job_id", "trace_ids"}]}``."""

from __future__ import annotations

from typing import Any

from serverless_mlflow.core.errors import invalid
from serverless_mlflow.jobs import invoke_jobs
from serverless_mlflow.store import scorer_payload


def invoke_scorer(args: dict[str, Any], username: str | None) -> dict[str, Any]:
    experiment_id = args.get("experiment_id")
    serialized_scorer = args.get("serialized_scorer")
    scorer_name = args.get("scorer_name")
    scorer_version = args.get("scorer_version")
    trace_ids = args.get("trace_ids", [])
    log_assessments = args.get("log_assessments", False)

    if not experiment_id:
        raise invalid("Missing required parameter: experiment_id")
    if not serialized_scorer:
        raise invalid("Missing required parameter: serialized_scorer")
    if not trace_ids:
        raise invalid("Please select at least one trace to evaluate.")
    if not isinstance(trace_ids, list) or not all(isinstance(t, str) for t in trace_ids):
        raise invalid("trace_ids must be a list of strings")
    trace_ids = list(dict.fromkeys(trace_ids))
    if (scorer_name is None) != (scorer_version is None):
        raise invalid("scorer_name and scorer_version must be specified together")
    if scorer_name is not None and (
        not isinstance(scorer_name, str) or not isinstance(scorer_version, int) or isinstance(scorer_version, bool)
    ):
        raise invalid("scorer_name must be a string and scorer_version must be an integer")
    if not isinstance(serialized_scorer, str):
        # MLflow's json.loads fails on a non-string (a 500 there); the scorer travels as JSON text.
        raise invalid("serialized_scorer must be valid JSON")
    if not isinstance(experiment_id, str | int) or isinstance(experiment_id, bool):
        raise invalid("experiment_id must be a string")

    scorer = scorer_payload.validate_payload(serialized_scorer)
    if scorer_name is not None:
        registered = invoke_jobs.registered_scorer(str(experiment_id), scorer_name, scorer_version)
        serialized_scorer = registered["serialized_scorer"]
        scorer_version = int(registered["version"])
        scorer = scorer_payload.validate_payload(serialized_scorer)
    if not isinstance(scorer.get("name"), str):
        # Scorer.model_validate_json: a scorer without a name cannot be rebuilt (MLflow fails there with a 500).
        raise invalid("serialized_scorer must contain the scorer's name")

    infos = invoke_jobs.check_traces_in_experiment(trace_ids, str(experiment_id))
    jobs = []
    for batch in invoke_jobs.trace_batches(trace_ids, scorer, infos):
        params = {
            "experiment_id": experiment_id,
            "serialized_scorer": serialized_scorer,
            "scorer_version": scorer_version,
            "trace_ids": batch,
            "log_assessments": log_assessments,
            "username": username,
        }
        job = invoke_jobs.submit(invoke_jobs.INVOKE_SCORER, params, username)
        jobs.append({"job_id": job["job_id"], "trace_ids": batch})
    return {"jobs": jobs}
