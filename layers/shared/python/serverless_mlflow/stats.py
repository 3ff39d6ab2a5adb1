"""Request counters (DynamoDB and S3 work per operation), read by the benchmarks."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Stats:
    """Counts DynamoDB work; read by the benchmarks and logged as metrics."""

    requests: dict[str, int] = field(default_factory=dict)
    items_read: int = 0
    items_written: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def record(self, operation: str, read: int = 0, written: int = 0) -> None:
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
