"""Throttling injected into a ``python -m local`` runtime for ``tools/trace_load_bench.py``'s storm phase.

On ``PYTHONPATH`` this module loads at interpreter start. While the file named by ``TRACE_LOAD_THROTTLE_FILE``
exists and holds a rate (0..1), that share of the DynamoDB calls made on request threads (not the indexer's)
fail as DynamoDB's ``ThrottlingException`` after botocore's retries would: the handlers must answer 429, which
MLflow's client retries, and lose nothing. Each injection adds a line to ``<file>.count``.
"""

from __future__ import annotations

import os
import random
import threading
import time

_FILE = os.environ.get("TRACE_LOAD_THROTTLE_FILE")


def _install() -> None:
    from botocore.client import BaseClient
    from botocore.exceptions import ClientError

    original = BaseClient._make_api_call
    state = {"rate": 0.0, "read_at": 0.0}
    lock = threading.Lock()

    def rate() -> float:
        now = time.monotonic()
        if now - state["read_at"] > 0.5:
            try:
                with open(_FILE) as handle:  # type: ignore[arg-type]
                    state["rate"] = float(handle.read().strip() or 0)
            except (OSError, ValueError):
                state["rate"] = 0.0
            state["read_at"] = now
        return state["rate"]

    def make_api_call(self, operation_name, api_params):  # type: ignore[no-untyped-def]
        if "process_request" in threading.current_thread().name and self.meta.service_model.service_name == "dynamodb":
            if random.random() < rate():
                with lock, open(f"{_FILE}.count", "a") as handle:
                    handle.write("1\n")
                error = {"Error": {"Code": "ThrottlingException", "Message": "Rate of requests exceeds the allowed throughput."}}
                raise ClientError(error, operation_name)
        return original(self, operation_name, api_params)

    BaseClient._make_api_call = make_api_call


if _FILE:
    _install()
