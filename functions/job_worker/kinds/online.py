"""Online scoring (``run_online_trace_scorer``, submitted by the monitor's tick): MLflow's own processors, unchanged,
against this server's API as the job's creator.

``OnlineTraceScoringProcessor`` reads the experiment's traces since its checkpoint (excluding evaluation runs'
traces), samples each per scorer at the scorer's rate and filter (MLflow's dense, deterministic sampling), judges,
logs the assessments and moves the checkpoint; ``OnlineSessionScoringProcessor`` does the same for completed
sessions with the session-level scorers. Each runs only when it has scorers (MLflow submits one job per level).

A judge that fails does not fail the processor: MLflow logs the failure as an error assessment on the trace (the
trace itself is never changed) and moves on. So that the failure is visible on the job too, the assessments logged
during the run are counted and the job fails, naming the first error, when any carries one; the checkpoint has moved
by then, as in MLflow, so the next pass does not judge those traces again.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from ..credentials import as_creator
from ..runner import JobRun
from .scorers import _server_store


@dataclass
class _Outcome:
    traces: set[str] = field(default_factory=set)
    assessments: int = 0
    failures: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def record(self, trace: Any, assessments: list[Any]) -> None:
        with self.lock:
            self.traces.add(trace.info.trace_id)
            self.assessments += len(assessments)
            for assessment in assessments:
                error = getattr(assessment, "error", None)
                if error is not None:
                    message = getattr(error, "error_message", None) or str(error)
                    self.failures.append(f"{assessment.name} on {trace.info.trace_id}: {message}")


@contextmanager
def _counted(outcome: _Outcome) -> Iterator[None]:
    """MLflow's processors log through the harness's ``_log_assessments`` (imported at call time): counted here."""
    from mlflow.genai.evaluation import harness

    original = harness._log_assessments

    def log_assessments(trace: Any, assessments: list[Any], run_id: str | None = None) -> None:
        original(trace=trace, assessments=assessments, run_id=run_id)
        outcome.record(trace, assessments)

    harness._log_assessments = log_assessments
    try:
        yield
    finally:
        harness._log_assessments = original


def _by_level(online_scorers: list[dict[str, Any]]) -> tuple[list[Any], list[Any]]:
    """(trace-level, session-level) ``OnlineScorer``s; one that does not load is skipped, as MLflow's scheduler does."""
    from mlflow.genai.scorers.base import Scorer
    from mlflow.genai.scorers.online import OnlineScorer, OnlineScoringConfig

    trace_level, session_level = [], []
    for entry in online_scorers:
        scorer = OnlineScorer(
            name=entry["name"],
            serialized_scorer=entry["serialized_scorer"],
            online_config=OnlineScoringConfig(**entry["online_config"]),
            scorer_version=entry.get("scorer_version"),
        )
        try:
            loaded = Scorer.model_validate_json(scorer.serialized_scorer)
        except Exception:
            continue
        (session_level if loaded.is_session_level_scorer else trace_level).append(scorer)
    return trace_level, session_level


def run_online_scorers(params: dict[str, Any], run: JobRun) -> dict[str, Any]:
    from mlflow.genai.scorers import job as scorer_job
    from mlflow.genai.scorers.base import _job_executor_scorer_context
    from mlflow.genai.scorers.online import OnlineSessionScoringProcessor, OnlineTraceScoringProcessor

    experiment_id = params["experiment_id"]
    outcome = _Outcome()
    with as_creator(run), _server_store(scorer_job), _counted(outcome), _job_executor_scorer_context():
        run.check()
        store = scorer_job._get_tracking_store()
        trace_level, session_level = _by_level(params["online_scorers"])
        if trace_level:
            OnlineTraceScoringProcessor.create(experiment_id, trace_level, store).process_traces()
        if session_level:
            OnlineSessionScoringProcessor.create(experiment_id, session_level, store).process_sessions()
    if outcome.failures:
        raise RuntimeError(
            f"{len(outcome.failures)} of {outcome.assessments} judgments failed (logged as error assessments on their traces); "
            f"first: {outcome.failures[0]}"
        )
    return {"traces_scored": len(outcome.traces), "assessments_logged": outcome.assessments}
