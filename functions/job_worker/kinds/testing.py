"""Small jobs that exercise the runner (served with JOB_TEST_KINDS=true): they touch nothing but their job."""

from __future__ import annotations

import time
from typing import Any

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
