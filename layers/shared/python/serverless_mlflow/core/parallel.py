"""Independent I/O calls in parallel: a Lambda waits on DynamoDB latency, not on CPU."""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

DEFAULT_WORKERS = 8
_In = TypeVar("_In")
_Out = TypeVar("_Out")


def parallel_map(fn: Callable[[_In], _Out], inputs: Sequence[_In], workers: int = DEFAULT_WORKERS) -> list[_Out]:
    """``[fn(x) for x in inputs]``, at most ``workers`` at a time, results in input order.

    The first exception (in input order) propagates: calls not yet started are cancelled and running ones
    end first, so no call outlives the request. One input (or none) runs inline: no thread for one read.

    Each call runs in a copy of the caller's context, so request-scoped context variables (the request's
    workspace) hold in the worker threads too; a copy per call, as one context cannot be entered by two
    threads at once.
    """
    if len(inputs) <= 1:
        return [fn(value) for value in inputs]
    caller = contextvars.copy_context()
    with ThreadPoolExecutor(max_workers=min(workers, len(inputs))) as pool:
        return list(pool.map(lambda value: caller.copy().run(fn, value), inputs))
