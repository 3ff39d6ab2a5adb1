"""The monitor: MLflow's periodic online-scoring dispatcher, on a schedule (EventBridge Scheduler, every minute;
``make serve``: a timer in ``local/monitor.py``). It decides what is due and submits jobs to the jobs queue; the
job worker does the judging (``serverless_mlflow.online_scoring``) and the scheduled issue detection
(``serverless_mlflow.issue_detection_dispatch``). Not on a request path: no API event."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger

from serverless_mlflow import issue_detection_dispatch, online_scoring

logger = Logger(service="monitor")


@logger.inject_lambda_context
def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    submitted = online_scoring.run_scheduler()
    if submitted:
        logger.info("online scoring jobs submitted", extra={"job_ids": submitted})
    detections = issue_detection_dispatch.run_scheduler()
    if detections:
        logger.info("scheduled issue detection jobs submitted", extra={"job_ids": detections})
    return {"online_scoring_jobs": submitted, "issue_detection_jobs": detections}
