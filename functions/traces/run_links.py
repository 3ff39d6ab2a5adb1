"""Run links to traces that are not stored yet (``link-to-run`` before the trace's info arrives).

MLflow's SqlAlchemyStore keeps a trace-run association without checking that the trace exists, and the client
exports traces asynchronously, so ``link_traces_to_run`` often reaches us before ``start_trace``. Such a link is
held on the trace's locator (``ADD pending_runs``; the UpdateItem creates the locator if absent) and the writer
of the info adds it to the info's ``linked_runs``: ``start_trace`` reads it from the locator image its own update
returns, ``log_spans`` (an info made from the first span batch) from the locator it updates and the one it reads after
its put.

The race (the link lands on the locator after the writer read it, before the info is written) is closed by
time: a link that finds the locator already naming the info's place (``info_time``) waits up to
``LINK_WAIT_SECONDS`` for the info and adds itself; a ``start_trace`` whose locator update and info write were
more than ``WRITER_CHECK_SECONDS`` apart (so such a link may have given up) reads the locator once more and
adds what it holds. The usual start_trace pays nothing; the rare late link pays its wait.
A pending link on a trace that never comes changes no answer: the locator has no experiment, and every reader
takes it for "no trace" (``store.traces.is_placed``).
"""

from __future__ import annotations

import time
from typing import Any

from serverless_mlflow.storage import table
from serverless_mlflow.store import trace_writes
from serverless_mlflow.store import traces as store

LINK_WAIT_SECONDS = 8.0
LINK_POLL_SECONDS = 0.1
# Under half the link's wait: a writer quicker than this wrote its info while any late link was still waiting.
WRITER_CHECK_SECONDS = LINK_WAIT_SECONDS / 2


def hold(trace_ids: list[str], run_id: str) -> None:
    """Keep ``run_id`` for traces with no info yet; add it to the infos a writer placed meanwhile."""
    waiting = [trace_id for trace_id in trace_ids if _hold(trace_id, run_id)]
    if not waiting:
        return
    # One wait for the request (a Lambda's time is bounded), begun after the last locator update.
    deadline = time.monotonic() + LINK_WAIT_SECONDS
    while waiting:
        # Read the clock before looking: a last look that starts past the deadline sees any info a writer quicker
        # than WRITER_CHECK_SECONDS wrote (the other writers look at the locator again themselves).
        past_deadline = time.monotonic() > deadline
        still = []
        for trace_id in waiting:
            item = store.info_item_or_none(trace_id)
            if item is None:
                still.append(trace_id)
            else:
                trace_writes.update_info(item, "ADD linked_runs :r", values={":r": {run_id}})
        waiting = still
        if past_deadline:
            return  # a stalled writer looks at the locator again after its info write (apply_late)
        if waiting:
            time.sleep(LINK_POLL_SECONDS)


def _hold(trace_id: str, run_id: str) -> bool:
    """Add ``run_id`` to the trace's locator; True when a writer named the info's place before (it may have read
    the locator before our link): then the link waits for the info."""
    key = store.LOCATOR.key(trace_id=trace_id)
    if not table.key_can_exist(key):
        return False  # an id past DynamoDB's key limits names no trace, now or later
    locator = (
        table.update(
            key, "SET entity_type = :t ADD pending_runs :r", values={":t": store.LOCATOR.name, ":r": {run_id}}, return_values="ALL_NEW"
        )
        or {}
    )
    # No place named yet: whichever writer names it reads the link from the locator's image its update returns.
    return locator.get("info_time") is not None and not store.is_expired(locator)


def pending(locator: dict[str, Any] | None) -> set[str]:
    """The run ids a locator (item image) holds for its trace."""
    return set((locator or {}).get("pending_runs") or ())


def apply_late(trace_id: str, stored: dict[str, Any], started: float) -> None:
    """After a writer stored ``stored`` (the info), starting its locator update at ``started`` (monotonic): add
    links that came in meanwhile, when a waiting link may have given up on it."""
    if time.monotonic() - started <= WRITER_CHECK_SECONDS:
        return
    apply_missing(trace_id, stored, store.locate(trace_id))


def apply_missing(trace_id: str, stored: dict[str, Any], locator: dict[str, Any] | None) -> None:
    """Add to the info ``stored`` the pending links of ``locator`` it lacks."""
    missing = pending(locator) - set(stored.get("linked_runs") or ())
    if missing:
        trace_writes.update_info({**stored, "trace_id": trace_id}, "ADD linked_runs :r", values={":r": missing})
