"""The layer's one parallel map: input order kept, workers bounded, the first failure raised."""

from __future__ import annotations

import threading
import time

import pytest

from serverless_mlflow.core.parallel import parallel_map


def test_results_keep_input_order_whatever_finishes_first() -> None:
    def slow_for_small(value: int) -> int:
        time.sleep(0.002 * (10 - value))
        return value * value

    assert parallel_map(slow_for_small, list(range(10))) == [v * v for v in range(10)]


def test_no_more_than_the_given_workers_run_at_once() -> None:
    """Each call waits until three run together (so three do, however slow the machine), and never more do."""
    running = 0
    peak = 0
    lock = threading.Lock()
    together = threading.Barrier(3, timeout=60)

    def call(_: int) -> None:
        nonlocal running, peak
        with lock:
            running += 1
            peak = max(peak, running)
        together.wait()
        with lock:
            running -= 1

    parallel_map(call, list(range(12)), workers=3)
    assert peak == 3


def test_the_first_failure_in_input_order_propagates() -> None:
    def call(value: int) -> int:
        if value in (2, 5):
            raise ValueError(f"bad {value}")
        return value

    with pytest.raises(ValueError, match="bad 2"):
        parallel_map(call, list(range(8)), workers=4)


def test_one_input_runs_in_the_calling_thread() -> None:
    assert parallel_map(lambda _: threading.current_thread(), [0]) == [threading.current_thread()]
    assert parallel_map(lambda _: 1, []) == []


def test_calls_see_the_callers_request_context() -> None:
    """Worker threads serve the caller's request: its workspace (a context variable) holds in every call."""
    from serverless_mlflow.request import workspace

    def seen(_: int) -> str:
        time.sleep(0.01)
        return workspace.current()

    with workspace.bound("team-a"):
        assert parallel_map(seen, list(range(6)), workers=3) == ["team-a"] * 6
    assert parallel_map(seen, list(range(2))) == ["default"] * 2
