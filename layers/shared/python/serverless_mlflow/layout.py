"""The table's layout version, as far as request paths need it: may the table still hold layout 1 traces?

A table written before the trace layout changed keeps its trace infos and spans in the experiment partition
(``trace_v1`` / ``trace_spans_v1``) until the ``traces_v2`` migration step has moved them. Until then readers
look in both places (layout 1 first, so an item moved meanwhile is seen once: see ``docs/schema.md``).
The migration records the step in ``CONFIG / CFG#layout``; a table created by this code records every step at
creation, so it never reads layout 1 at all.

Read once per warm function: a completed step never goes back, so "done" is cached for good and "not yet"
is looked at again after ``RECHECK_SECONDS``.
"""

from __future__ import annotations

import time
from typing import Any

from serverless_mlflow import table
from serverless_mlflow.schema import ENTITY

LAYOUT_KEY = ENTITY["config"].key(key="layout")
TRACES_V2 = "traces_v2"
# Every step this code knows, in order: what a new table is created with.
STEPS: tuple[str, ...] = (TRACES_V2,)
RECHECK_SECONDS = 30.0

# table name -> (steps known done, when they were read)
_cache: dict[str, tuple[frozenset[str], float]] = {}


def steps_done() -> frozenset[str]:
    """The migration steps recorded as complete (read strongly consistent, cached as described above)."""
    name, now = table.table_name(), time.monotonic()
    cached = _cache.get(name)
    if cached is not None and (cached[0].issuperset(STEPS) or now - cached[1] < RECHECK_SECONDS):
        return cached[0]
    item = table.get(LAYOUT_KEY) or {}
    done = frozenset(item.get("steps") or ())
    _cache[name] = (done, now)
    return done


def layout1_traces_possible() -> bool:
    return TRACES_V2 not in steps_done()


def record_steps(steps: list[str] | tuple[str, ...]) -> None:
    """Add completed steps to the table's layout record (idempotent)."""
    table.update(
        LAYOUT_KEY,
        "ADD steps :s SET entity_type = :t",
        values={":s": set(steps), ":t": "config"},
    )
    forget()


def layout_item() -> dict[str, Any] | None:
    return table.get(LAYOUT_KEY)


def forget() -> None:
    """Drop the cached state (the migration tool completes steps)."""
    _cache.clear()
