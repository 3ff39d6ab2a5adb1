"""Scheduled issue detection (``scheduled_issue_detection``, submitted by the monitor's tick): MLflow 3.18's
``run_scheduled_issue_detection_job`` on the worker's MLflow 3.17, whose discovery pipeline (``discover_issues``,
``sample_traces``) it calls as 3.18's job does, against this server's API as the job's creator.

As in MLflow 3.18: the window's lower bound is raised to the experiment's watermark as it stands now (another
occurrence may have covered it while this one waited); every occurrence records a run (tagged as scheduled, with its
window and this job's id), over zero traces when the window held none or none matched the schedule's filter; the
watermark (``mlflow.issueDetection.checkpoint``) moves to the window's newest trace only once the run finished. A
failing detection tags the run with why (``mlflow.issueDetection.error``), ends it FAILED, and fails the job.

Differs from 3.18: the pinned 3.17 pipeline takes no free-text ``instructions`` (the saved priorities' categories
do apply), and reports no ``new_issue_count``.
"""

from __future__ import annotations

import json
from typing import Any

from serverless_mlflow.core import clock
from serverless_mlflow.store.issue_schedule_runs import CHECKPOINT_TAG, watermark

from ..client_uri import pointed_at_server
from ..credentials import as_creator
from ..runner import JobRun
from .mlflow_jobs import _traces_flushed, _tracked

# mlflow.genai.discovery (3.18): the default model, the sessions one occurrence samples, the run's tags.
DEFAULT_MODEL = "openai:/gpt-5-mini"
MAX_SCHEDULED_SESSION_SAMPLE_SIZE = 100
MAX_ERROR_TAG_LENGTH = 500
TAGS = {
    "run_type": "mlflow.runType",
    "job_id": "mlflow.issueDetection.jobId",
    "trigger": "mlflow.issueDetection.trigger",
    "window_start": "mlflow.issueDetection.windowStart",
    "window_end": "mlflow.issueDetection.windowEnd",
    "error": "mlflow.issueDetection.error",
}


def run_scheduled(params: dict[str, Any], run: JobRun) -> dict[str, Any]:
    with as_creator(run), _traces_flushed(), _tracked(run), pointed_at_server():
        return _occurrence(run.job_id, **params)


def _describe_failure(error: BaseException) -> str:
    message = str(error).strip()
    described = f"{type(error).__name__}: {message}" if message else type(error).__name__
    return described if len(described) <= MAX_ERROR_TAG_LENGTH else described[: MAX_ERROR_TAG_LENGTH - 1] + "\u2026"


def _create_run(
    client: Any, job_id: str, experiment_id: str, categories: list[str], model: str, total: int, window: tuple[int, int]
) -> str:
    tags = {
        TAGS["run_type"]: "issue_detection",
        TAGS["trigger"]: "schedule",
        "categories": ",".join(categories),
        "model": model,
        "total_traces": str(total),
        TAGS["window_start"]: str(window[0]),
        TAGS["window_end"]: str(window[1]),
        TAGS["job_id"]: job_id,
    }
    return client.create_run(experiment_id=experiment_id, tags=tags).info.run_id


def _quiet(client: Any, job_id: str, experiment_id: str, categories: list[str], model: str, window: tuple[int, int]) -> str:
    """``_record_quiet_occurrence``: a finished run over zero traces, so a quiet window is told from no run."""
    from mlflow.entities.run_status import RunStatus

    run_id = _create_run(client, job_id, experiment_id, categories, model, 0, window)
    client.set_tag(run_id, "total_cost_usd", 0.0)
    client.set_tag(run_id, "total_traces_analyzed", 0)
    client.set_terminated(run_id, RunStatus.to_string(RunStatus.FINISHED))
    return run_id


def _detect(client: Any, experiment_id: str, traces: list[Any], categories: list[str], run_id: str, model: str) -> dict[str, Any]:
    """``_detect_issues_into_run``: link, analyze, finish the run either way."""
    from mlflow.entities.run_status import RunStatus
    from mlflow.genai.discovery.pipeline import discover_issues
    from mlflow.store.tracking import MAX_TRACE_LINKS_PER_REQUEST

    trace_ids = [trace.info.trace_id for trace in traces]
    try:
        for start in range(0, len(trace_ids), MAX_TRACE_LINKS_PER_REQUEST):
            client.link_traces_to_run(trace_ids[start : start + MAX_TRACE_LINKS_PER_REQUEST], run_id)
        full = client._tracing_client.batch_get_traces(trace_ids)
        result = discover_issues(experiment_id=experiment_id, traces=full, model=model, run_id=run_id, categories=categories)
        client.set_terminated(run_id, RunStatus.to_string(RunStatus.FINISHED))
        client.set_tag(run_id, "total_cost_usd", result.total_cost_usd)
        client.set_tag(run_id, "total_traces_analyzed", result.total_traces_analyzed)
        return {
            "summary": result.summary,
            "issues": len(result.issues),
            "total_traces_analyzed": result.total_traces_analyzed,
            "total_cost_usd": result.total_cost_usd,
        }
    except Exception as error:
        try:
            client.set_tag(run_id, TAGS["error"], _describe_failure(error))
        finally:
            client.set_terminated(run_id, RunStatus.to_string(RunStatus.FAILED))
        raise


def _advance(client: Any, experiment_id: str, newest: Any, run_id: str) -> None:
    """``advance_checkpoint`` + ``write_detection_checkpoint``: the watermark at the window's newest trace."""
    checkpoint = {
        "version": 1,
        "lastScannedTraceTimeMs": newest.info.request_time,
        "lastScannedTraceId": newest.info.trace_id,
        "lastRunUuid": run_id,
        "updatedAtMs": clock.now_millis(),
    }
    client.set_experiment_tag(experiment_id, CHECKPOINT_TAG, json.dumps(checkpoint))


def _occurrence(
    job_id: str,
    experiment_id: str,
    window_lower_bound_ms: int,
    window_upper_bound_ms: int,
    categories: list[str],
    instructions: str | None = None,
    trace_filter: str = "",
    model: str | None = None,
) -> dict[str, Any]:
    import mlflow
    from mlflow.client import MlflowClient
    from mlflow.genai.discovery.sampling import sample_traces

    client = MlflowClient()
    covered = watermark(client.get_experiment(experiment_id).tags.get(CHECKPOINT_TAG))
    lower = max(window_lower_bound_ms, covered if covered is not None else window_lower_bound_ms)
    window = (lower, window_upper_bound_ms)
    model = model or DEFAULT_MODEL
    window_clause = f"timestamp_ms > {lower} AND timestamp_ms <= {window_upper_bound_ms}"
    # The window alone (not the schedule's clauses) decides how far the watermark moves.
    newest = mlflow.search_traces(
        experiment_ids=[experiment_id], filter_string=window_clause, order_by=["timestamp_ms DESC"], max_results=1, return_type="list"
    )
    if not newest:
        return {"traces_in_window": 0, "run_id": _quiet(client, job_id, experiment_id, categories, model, window)}
    filter_string = " AND ".join(filter(None, [window_clause, trace_filter]))
    traces = sample_traces(
        MAX_SCHEDULED_SESSION_SAMPLE_SIZE, search_kwargs={"experiment_ids": [experiment_id], "filter_string": filter_string}
    )
    if not traces:
        run_id = _quiet(client, job_id, experiment_id, categories, model, window)
        _advance(client, experiment_id, newest[0], run_id)
        return {"traces_in_window": 0, "run_id": run_id}
    run_id = _create_run(client, job_id, experiment_id, categories, model, len(traces), window)
    result = _detect(client, experiment_id, traces, categories, run_id, model)
    _advance(client, experiment_id, newest[0], run_id)
    return result | {"traces_in_window": len(traces), "run_id": run_id}
