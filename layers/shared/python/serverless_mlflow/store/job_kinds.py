"""The job names this server runs (the jobs API refuses others with MLflow's "Invalid job name").

Read by the request path without importing the worker: each name maps to ``module:function`` in the job
worker's package (``functions/job_worker``). MLflow's own job functions run under MLflow's job names, with MLflow's
params (``invoke_scorer``, ``invoke_genai_evaluate``, ``optimize_prompts``, ``invoke_issue_detection``), submitted
by the routes that MLflow answers with them: the jobs API's search finds them as MLflow's does.
"""

from __future__ import annotations

import os

DEMO_GENERATE = "demo_generate"
DEMO_DELETE = "demo_delete"
OPTIMIZE_PROMPTS = "optimize_prompts"
INVOKE_ISSUE_DETECTION = "invoke_issue_detection"
INVOKE_SCORER = "invoke_scorer"
INVOKE_GENAI_EVALUATE = "invoke_genai_evaluate"
# Online scoring (MLflow's job name), submitted by the monitor's tick (serverless_mlflow.jobs.online_scoring).
RUN_ONLINE_TRACE_SCORER = "run_online_trace_scorer"
# Scheduled issue detection (MLflow 3.18's job name), submitted by the monitor's tick (issue_detection_dispatch).
SCHEDULED_ISSUE_DETECTION = "scheduled_issue_detection"

KINDS: dict[str, str] = {
    DEMO_GENERATE: "job_worker.kinds.demo:generate",
    DEMO_DELETE: "job_worker.kinds.demo:delete",
    OPTIMIZE_PROMPTS: "job_worker.kinds.mlflow_jobs:optimize_prompts",
    INVOKE_ISSUE_DETECTION: "job_worker.kinds.mlflow_jobs:invoke_issue_detection",
    INVOKE_SCORER: "job_worker.kinds.scorers:invoke_scorer",
    INVOKE_GENAI_EVALUATE: "job_worker.kinds.scorers:invoke_genai_evaluate",
    RUN_ONLINE_TRACE_SCORER: "job_worker.kinds.online:run_online_scorers",
    SCHEDULED_ISSUE_DETECTION: "job_worker.kinds.issue_schedule:run_scheduled",
}

# Small jobs that exercise the runner (succeed, fail, fail transiently, continue across invocations). Served only
# when the operator (or a test) sets JOB_TEST_KINDS=true, as MLflow's tests extend its allowed job names.
TEST_KINDS: dict[str, str] = {
    "test_echo": "job_worker.kinds.testing:echo",
    "test_fail": "job_worker.kinds.testing:fail",
    "test_transient": "job_worker.kinds.testing:transient",
    "test_steps": "job_worker.kinds.testing:steps",
    "test_as_creator": "job_worker.kinds.testing:as_creator",
}


def target(job_name: str) -> str | None:
    """``module:function`` of a job name this server runs, or None."""
    if job_name in KINDS:
        return KINDS[job_name]
    if os.environ.get("JOB_TEST_KINDS", "").lower() == "true":
        return TEST_KINDS.get(job_name)
    return None
