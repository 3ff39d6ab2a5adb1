"""``POST /ajax-api/3.0/mlflow/genai/evaluate/invoke`` (MLflow's ``_invoke_genai_evaluate_handler``): the "Run
evaluation" dialog's judges on chosen traces. The same checks and texts in the same order; the evaluation run is
created here (so the answer carries its id and the run shows on the Evaluation Runs page at once), then one
``invoke_genai_evaluate`` job runs MLflow's own job function (``mlflow.genai.evaluate`` into that run) in the job
worker. Answers ``{"job_id", "run_id"}``."""

from __future__ import annotations

import json
from typing import Any

from serverless_mlflow.core import clock
from serverless_mlflow.core.errors import invalid
from serverless_mlflow.jobs import invoke_jobs, job_queue
from serverless_mlflow.store import jobs as job_store
from serverless_mlflow.store import run_writes, scorer_payload

# mlflow.utils.mlflow_tags: MLFLOW_RUN_TYPE, MLFLOW_RUN_TYPE_GENAI_EVALUATE, MLFLOW_GENAI_EVALUATE_JOB_ID, MLFLOW_USER.
RUN_TYPE_TAG = "mlflow.runType"
RUN_TYPE_GENAI_EVALUATE = "genai_evaluate"
JOB_ID_TAG = "mlflow.genaiEvaluate.jobId"


def invoke_genai_evaluate(request_json: dict[str, Any], username: str | None) -> dict[str, Any]:
    """``request_json`` passed the route's schema (messages.py): experiment_id a string, trace_ids a list of
    strings, serialized_scorers a list, scorer_versions a list when given."""
    experiment_id = request_json["experiment_id"]
    trace_ids = list(dict.fromkeys(request_json["trace_ids"]))
    serialized_scorers = list(request_json["serialized_scorers"])
    scorer_versions = request_json.get("scorer_versions")
    scorer_versions = list(scorer_versions) if scorer_versions is not None else [None] * len(serialized_scorers)

    if not trace_ids:
        raise invalid("Please select at least one trace to evaluate.")
    if not serialized_scorers:
        raise invalid("Please select at least one judge.")
    if len(scorer_versions) != len(serialized_scorers):
        raise invalid("scorer_versions must have the same length as serialized_scorers")

    invoke_jobs.check_traces_in_experiment(trace_ids, experiment_id)
    for index, (serialized_scorer, scorer_version) in enumerate(zip(serialized_scorers, scorer_versions, strict=True)):
        if scorer_version is None:
            continue
        if not isinstance(scorer_version, int) or isinstance(scorer_version, bool):
            raise invalid("Each scorer version must be an integer or null")
        try:
            scorer_name = json.loads(serialized_scorer)["name"]
        except (json.JSONDecodeError, KeyError, TypeError):
            raise invalid("A registered scorer must contain a valid name") from None
        if not isinstance(scorer_name, str):
            raise invalid("A registered scorer must contain a valid name")
        registered = invoke_jobs.registered_scorer(experiment_id, scorer_name, scorer_version)
        serialized_scorers[index] = registered["serialized_scorer"]
        scorer_versions[index] = int(registered["version"])
    for serialized_scorer in serialized_scorers:
        if not isinstance(serialized_scorer, str):
            raise invalid("serialized_scorer must be valid JSON")  # MLflow's json.loads fails on it (a 500 there)
        scorer_payload.validate_payload(serialized_scorer)

    # MlflowClient().create_run in MLflow's server (user "unknown": no mlflow.user tag; started now), then the job,
    # then the run's job-id tag. Here the job id is chosen first so the run is created with every tag at once.
    job_id = job_store.new_job_id()
    created = run_writes.create_run(
        {
            "experiment_id": experiment_id,
            "user_id": "unknown",
            "start_time": clock.now_millis(),
            "tags": [{"key": RUN_TYPE_TAG, "value": RUN_TYPE_GENAI_EVALUATE}, {"key": JOB_ID_TAG, "value": job_id}],
        }
    )
    run_id = created["run"]["info"]["run_id"]
    params = {
        "trace_ids": trace_ids,
        "serialized_scorers": serialized_scorers,
        "scorer_versions": scorer_versions,
        "experiment_id": experiment_id,
        "run_id": run_id,
        "username": username,
    }
    try:
        job_queue.create_and_submit(invoke_jobs.INVOKE_GENAI_EVALUATE, params, None, username, job_id=job_id)
    except Exception:
        run_writes.fail_run(run_id)
        raise
    return {"job_id": job_id, "run_id": run_id}
