"""What MLflow's UI-only invoke routes check before they hand work to a job (``scorer/invoke``,
``genai/evaluate/invoke``; server/handlers.py), without importing mlflow: the caller's trace ids bound to the
experiment, a registered scorer looked up by name and version, the trace batches of a scorer invocation, and the
job submitted with MLflow's job name and params (so ``search jobs`` by name finds it as with MLflow).
"""

from __future__ import annotations

import os
from typing import Any

from serverless_mlflow.core.errors import MlflowError, not_found
from serverless_mlflow.jobs import job_queue
from serverless_mlflow.storage import table
from serverless_mlflow.storage.schema import ENTITY
from serverless_mlflow.store import experiments as experiment_store
from serverless_mlflow.store import job_kinds
from serverless_mlflow.store import traces as trace_store

SCORER = ENTITY["scorer"]
SCORER_VERSION = ENTITY["scorer_version"]
INVOKE_SCORER = job_kinds.INVOKE_SCORER
INVOKE_GENAI_EVALUATE = job_kinds.INVOKE_GENAI_EVALUATE
# MLflow's MLFLOW_SERVER_SCORER_INVOKE_BATCH_SIZE (the same variable and default: traces per job).
DEFAULT_BATCH_SIZE = 100
# mlflow.tracing.constant.TraceMetadataKey.TRACE_SESSION
TRACE_SESSION = "mlflow.trace.session"


def check_traces_in_experiment(trace_ids: list[str], experiment_id: str) -> list[dict[str, Any]]:
    """``_validate_trace_ids_in_experiment``: a trace that exists in another experiment refuses the request (a
    missing one is left to fail in the job). Returns the info items found."""
    infos = trace_store.info_items(trace_ids)
    if any(str(info["experiment_id"]) != str(experiment_id) for info in infos):
        raise MlflowError("Not all requested traces could be accessed.", "PERMISSION_DENIED")
    return infos


def registered_scorer(experiment_id: str, name: str, version: int) -> dict[str, Any]:
    """``_get_registered_scorer`` (the store's ``get_scorer``): the version item of the scorer named exactly
    ``name``, or MLflow's 404 texts."""
    experiment_store.get_active_experiment_meta(experiment_id)
    normalized = str(experiment_store.normalize_experiment_id(experiment_id))
    item = table.get(SCORER_VERSION.key(experiment_id=normalized, name=name, version=version)) if _fits(name) else None
    if item is not None:
        return item
    if not _fits(name) or table.get(SCORER.key(experiment_id=normalized, name=name)) is None:
        raise not_found(f"Scorer with name '{name}' not found for experiment {experiment_id}.")
    raise not_found(f"Scorer with name '{name}' and version {version} not found for experiment {experiment_id}.")


def _fits(name: str) -> bool:
    return 0 < len(name.encode("utf-8")) <= 1000  # longer names were never registered (DynamoDB's key size)


def trace_batches(trace_ids: list[str], scorer: dict[str, Any], infos: list[dict[str, Any]]) -> list[list[str]]:
    """``get_trace_batches_for_scorer``: a session-level scorer gets one batch per session (traces without a
    session skipped, each session in trace time order, missing times last); any other scorer fixed-size batches.
    Whether a scorer is session-level is what its serialized form says (``is_session_level_scorer``: MLflow's
    serializer writes the scorer's own property there)."""
    if scorer.get("is_session_level_scorer") is True:
        by_id = {str(info["trace_id"]): info for info in infos}
        sessions: dict[str, list[str]] = {}
        for trace_id in trace_ids:
            info = by_id.get(trace_id)
            session = (info.get("trace_metadata") or {}).get(TRACE_SESSION) if info else None
            if session:
                sessions.setdefault(session, []).append(trace_id)
        times = {trace_id: info.get("request_time") for trace_id, info in by_id.items()}
        return [sorted(ids, key=lambda t: times.get(t) or float("inf")) for ids in sessions.values()]
    size = int(os.environ.get("MLFLOW_SERVER_SCORER_INVOKE_BATCH_SIZE") or DEFAULT_BATCH_SIZE)
    return [trace_ids[i : i + size] for i in range(0, len(trace_ids), size)]


def submit(job_name: str, params: dict[str, Any], creator: str | None) -> dict[str, Any]:
    return job_queue.create_and_submit(job_name, params, None, creator)
