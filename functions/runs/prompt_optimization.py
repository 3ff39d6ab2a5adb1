"""MLflow 3.18's prompt-optimization job routes (``/api/3.0/mlflow/prompt-optimization/jobs``): a job of MLflow's
``optimize_prompts`` function, tracked by a run in the experiment.

As MLflow's handlers (``_create_prompt_optimization_job`` ...): create validates the request, creates the run and
logs the optimization config as its params, then submits ``optimize_prompts`` with MLflow's params (the job worker
runs MLflow's own job function, ``job_worker.kinds.optimize``); get/search/cancel build the answer from the job's
params and status (get adds the run's ``initial_eval_score``/``final_eval_score`` metrics); cancel kills the run,
delete removes a finished job and deletes its run. This feature owns runs, so the run is written here.
"""

from __future__ import annotations

import json
import re
from typing import Any

from serverless_mlflow.core import clock
from serverless_mlflow.core.deferred import deferred
from serverless_mlflow.core.errors import MlflowError, invalid, not_found
from serverless_mlflow.jobs import job_queue
from serverless_mlflow.request import workspace as request_workspace
from serverless_mlflow.storage import table
from serverless_mlflow.storage.schema import ENTITY
from serverless_mlflow.store import job_kinds
from serverless_mlflow.store import jobs as job_store
from serverless_mlflow.store import runs as run_store

from . import data, inputs, lifecycle

# protobuf is imported by the first create, not at the runs function's cold start.
protos = deferred("serverless_mlflow.request.protos")

JOB_NAME = job_kinds.OPTIMIZE_PROMPTS
# Evaluation dataset ids longer than this cannot fit a key (the evaluation feature's bound): no dataset has one.
MAX_DATASET_ID_BYTES = 512

# OptimizerType (mlflow.genai.optimize.job): the proto enum's name -> the job param's value.
OPTIMIZER_VALUES = {"OPTIMIZER_TYPE_GEPA": "gepa", "OPTIMIZER_TYPE_METAPROMPT": "metaprompt"}
OPTIMIZER_NAMES = {value: name for name, value in OPTIMIZER_VALUES.items()}
# JobStatus.to_proto (mlflow.entities._job_status): the proto has no TIMEOUT.
PROTO_STATUS = {
    job_store.PENDING: "JOB_STATUS_PENDING",
    job_store.RUNNING: "JOB_STATUS_IN_PROGRESS",
    job_store.NEEDS_RECOVERY: "JOB_STATUS_NEEDS_RECOVERY",
    job_store.SUCCEEDED: "JOB_STATUS_COMPLETED",
    job_store.FAILED: "JOB_STATUS_FAILED",
    job_store.TIMEOUT: "JOB_STATUS_FAILED",
    job_store.CANCELED: "JOB_STATUS_CANCELED",
}
_SCORE = re.compile(r"^(initial|final)_eval_score(?:\.(.+))?$", re.DOTALL)


def _optimizer_type(config: Any) -> str:
    """``OptimizerType.from_proto``: the enum's value, refusing UNSPECIFIED with MLflow's text."""
    supported = list(OPTIMIZER_VALUES)
    name = protos.ENUMS["OptimizerType"][config.optimizer_type]
    if name not in OPTIMIZER_VALUES:
        raise invalid(f"optimizer_type is required. Supported types: {supported}")
    return OPTIMIZER_VALUES[name]


def _prompt_name_version(prompt_uri: str) -> tuple[str, str]:
    """``_parse_prompt_uri``: ``prompts:/<name>/<version>``, else empty strings."""
    if prompt_uri.startswith("prompts:/"):
        parts = prompt_uri.replace("prompts:/", "").split("/")
        if len(parts) >= 2:
            return parts[0], parts[1]
    return "", ""


def create(msg: dict[str, Any], user: str | None) -> dict[str, Any]:
    prompt_uri = msg.get("source_prompt_uri") or ""
    if not prompt_uri:
        raise invalid("source_prompt_uri is required for optimization job")
    config = protos.parse("PromptOptimizationJobConfig", msg["config"], "config")
    tags = [protos.parse("PromptOptimizationJobTag", tag, "tags") for tag in msg.get("tags") or []]
    scorers = list(config.scorers)
    optimizer_type = _optimizer_type(config)
    experiment_id = (msg.get("experiment_id") or "").strip()
    if not experiment_id:
        raise invalid("experiment_id is required for optimization job")
    optimizer_config = None
    if config.optimizer_config_json:
        try:
            optimizer_config = json.loads(config.optimizer_config_json)
        except json.JSONDecodeError as error:
            raise invalid(f"Invalid JSON in optimizer_config_json: {error}") from None
    start_time = clock.now_millis()
    prompt_name, prompt_version = _prompt_name_version(prompt_uri)
    # MLflow formats its str enum with an f-string: on Python 3.11 that is the member's qualified name.
    label = f"OptimizerType.{OPTIMIZER_NAMES[optimizer_type].removeprefix('OPTIMIZER_TYPE_')}"
    run = lifecycle.create_run(
        {
            "experiment_id": experiment_id,
            "user_id": user or "unknown",
            "start_time": start_time,
            "run_name": f"optimize_prompt_{label}_{prompt_name}_{prompt_version}_{start_time}",
        }
    )["run"]
    run_id = run["info"]["run_id"]
    params = [
        {"key": "source_prompt_uri", "value": prompt_uri},
        {"key": "optimizer_type", "value": optimizer_type},
        {"key": "dataset_id", "value": config.dataset_id},
        {"key": "scorer_names", "value": json.dumps(scorers)},
    ]
    if config.optimizer_config_json:
        params.append({"key": "optimizer_config_json", "value": config.optimizer_config_json})
    batch = {"run_id": run_id, "params": params}
    data.log_batch(batch, batch)
    if config.dataset_id:
        _link_dataset(run_id, config.dataset_id)
    job_params = {
        "run_id": run_id,
        "experiment_id": experiment_id,
        "prompt_uri": prompt_uri,
        "dataset_id": config.dataset_id,
        "optimizer_type": optimizer_type,
        "optimizer_config": optimizer_config,
        "scorer_names": scorers,
    }
    item = job_queue.create_and_submit(JOB_NAME, job_params, None, user)
    job: dict[str, Any] = {
        "job_id": item["job_id"],
        "run_id": run_id,
        "state": {"status": "JOB_STATUS_PENDING"},
        "experiment_id": experiment_id,
        "source_prompt_uri": prompt_uri,
        "config": protos.to_json(config),
        "creation_timestamp_ms": int(item["creation_time"]),
    }
    if tags:
        job["tags"] = [{"key": tag.key, "value": tag.value} for tag in tags]
    return {"job": job}


def _link_dataset(run_id: str, dataset_id: str) -> None:
    """The evaluation dataset as the run's input for lineage (``EvaluationDataset._to_mlflow_entity``, tagged
    ``mlflow.data.context=optimization``); a missing one is MLflow's 404, after the run is made, as in MLflow."""
    item = None
    if 0 < len(dataset_id.encode("utf-8")) <= MAX_DATASET_ID_BYTES:
        item = table.get(ENTITY["evaluation_dataset"].key(workspace=request_workspace.current(), dataset_id=dataset_id))
    if item is None or item.get("deleting"):
        raise not_found(f"Evaluation dataset with id '{dataset_id}' not found")
    dataset = {
        "name": item["name"],
        "digest": item["digest"],
        "source_type": "mlflow_evaluation_dataset",
        "source": json.dumps({"dataset_id": dataset_id}),
        **{field: item[field] for field in ("schema", "profile") if item.get(field) is not None},
    }
    inputs.log_inputs(
        {"run_id": run_id, "datasets": [{"tags": [{"key": "mlflow.data.context", "value": "optimization"}], "dataset": dataset}]}
    )


def job_json(item: dict[str, Any]) -> dict[str, Any]:
    """``_build_prompt_optimization_job_from_entity``."""
    status = item["status"]
    state: dict[str, Any] = {"status": PROTO_STATUS[status]}
    if item.get("status_message") is not None:
        state["status_message"] = item["status_message"]
    progress = json.loads(item["progress"]) if item.get("progress") else None
    if progress and any(value is not None for value in progress.values()):
        state["progress"] = {key: progress[key] for key in ("phase", "completed", "total", "unit") if progress.get(key) is not None}
    if item.get("progress_updated_at") is not None:
        state["progress_updated_at"] = int(item["progress_updated_at"])
    job: dict[str, Any] = {"job_id": item["job_id"], "state": state, "creation_timestamp_ms": int(item["creation_time"])}
    params = json.loads(item["params"])
    if "experiment_id" in params:
        job["experiment_id"] = params["experiment_id"]
    if "prompt_uri" in params:
        job["source_prompt_uri"] = params["prompt_uri"]
    if params.get("run_id"):
        job["run_id"] = params["run_id"]
    config: dict[str, Any] = {}
    if params.get("optimizer_type") in OPTIMIZER_NAMES:
        config["optimizer_type"] = OPTIMIZER_NAMES[params["optimizer_type"]]
    if params.get("dataset_id"):
        config["dataset_id"] = params["dataset_id"]
    scorers = params.get("scorer_names")
    if isinstance(scorers, list) and scorers:
        config["scorers"] = scorers
    optimizer_config = params.get("optimizer_config")
    if optimizer_config:
        config["optimizer_config_json"] = json.dumps(optimizer_config) if isinstance(optimizer_config, dict) else optimizer_config
    if config:
        job["config"] = config
    stored = item.get("result")
    if status == job_store.SUCCEEDED and stored:
        result = json.loads(stored)
        if isinstance(result, dict) and result.get("optimized_prompt_uri"):
            job["optimized_prompt_uri"] = result["optimized_prompt_uri"]
    error = job_store.job_json(item)["error_message"]
    if status in (job_store.FAILED, job_store.TIMEOUT) and error is not None:
        state["error_message"] = error
    return job


def get(job_id: str) -> dict[str, Any]:
    item = job_store.get(job_id)
    job = job_json(item)
    try:
        _add_scores(job, item)
    except MlflowError:
        pass  # MLflow logs the run's absence at debug level and answers the job
    return {"job": job}


def _add_scores(job: dict[str, Any], item: dict[str, Any]) -> None:
    """The run's score metrics, and the share of ``max_metric_calls`` spent as ``state.metadata.progress``."""
    metrics = run_store.get_run(job.get("run_id", "")).get("data", {}).get("metrics", [])
    total_calls = None
    for metric in metrics:
        key, value = metric["key"], metric["value"]
        if key == "total_metric_calls":
            total_calls = value
        elif found := _SCORE.match(key):
            field = f"{found.group(1)}_eval_scores"
            job.setdefault(field, {})[found.group(2) or "aggregate"] = value
    if total_calls is not None:
        max_calls = (json.loads(item["params"]).get("optimizer_config") or {}).get("max_metric_calls")
        if max_calls:
            job["state"].setdefault("metadata", {})["progress"] = str(round(min(total_calls / max_calls, 1.0), 2))


def search(experiment_id: str) -> dict[str, Any]:
    jobs = [job_json(item) for item in job_store.search(JOB_NAME, None, {"experiment_id": experiment_id})]
    return {"jobs": jobs} if jobs else {}


def cancel(job_id: str) -> dict[str, Any]:
    job = job_json(job_store.cancel(job_id))
    job["state"]["status"] = "JOB_STATUS_CANCELED"
    if job.get("run_id"):
        try:
            run = run_store.get_active_run_item(job["run_id"])
            lifecycle.write_run_changes(run, {"status": "KILLED", "end_time": clock.now_millis()})
        except MlflowError:
            pass  # MLflow logs a warning when the run is gone or no longer active, and answers the job
    return {"job": job}


def delete(job_id: str) -> dict[str, Any]:
    """``_delete_prompt_optimization_job``: the job goes only once finished (the job store's ``delete_jobs``
    keeps the others), its run in any case."""
    job = job_json(job_store.get(job_id))
    job_store.delete_finalized(job_id)
    if job.get("run_id"):
        try:
            lifecycle.delete_run({"run_id": job["run_id"]})
        except MlflowError:
            pass
    return {}
