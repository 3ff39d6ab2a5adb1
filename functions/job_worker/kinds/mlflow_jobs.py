"""MLflow's own job functions, run as MLflow's job runner runs them: the function MLflow submits, called with the
params it submitted, its stock client pointed at this server's API (``JOB_SERVER_URL``) as the job's creator.

* ``optimize_prompts``: ``mlflow.genai.optimize.job.optimize_prompts_job`` (prompt-optimization jobs). It resumes
  the run the create route made, loads the prompt and optimizes it with the optimizer named; it needs MLflow's
  GenAI extras (``litellm``, and ``gepa`` for GEPA), which the deployed package carries. Without them (``make
  serve``) it fails with MLflow's own error, as MLflow's server does when they are not installed.
* ``invoke_issue_detection``: ``mlflow.genai.discovery.job.invoke_issue_detection_job`` (``issues/invoke``).
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from serverless_mlflow.store import jobs as store

from ..client_uri import pointed_at_server
from ..credentials import as_creator
from ..runner import JobRun


def optimize_prompts(params: dict[str, Any], run: JobRun) -> Any:
    with as_creator(run), _traces_flushed(), _tracked(run), pointed_at_server():
        from mlflow.genai.optimize.job import optimize_prompts_job

        return optimize_prompts_job(**params)


def invoke_issue_detection(params: dict[str, Any], run: JobRun) -> Any:
    with as_creator(run), _traces_flushed(), _tracked(run), pointed_at_server():
        from mlflow.genai.discovery.job import invoke_issue_detection_job

        return invoke_issue_detection_job(**_accepted(invoke_issue_detection_job, params))


# The job whose function runs in this context: MLflow's tracker is process-wide (one job per subprocess there),
# while here the local runtime's worker threads run several jobs in one process.
_CURRENT_JOB: ContextVar[str | None] = ContextVar("mlflow_job_id", default=None)


class _Tracker:
    """MLflow's ``JobTracker`` for this worker: the stages and progress MLflow's job functions report
    (``update_status_details``: issue detection's "Identifying issues from traces...") land on the job's item, as
    MLflow's runner writes them to its job store. Calls from the functions' own pool threads carry no job and are
    dropped (MLflow's functions report from their main thread)."""

    def update(self, status_details: dict[str, Any]) -> None:
        if (job_id := _CURRENT_JOB.get()) is not None:
            store.merge_status_details(job_id, status_details)

    def update_job_progress(self, message: str | None = None, progress: Any = None) -> None:
        if (job_id := _CURRENT_JOB.get()) is not None and (message is not None or progress is not None):
            store.report_progress(job_id, progress.to_dict() if progress is not None else None, message)


_TRACKER = _Tracker()


@contextmanager
def _tracked(run: JobRun) -> Iterator[None]:
    from mlflow.server.jobs import progress

    progress._set_job_tracker(_TRACKER)  # the same object for every job: idempotent across threads
    token = _CURRENT_JOB.set(run.job_id)
    try:
        yield
    finally:
        _CURRENT_JOB.reset(token)


@contextmanager
def _traces_flushed() -> Iterator[None]:
    """MLflow's job functions trace their LLM calls (evaluation, reflection, discovery), and the client exports
    traces in a background queue: send them before the invocation returns, while the creator's credentials still
    apply, because Lambda freezes the environment once the handler answers."""
    try:
        yield
    finally:
        import mlflow

        mlflow.flush_trace_async_logging()


def _accepted(function: Any, params: dict[str, Any]) -> dict[str, Any]:
    """The params the installed MLflow's function takes: MLflow 3.18 submits ``instructions``, which the pinned
    MLflow's (3.17) ``invoke_issue_detection_job`` does not take yet."""
    accepted = inspect.signature(function).parameters
    return {name: value for name, value in params.items() if name in accepted}
