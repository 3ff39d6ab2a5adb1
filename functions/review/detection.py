"""``POST /ajax-api/3.0/mlflow/issues/invoke`` (MLflow 3.18's ``_invoke_issue_detection_handler``): issue detection
over chosen traces, as a job of MLflow's ``invoke_issue_detection`` with MLflow's params.

As MLflow's handler: the request is checked (traces chosen; an AI Gateway endpoint or a provider and model; a
credential for the provider), every named trace that exists must be in the request's experiment, and one detection
at a time runs per experiment. The run is created up front with MLflow's tags and the job's id, and left RUNNING
(with an end time, as ``mlflow.end_run("RUNNING")`` leaves it); the job worker runs MLflow's own job function.
"""

from __future__ import annotations

import os
import uuid
from typing import Any

from serverless_mlflow.core import clock
from serverless_mlflow.core.errors import MlflowError, invalid
from serverless_mlflow.jobs import job_queue
from serverless_mlflow.jobs.issue_detection_dispatch import ISSUE_DETECTION, RUN_TYPE_TAG, in_flight_detection_run
from serverless_mlflow.request import Message, array, item_type_string, required, string
from serverless_mlflow.store import job_kinds
from serverless_mlflow.store import runs as run_store
from serverless_mlflow.store import traces as trace_store
from serverless_mlflow.store.run_writes import create_run, write_run_changes

MESSAGE = Message(
    None,
    {
        "experiment_id": [required, string],
        "trace_ids": [required, array, item_type_string],
        "categories": [required, array],
        "instructions": [string],
        "provider": [required, string],
        "model": [string],
        "secret_id": [string],
        "endpoint_name": [string],
    },
)

# mlflow.utils.tags: the job that fills the run.
JOB_ID_TAG = "mlflow.issueDetection.jobId"
# mlflow.utils.providers._CORE_PROVIDER_ENV_VARS: the variables each core provider reads its credential from.
PROVIDER_CREDENTIALS: dict[str, list[str]] = {
    "openai": ["OPENAI_API_KEY"],
    "azure": ["AZURE_API_KEY"],
    "anthropic": ["ANTHROPIC_API_KEY"],
    "gemini": ["GEMINI_API_KEY"],
    "mistral": ["MISTRAL_API_KEY"],
    "groq": ["GROQ_API_KEY"],
    "deepseek": ["DEEPSEEK_API_KEY"],
    "xai": ["XAI_API_KEY"],
    "openrouter": ["OPENROUTER_API_KEY"],
    "togetherai": ["TOGETHERAI_API_KEY"],
    "typesafe": ["TYPESAFE_API_KEY"],
    "bedrock": ["AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"],
}


def invoke(request: dict[str, Any], user: str | None) -> dict[str, Any]:
    """``request``: the body as ``MESSAGE`` checked it."""
    experiment_id = request["experiment_id"]
    trace_ids = list(dict.fromkeys(request.get("trace_ids", [])))
    categories = request.get("categories", [])
    instructions, provider, model = request.get("instructions"), request.get("provider"), request.get("model")
    secret_id, endpoint_name = request.get("secret_id"), request.get("endpoint_name")
    provider_name = provider.lower() if provider else provider
    if not trace_ids:
        raise invalid("Please select at least one trace to analyze.")
    if not endpoint_name and not (provider and model):
        # MLflow answers this with a 500 (no error code); refused input is a 400 here.
        raise invalid("Either 'endpoint_name' or both 'provider' and 'model' must be provided")
    if secret_id:
        # MLflow decrypts the secret into the job's environment; jobs here carry no per-job credentials.
        raise invalid(
            "Issue detection with a saved API key ('secret_id') is not supported by this server: "
            "choose an AI Gateway endpoint ('endpoint_name'), or set the provider's key on the job worker."
        )
    if not endpoint_name:
        env_vars = PROVIDER_CREDENTIALS.get(provider_name or "")
        if not env_vars:
            raise invalid(f"Unsupported provider '{provider}'. Choose a supported provider or AI Gateway endpoint.")
        if not any(os.environ.get(name) for name in env_vars):
            hint = env_vars[0] if len(env_vars) == 1 else f"one of {', '.join(env_vars)}"
            raise invalid(
                f"No API key available for provider '{provider}'. Save an API key in AI Gateway, or set {hint} on the MLflow server."
            )
    _traces_in_experiment(trace_ids, experiment_id)
    if in_flight := in_flight_detection_run(experiment_id):
        raise MlflowError(
            f"Issue detection is already running for this experiment (run {in_flight}). "
            "Wait for it to finish, or cancel it, before starting another.",
            "RESOURCE_ALREADY_EXISTS",
        )
    model_name = f"gateway:/{endpoint_name}" if endpoint_name else f"{provider_name}:/{model}"
    job_id = str(uuid.uuid4())
    tags = {
        RUN_TYPE_TAG: ISSUE_DETECTION,
        "categories": ",".join(str(category) for category in categories),
        "model": model_name,
        "total_traces": str(len(trace_ids)),
        **({"endpoint_name": endpoint_name} if endpoint_name else {}),
        # mlflow.start_run's context tag for the user (the server process's); the caller here.
        "mlflow.user": user or "unknown",
        JOB_ID_TAG: job_id,
    }
    run = create_run(
        {
            "experiment_id": experiment_id,
            "user_id": user or "unknown",
            "start_time": clock.now_millis(),
            "tags": [{"key": key, "value": value} for key, value in tags.items()],
        }
    )["run"]
    run_id = run["info"]["run_id"]
    params = {
        "experiment_id": experiment_id,
        "trace_ids": trace_ids,
        "categories": categories,
        "run_id": run_id,
        "model": model_name,
        "instructions": instructions,
    }
    job_queue.create_and_submit(job_kinds.INVOKE_ISSUE_DETECTION, params, None, user, job_id=job_id)
    try:
        write_run_changes(run_store.get_active_run_item(run_id), {"status": "RUNNING", "end_time": clock.now_millis()})
    except MlflowError:
        pass  # the job ended the run first
    return {"job_id": job_id, "run_id": run_id}


def _traces_in_experiment(trace_ids: list[str], experiment_id: str) -> None:
    """``_validate_trace_ids_in_experiment``: a trace of another experiment refuses the request; missing traces
    are left to the job."""
    for item in trace_store.info_items(trace_ids):
        if str(item["experiment_id"]) != str(experiment_id):
            raise MlflowError("Not all requested traces could be accessed.", "PERMISSION_DENIED")
