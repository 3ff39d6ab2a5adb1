"""How long the request being served may keep retrying DynamoDB.

A throttled write is retried (botocore's attempts, a cancelled transaction's, unprocessed batch items'), but an
API function ends at 29 s (API Gateway's integration limit is the same): a retry that cannot finish in time
turns the 429 the client would retry into a gateway timeout it cannot tell from a lost write. So a request binds
a deadline from its Lambda context's remaining time (the local runtime's context counts down the same 29 s),
minus what answering takes, and every retry first asks ``allows(delay)``: is there time to sleep ``delay`` and
make one more attempt? Outside a request (the indexer, the job worker, scripts) there is no deadline and the
retry counts alone bound the waiting.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

# Kept back from the function's remaining time: logging and answering the 429, and Lambda's own overhead.
ANSWER_RESERVE_SECONDS = 1.0
# What one more DynamoDB attempt may take (a throttled answer comes in milliseconds; a slow one in hundreds).
ATTEMPT_SECONDS = 1.0

_deadline: ContextVar[float | None] = ContextVar("dynamodb_retry_deadline", default=None)


@contextmanager
def bound(context: Any) -> Iterator[None]:
    """Serve the code inside with retries bounded by ``context``'s remaining time (a Lambda context; anything
    without ``get_remaining_time_in_millis`` leaves retries unbounded)."""
    remaining = getattr(context, "get_remaining_time_in_millis", None)
    if remaining is None:
        yield
        return
    token = _deadline.set(time.monotonic() + remaining() / 1000 - ANSWER_RESERVE_SECONDS)
    try:
        yield
    finally:
        _deadline.reset(token)


def remaining_seconds() -> float | None:
    """Seconds left for retrying in the current request; None when unbounded."""
    deadline = _deadline.get()
    return None if deadline is None else deadline - time.monotonic()


def allows(delay: float, attempt_seconds: float = ATTEMPT_SECONDS) -> bool:
    """Whether sleeping ``delay`` seconds still leaves time for one more attempt (of ``attempt_seconds`` at most)
    before the deadline."""
    left = remaining_seconds()
    return left is None or left >= delay + attempt_seconds
