"""The deployed monitor's schedule, on a laptop: a timer thread invokes the ``monitor`` function every
``MONITOR_INTERVAL_SECONDS`` (60, EventBridge Scheduler's rate in the stack) with its role, as the schedule does.
``tick`` is one invocation, for tests that decide when a pass happens."""

from __future__ import annotations

import logging
import os
import threading
from typing import Any

from local import iam
from local.events import LambdaContext
from serverless_mlflow.storage import stats

log = logging.getLogger("serverless_mlflow.local")

FUNCTION = "monitor"
DEFAULT_INTERVAL_SECONDS = 60.0


class LocalMonitor:
    def __init__(self, handler_for: Any) -> None:
        self.handler_for = handler_for
        self._stopping = threading.Event()

    @staticmethod
    def interval() -> float:
        return float(os.environ.get("MONITOR_INTERVAL_SECONDS") or DEFAULT_INTERVAL_SECONDS)

    def start(self) -> None:
        threading.Thread(target=self._run, daemon=True, name="monitor-schedule").start()

    def stop(self) -> None:
        self._stopping.set()

    def tick(self) -> dict[str, Any]:
        with iam.acting_as(FUNCTION):
            return self.handler_for(FUNCTION)({"source": "aws.scheduler"}, LambdaContext(FUNCTION, 60))

    def _run(self) -> None:
        with stats.uncounted():
            while not self._stopping.wait(self.interval()):
                try:
                    self.tick()
                except Exception:
                    log.exception("monitor pass failed; the next one runs on schedule")
