"""Metric history as packs: the points of one metric that one request logged, in one item.

A point's *position* is its ``metric_history`` sort key (timestamp, step, value as fixed-width hex): byte order is
the order MLflow answers get-history in, and equal positions are the SQL store's one row (identical re-logs). A pack
is keyed by the position of its first point plus a digest of its text, so in the ``MH#<run>#<key>`` partition packs
sort by first point, among the single points written before packs existed (read as packs of one point).

Packs of different requests may overlap (points logged out of order), so a reader merges them by position; a page
of the first N points can still stop early, because every pack after the one in hand starts at or after its first
point (``first_points``).
"""

from __future__ import annotations

import hashlib
import heapq
import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from serverless_mlflow.storage import keys, table
from serverless_mlflow.storage.schema import ENTITY, ENTITY_TYPE, SK, KeyQuery
from serverless_mlflow.store.run_metrics import float_text, identity_value

PACK = ENTITY["metric_pack"]
# log_batch takes at most 1,000 metrics, so one request's pack of one key holds at most about 70 KB; the bound only
# keeps an item under DynamoDB's 400 KB whatever a caller sends.
MAX_POINTS_PER_PACK = 2_000
# Length of a position: three 16-digit hex fields and two separators.
POSITION_LENGTH = 50


def position(timestamp: int, step: int, value: float) -> str:
    """A point's position: its ``metric_history`` sort key."""
    return f"{keys.int64(timestamp)}#{keys.int64(step)}#{keys.float64(identity_value(value))}"


def pack_items(run_id: str, metrics: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """One item per metric key (more past ``MAX_POINTS_PER_PACK``) holding that key's points, sorted by position.
    A point repeated in the request is stored once (the last one, as successive puts of one key would leave)."""
    by_key: dict[str, dict[str, dict[str, Any]]] = {}
    for metric in metrics:
        at = position(metric["timestamp"], metric["step"], metric["value"])
        by_key.setdefault(metric["key"], {})[at] = metric
    items = []
    for key, points in by_key.items():
        ordered = [points[at] for at in sorted(points)]
        for start in range(0, len(ordered), MAX_POINTS_PER_PACK):
            chunk = ordered[start : start + MAX_POINTS_PER_PACK]
            text = ";".join(f"{m['timestamp']},{m['step']},{float_text(m['value'])}" for m in chunk)
            first = chunk[0]
            items.append(
                PACK.item(
                    {"key": key, "points": text, "count": len(chunk)},
                    run_id=run_id,
                    key=key,
                    timestamp=first["timestamp"],
                    step=first["step"],
                    value=identity_value(first["value"]),
                    digest=hashlib.sha256(text.encode("ascii")).hexdigest()[:16],
                )
            )
    return items


def points_of(item: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """(position, point) of a pack's points, or of a single ``metric_history`` point; a point has the attributes
    a ``metric_history`` item has (key, value as text, timestamp, step, is_nan)."""
    if item.get(ENTITY_TYPE) != PACK.type_name:
        yield item[SK], item
        return
    key = item["key"]
    for entry in item["points"].split(";"):
        timestamp_text, step_text, value_text = entry.split(",")
        timestamp, step, value = int(timestamp_text), int(step_text), float(value_text)
        point = {"key": key, "value": value_text, "timestamp": timestamp, "step": step, "is_nan": math.isnan(value)}
        yield position(timestamp, step, value), point


def first_position(item: dict[str, Any]) -> str:
    return item[SK][:POSITION_LENGTH]


@dataclass
class FirstPoints:
    """The first ``limit`` distinct points after ``after`` among items read in sort-key order (``add``), and when
    reading more cannot change them (``complete_before``)."""

    after: str | None
    limit: int | None
    points: dict[str, dict[str, Any]] = field(default_factory=dict)
    # Positions collected but not yet known to be before the items still to read, and how many are.
    _pending: list[str] = field(default_factory=list)
    _settled: int = 0
    # (sort key read before the item, the item's last position) per item read, in order: where a next page resumes.
    reads: list[tuple[str | None, str, str]] = field(default_factory=list)

    def complete_before(self, item: dict[str, Any]) -> bool:
        """True if no point of ``item`` or of any later item can be among the first ``limit``: every later point
        is at or after ``item``'s first position, and ``limit`` points are already at or before it."""
        if self.limit is None:
            return False
        first = first_position(item)
        while self._pending and self._pending[0] <= first:
            heapq.heappop(self._pending)
            self._settled += 1
        return self._settled >= self.limit

    def add(self, item: dict[str, Any], read_before: str | None) -> None:
        last = ""
        for at, point in points_of(item):
            last = max(last, at)
            if (self.after is None or at > self.after) and at not in self.points:
                self.points[at] = point
                heapq.heappush(self._pending, at)
        self.reads.append((read_before, item[SK], last))

    def first(self) -> list[tuple[str, dict[str, Any]]]:
        ordered = [(at, self.points[at]) for at in sorted(self.points)]
        return ordered if self.limit is None else ordered[: self.limit]

    def resume_after(self, returned_last: str) -> str | None:
        """The sort key a next page's read starts after: the one read before the first item still holding a point
        after ``returned_last`` (None: from the partition's start)."""
        for read_before, _sort_key, last in self.reads:
            if last > returned_last:
                return read_before
        return self.reads[-1][1] if self.reads else None


def first_points(items: Iterable[dict[str, Any]], after: str | None, limit: int | None, start_after: str | None) -> FirstPoints:
    """The first ``limit`` points after position ``after`` among ``items`` (one partition's, in sort-key order from
    sort key ``start_after`` on, exclusive), reading no further than needed (``items`` may be lazy)."""
    found = FirstPoints(after, limit)
    read_before = start_after
    for item in items:
        if found.complete_before(item):
            break
        found.add(item, read_before)
        read_before = item[SK]
    return found


def read_first(query: KeyQuery, after: str | None, limit: int | None, start_after: str | None) -> FirstPoints:
    """``first_points`` of one ``MH#`` partition (``query``: its key query), read lazily from ``start_after`` on."""
    bounds = {"sk_after": start_after} if start_after is not None else {}
    items = table.iter_query(query.pk_value, query.sk_prefix if start_after is None else None, **bounds)
    return first_points(items, after, limit, start_after)
