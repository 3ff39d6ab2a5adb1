"""The table's layout version: which key shapes its items may still be in.

Layout 1 kept every metric point, latest metric, metric RANK item, run summary, pair index item and logged-model
metric in the experiment's partition; layout 2 (issue 23) moves them to partitions of their own. This code writes
layout 2 only. A table written before it (no version recorded) is layout 1 until ``make migrate`` has moved every
old item and recorded version 2 in ``CONFIG`` / ``CFG#layout_version``; meanwhile readers also read the old
shapes (``schema.LEGACY``), so answers stay exact during the move.

The version is read with one GetItem per cold start and cached. A version below ``CURRENT`` (a migration may be
running) is read again at most every ``REFRESH_SECONDS``: the move's end reaches warm Lambdas without a
redeploy. Correctness never depends on that refresh, only the cost of the reads: a reader that still believes
the move is under way reads both shapes and finds the old ones gone.

A new table is created at ``CURRENT`` (``record_new_table``, from the bootstrap items' writer).

Traces moved by a named step instead (``traces_v2``, ``tools/trace_migration.py``): a table written before
keeps its trace infos and spans in the experiment partition (``trace_v1`` / ``trace_spans_v1``) until that step
is recorded in ``CONFIG / CFG#layout``; until then readers look in both places (layout 1 first, so an item moved
meanwhile is seen once: see ``docs/schema.md``). A new table records every step at creation.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from serverless_mlflow.storage import table
from serverless_mlflow.storage.schema import ENTITY

# The layout this code writes. A migration step moves a table from CURRENT - 1 (tools/migrate).
CURRENT = 2
# Tables written before versions were recorded.
UNRECORDED = 1
# Layout 2: metric history, latest metrics, metric RANK items, run summaries, pair index items and logged-model
# metrics live outside the experiment partition.
METRICS_OUTSIDE_EXPERIMENT = 2
REFRESH_SECONDS = 60.0

VERSION_KEY = ENTITY["config"].key(key="layout_version")
EXPERIMENT_LAYOUT = ENTITY["experiment_layout"]

_lock = threading.Lock()
# table name -> (version, monotonic time read): tests and tools switch tables within one process.
_versions: dict[str, tuple[int, float]] = {}
# (table name, experiment id, version) -> (whether the experiment is at that version, monotonic time read). A yes
# never changes (a migrated experiment never goes back); a no is read again after REFRESH_SECONDS.
_experiments: dict[tuple[str, str, int], tuple[bool, float]] = {}


def version() -> int:
    """The table's layout version (cached; see the module docstring)."""
    name = table.table_name()
    now = time.monotonic()
    with _lock:
        cached = _versions.get(name)
    if cached is not None and (cached[0] >= CURRENT or now - cached[1] < REFRESH_SECONDS):
        return cached[0]
    item = table.get(VERSION_KEY)
    found = int(item["value"]) if item and "value" in item else UNRECORDED
    with _lock:
        _versions[name] = (found, now)
    return found


def at_least(wanted: int) -> bool:
    return version() >= wanted


def experiment_at_least(experiment_id: str, wanted: int) -> bool:
    """Whether one experiment's items are all in layout ``wanted`` (the table's, or the experiment's own marker
    that ``make migrate`` sets once it has moved that experiment). Positive answers are cached."""
    if at_least(wanted):
        return True
    return _experiment_has(experiment_id, "version", wanted)


def experiment_ranks_at_least(experiment_id: str, wanted: int) -> bool:
    """Whether one experiment's derived metric items (RANK items, pair index items, run summaries) are all in layout
    ``wanted``: ``make migrate`` builds them before it moves the experiment's history, which takes longer."""
    if at_least(wanted):
        return True
    return _experiment_has(experiment_id, "ranks", wanted) or _experiment_has(experiment_id, "version", wanted)


def _experiment_has(experiment_id: str, attribute: str, wanted: int) -> bool:
    cache_key = (table.table_name(), f"{experiment_id}#{attribute}", wanted)
    now = time.monotonic()
    with _lock:
        cached = _experiments.get(cache_key)
    if cached is not None and (cached[0] or now - cached[1] < REFRESH_SECONDS):
        return cached[0]
    item = table.get(EXPERIMENT_LAYOUT.key(experiment_id=experiment_id))
    found = item is not None and int(item.get(attribute, 0)) >= wanted
    with _lock:
        _experiments[cache_key] = (found, now)
    return found


def forget() -> None:
    """Drop the cached versions and steps (tests and tools that change them)."""
    with _lock:
        _versions.clear()
        _experiments.clear()
        _steps.clear()


def record(new_version: int, expected: int | None) -> None:
    """Set the table's version, conditional on it being ``expected`` (None: not recorded). Raises ConditionFailed."""
    if expected is None or expected == UNRECORDED:
        condition, values = "attribute_not_exists(#v) OR #v = :expected", {":expected": UNRECORDED}
    else:
        condition, values = "#v = :expected", {":expected": expected}
    table.update(
        VERSION_KEY,
        "SET #v = :new, entity_type = :type",
        names={"#v": "value"},
        values={**values, ":new": new_version, ":type": "config"},
        condition=condition,
    )
    forget()


def record_new_table() -> None:
    """A table created by this code is at CURRENT (unless a version is recorded already)."""
    try:
        table.put(ENTITY["config"].item({"value": CURRENT}, key="layout_version"), condition="attribute_not_exists(pk)")
    except table.ConditionFailed:
        pass
    record_steps(STEPS)


# --- named steps (traces) ------------------------------------------------------------------------------------

LAYOUT_KEY = ENTITY["config"].key(key="layout")
TRACES_V2 = "traces_v2"
# Every trace's contribution carries the coarse rollup levels (``trace_metrics.rollups.LEVELS``): until then the
# coarse items lack the traces aggregated before them, so queries read the full level (``tools/rollup_levels.py``).
ROLLUP_LEVELS = "rollup_levels"
# The same for the per-status slices per minute (added after ``rollup_levels``): until then a status-grouped
# range reads the raw traces of its partial edge hours.
ROLLUP_STATUS_MINUTES = "rollup_status_minutes"
# One re-aggregation of every trace completes all of these (``tools/rollup_levels.py``).
ROLLUP_STEPS: tuple[str, ...] = (ROLLUP_LEVELS, ROLLUP_STATUS_MINUTES)
# Every named trace's partition has its name entry (``store.trace_names``) and no trace-name postings or "not yet
# indexed" flags of earlier releases are left (``tools/trace_names.py``): until then name searches read those too.
TRACE_NAMES = "trace_names"
# Every experiment carrying an issue-detection schedule tag has the monitor's ``issue_schedule`` item
# (``tools/issue_schedules.py``): a schedule saved by a release before the monitor dispatched them runs.
ISSUE_SCHEDULES = "issue_schedules"
# Every step this code knows, in order: what a new table is created with.
STEPS: tuple[str, ...] = (TRACES_V2, *ROLLUP_STEPS, TRACE_NAMES, ISSUE_SCHEDULES)
RECHECK_SECONDS = 30.0

# table name -> (steps known done, when they were read); a completed step never goes back.
_steps: dict[str, tuple[frozenset[str], float]] = {}


def steps_done() -> frozenset[str]:
    """The migration steps recorded as complete (read strongly consistent, cached as described above)."""
    name, now = table.table_name(), time.monotonic()
    with _lock:
        cached = _steps.get(name)
    if cached is not None and (cached[0].issuperset(STEPS) or now - cached[1] < RECHECK_SECONDS):
        return cached[0]
    item = table.get(LAYOUT_KEY) or {}
    done = frozenset(item.get("steps") or ())
    with _lock:
        _steps[name] = (done, now)
    return done


def layout1_traces_possible() -> bool:
    return TRACES_V2 not in steps_done()


def trace_names_complete() -> bool:
    return TRACE_NAMES in steps_done()


def rollup_levels_complete() -> bool:
    return ROLLUP_LEVELS in steps_done()


def status_minutes_complete() -> bool:
    return ROLLUP_STATUS_MINUTES in steps_done()


def record_steps(steps: list[str] | tuple[str, ...]) -> None:
    """Add completed steps to the table's layout record (idempotent)."""
    table.update(LAYOUT_KEY, "ADD steps :s SET entity_type = :t", values={":s": set(steps), ":t": "config"})
    forget()


def layout_item() -> dict[str, Any] | None:
    return table.get(LAYOUT_KEY)
