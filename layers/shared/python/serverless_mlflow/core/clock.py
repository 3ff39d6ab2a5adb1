"""The one wall clock every feature stamps times with (MLflow's unit: epoch milliseconds).

Callers read it as ``clock.now_millis()`` (not a from-import), so a test freezes every feature's time at once
with ``monkeypatch.setattr(clock, "now_millis", ...)``. Monotonic timers (deadlines, caches) are not wall
time and stay ``time.monotonic``.
"""

from __future__ import annotations

import time


def now_millis() -> int:
    """Epoch milliseconds, as MLflow stores creation/update times."""
    return int(time.time() * 1000)


def now_seconds() -> float:
    """Epoch seconds, DynamoDB's TTL unit."""
    return time.time()
