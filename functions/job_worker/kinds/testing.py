"""Small jobs that exercise the runner (served with JOB_TEST_KINDS=true): they touch nothing but their job, except
``as_creator``, which calls the API with its creator's rights."""

from __future__ import annotations

import time
from typing import Any

from .. import credentials
from ..runner import JobRun, Suspend, TransientJobError


def echo(params: dict[str, Any], run: JobRun) -> Any:
    return {"echo": params}


def fail(params: dict[str, Any], run: JobRun) -> Any:
    raise ValueError(params.get("message", "the job failed"))


def transient(params: dict[str, Any], run: JobRun) -> Any:
    """Fails transiently until its retry count reaches ``succeed_after`` (never, when absent)."""
    succeed_after = params.get("succeed_after")
    if succeed_after is not None and int(run.item.get("retry_count") or 0) >= int(succeed_after):
        return {"retries": int(run.item.get("retry_count") or 0)}
    raise TransientJobError("a transient failure")


def steps(params: dict[str, Any], run: JobRun) -> Any:
    """``count`` steps of ``seconds`` each, checkpointing after every step; hands over when time runs short."""
    state = run.checkpoint or {"done": 0, "invocations": 0}
    state["invocations"] += 1
    count, seconds = int(params.get("count", 3)), float(params.get("seconds", 0.5))
    while state["done"] < count:
        run.check()
        if not run.time_left():
            raise Suspend(state)
        time.sleep(seconds)
        state["done"] += 1
        run.progress("steps", state["done"], count, "steps")
    return state


def as_creator(params: dict[str, Any], run: JobRun) -> Any:
    """Calls the API as the job's creator: creates an experiment with the stock client, then tries an admin-only
    route (creating a user). Answers the experiment's id and the status the admin-only call got."""
    import os

    import mlflow
    import requests

    with credentials.as_creator(run):
        url = os.environ["JOB_SERVER_URL"]
        experiment_id = mlflow.MlflowClient(url).create_experiment(params["experiment_name"])
        auth = (os.environ["MLFLOW_TRACKING_USERNAME"], os.environ["MLFLOW_TRACKING_PASSWORD"]) if run.token else None
        admin_only = requests.post(
            f"{url}/api/2.0/mlflow/users/create", json={"username": params["experiment_name"], "password": "x" * 16}, auth=auth, timeout=60
        )
    return {"experiment_id": experiment_id, "admin_only_status": admin_only.status_code}
