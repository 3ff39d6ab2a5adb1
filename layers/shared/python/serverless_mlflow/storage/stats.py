"""Request counters (DynamoDB and S3 work per operation), read by the benchmarks."""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

# Set in the local runtime's background workers (webhook events and deliveries): deployed, they are other
# functions' invocations, so their work must not blur the per-request figures a test or benchmark reads.
_uncounted: contextvars.ContextVar[bool] = contextvars.ContextVar("stats_uncounted", default=False)


@contextmanager
def uncounted() -> Iterator[None]:
    token = _uncounted.set(True)
    try:
        yield
    finally:
        _uncounted.reset(token)


@dataclass
class Stats:
    """Counts DynamoDB work; read by the benchmarks and logged as metrics."""

    requests: dict[str, int] = field(default_factory=dict)
    items_read: int = 0
    items_written: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def record(self, operation: str, read: int = 0, written: int = 0) -> None:
        if _uncounted.get():
            return
        with self._lock:
            self.requests[operation] = self.requests.get(operation, 0) + 1
            self.items_read += read
            self.items_written += written

    def reset(self) -> None:
        with self._lock:
            self.requests = {}
            self.items_read = 0
            self.items_written = 0

    def snapshot(self) -> dict[str, Any]:
        with self._lock:
            return {"requests": dict(self.requests), "items_read": self.items_read, "items_written": self.items_written}
