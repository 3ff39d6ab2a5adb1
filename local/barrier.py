"""Sync mode's read barrier: a run's own writes answer before the indexer has their records, and every other
request waits for those records first.

A sync write used to wait for the indexer before it was answered, so that the next request saw the derived
items. A training loop sends a run's writes back to back (``create_run``, params, tags, ``log_batch`` after
``log_batch``, ``set_terminated``) and reads nothing derived between them: each paid a drain of its own, and
the indexer rebuilt the run's summary once per write. Deployed, the indexer is asynchronous anyway, and these
write paths are built to be right under any indexer lag (the run's flags keep searches off a stale summary;
the metric marker protocol orders metric passes). So the writes of ``DEFERRED_WRITES`` are answered at once and
their records are drained by whichever comes first: the next request not on the list (before it runs), or
the flush after a second without writes (the deployed mapping's batching window). A read after a write still sees every
derived item: only the moment the drain runs moves.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from local.writes import Invocation, Pending

# Run-scoped writes that read no derived item (POST; the /ajax-api/ spelling is the same route).
DEFERRED_WRITES = frozenset(
    f"/api/2.0/mlflow/runs/{action}" for action in ("create", "log-batch", "log-metric", "log-parameter", "set-tag", "delete-tag", "update")
)


def defers(method: str, raw_path: str) -> bool:
    """Whether this request's writes may wait for the next barrier instead of being drained before its answer."""
    if method.upper() != "POST":
        return False
    path = raw_path.rstrip("/")
    if path.startswith("/ajax-api/"):
        path = "/api/" + path[len("/ajax-api/") :]
    return path in DEFERRED_WRITES


class ReadBarrier:
    """The deferred writers whose records the indexer may not have yet; ``clear`` delivers them."""

    def __init__(self, pending: Pending, catch_up: Callable[[], None]) -> None:
        self._pending = pending
        self._catch_up = catch_up
        self._deferred: list[Invocation] = []
        self._last_deferred_at = 0.0
        self._lock = threading.Lock()
        # Held for a whole clear: a request arriving meanwhile waits for the records being delivered, even
        # though the list it would find is already empty.
        self._clearing = threading.Lock()

    def defer(self, invocation: Invocation) -> None:
        """An answered write whose records are still to be delivered (it stays open in ``Pending``)."""
        with self._lock:
            self._deferred.append(invocation)
            self._last_deferred_at = time.monotonic()

    def idle_for(self, seconds: float) -> bool:
        """Whether writes are deferred and none came in the last ``seconds`` (a training loop's writes keep
        sharing one drain while they keep coming)."""
        with self._lock:
            return bool(self._deferred) and time.monotonic() - self._last_deferred_at >= seconds

    def clear(self) -> None:
        """Until every deferred write's records are delivered (never failing: the drain logs its own errors)."""
        with self._clearing:
            with self._lock:
                batch, self._deferred = self._deferred, []
            if not batch:
                return
            try:
                self._catch_up()
            finally:
                for invocation in batch:
                    self._pending.close(invocation)
