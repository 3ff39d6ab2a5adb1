"""The monitor: MLflow's periodic tasks, on a schedule (EventBridge Scheduler, every minute; ``make serve``: a timer
in ``local/monitor.py``). Online scoring and scheduled issue detection: it decides what is due and submits jobs to
the jobs queue; the job worker does the judging (``serverless_mlflow.jobs.online_scoring``) and the detection
(``serverless_mlflow.jobs.issue_detection_dispatch``). Trace archival: the pass itself
(``serverless_mlflow.store.trace_archival``), when server-level archival is on. Not on a request path."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger

from serverless_mlflow.jobs import issue_detection_dispatch, online_scoring
from serverless_mlflow.store import trace_archival

logger = Logger(service="monitor")
ARCHIVAL_RESERVE_SECONDS = 15.0


@logger.inject_lambda_context
def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    submitted = online_scoring.run_scheduler()
    if submitted:
        logger.info("online scoring jobs submitted", extra={"job_ids": submitted})
    detections = issue_detection_dispatch.run_scheduler()
    if detections:
        logger.info("scheduled issue detection jobs submitted", extra={"job_ids": detections})
    # Traces are started only while a trace's archival (S3 write, flip, deletes) still fits the function's time.
    archived = trace_archival.run_pass(seconds=context.get_remaining_time_in_millis() / 1000 - ARCHIVAL_RESERVE_SECONDS)
    if archived:
        logger.info("traces archived", extra={"archived": archived})
    return {"online_scoring_jobs": submitted, "issue_detection_jobs": detections, "archived_traces": archived}
