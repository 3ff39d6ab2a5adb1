"""Trace partitions (layout 2): where a trace info lives, and the experiment's directory of them.

An info lives in ``TB#<experiment>#<hour>#<shard>``: the hour bucket of its request time and a hash shard of its
trace id (``schema.trace_partition``; an info written under the earlier shard count stays where it was and is
found by ``info_keys``). The bucket bounds every partition by one hour of one experiment's
traffic over ``TRACE_SHARDS`` keys, however long the experiment lives; the shard spreads that hour's writes.
Readers find the partitions through the experiment's directory (``trace_bucket`` items in ``EXP#<id>``, one per
non-empty partition, in hour order), so a time-ordered search walks only the hours it needs and a sparse
experiment reads only partitions that hold traces.

A writer records the partition in the directory before it writes an info there (``ensure_partition``: one
conditional write per partition and warm function), so a reader that lists the directory after an info was
written finds its partition. The directory entry expires no earlier than any trace the partition can hold.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from serverless_mlflow.core import clock
from serverless_mlflow.storage import table
from serverless_mlflow.storage.schema import (
    ENTITY,
    PK,
    TRACE_BUCKET_MS,
    TTL_ATTRIBUTE,
    trace_bucket,
    trace_partition,
    trace_shard_candidates,
)

BUCKET = ENTITY["trace_bucket"]
TRACE = ENTITY["trace"]

# (table, experiment, bucket, shard) -> the expiry this function knows the directory entry has (None: never).
_recorded: dict[tuple[str, str, int, int], int | None] = {}


@dataclass(frozen=True)
class Partition:
    experiment_id: str
    bucket: int
    shard: int

    @property
    def pk(self) -> str:
        return TRACE.pk.render({"experiment_id": self.experiment_id, "bucket": self.bucket, "shard": self.shard})


def partition_of(experiment_id: str, request_time: int, trace_id: str) -> Partition:
    fields = trace_partition(experiment_id, request_time, trace_id)
    return Partition(experiment_id, fields["bucket"], fields["shard"])


def info_key(experiment_id: str, request_time: int, trace_id: str) -> dict[str, str]:
    """Where a trace info of this request time is written now."""
    return TRACE.key(**trace_partition(experiment_id, request_time, trace_id), request_time=request_time, trace_id=trace_id)


def info_keys(experiment_id: str, request_time: int, trace_id: str) -> list[dict[str, str]]:
    """Where such an info may be: ``info_key``, then its key under the earlier shard count (``LEGACY_TRACE_SHARDS``)."""
    bucket = trace_bucket(request_time)
    return [
        TRACE.key(experiment_id=experiment_id, bucket=bucket, shard=shard, request_time=request_time, trace_id=trace_id)
        for shard in trace_shard_candidates(trace_id)
    ]


def of_item(item: dict[str, Any]) -> Partition:
    """The partition a stored info item is in (its own key: an info keeps the shard it was written with)."""
    fields = TRACE.parse_pk(item[PK])
    return Partition(str(fields["experiment_id"]), int(fields["bucket"]), int(fields["shard"]))


def fields_of(item: dict[str, Any]) -> dict[str, Any]:
    """Key fields (experiment_id, bucket, shard) of a stored info's partition, for items kept next to it; for a
    layout 1 info (in its experiment's partition), the trace partition the migration will move it to."""
    if not str(item[PK]).startswith(TRACE.pk.prefix({})):
        return trace_partition(str(item["experiment_id"]), int(item.get("request_time") or 0), item["trace_id"])
    partition = of_item(item)
    return {"experiment_id": partition.experiment_id, "bucket": partition.bucket, "shard": partition.shard}


def _entry_expiry(request_time: int, expires: int | None) -> int | None:
    """The latest expiry a trace of this request time's hour can get, given this trace's (same retention)."""
    if expires is None:
        return None
    bucket_end = (trace_bucket(request_time) + 1) * TRACE_BUCKET_MS
    return expires + math.ceil((bucket_end - request_time) / 1000)


def _covers(recorded: int | None, needed: int | None) -> bool:
    return recorded is None or (needed is not None and recorded >= needed)


def ensure_partition(experiment_id: str, request_time: int, trace_id: str, expires: int | None) -> Partition:
    """Record the trace's partition in the experiment's directory (if this function has not yet), and return it.

    ``expires``: the trace's TTL (None: kept until deleted); the entry never expires before it.
    """
    partition = partition_of(experiment_id, request_time, trace_id)
    cache_key = (table.table_name(), experiment_id, partition.bucket, partition.shard)
    needed = _entry_expiry(request_time, expires)
    if cache_key in _recorded and _covers(_recorded[cache_key], needed):
        return partition
    key = BUCKET.key(experiment_id=experiment_id, bucket=partition.bucket, shard=partition.shard)
    values: dict[str, Any] = {":b": partition.bucket, ":s": partition.shard, ":t": BUCKET.name}
    names = {"#x": TTL_ATTRIBUTE, "#b": "bucket", "#s": "shard"}
    if needed is None:
        expression = "SET #b = :b, #s = :s, entity_type = :t REMOVE #x"
        condition = "attribute_not_exists(pk) OR attribute_exists(#x)"
    else:
        expression, values[":x"] = "SET #b = :b, #s = :s, entity_type = :t, #x = :x", needed
        condition = "attribute_not_exists(pk) OR (attribute_exists(#x) AND #x < :x)"
    try:
        table.update(key, expression, names=names, values=values, condition=condition)
    except table.ConditionFailed:
        pass  # already recorded, with an expiry at least as late
    _recorded[cache_key] = needed
    return partition


def _live(entry: dict[str, Any]) -> bool:
    expires = entry.get(TTL_ATTRIBUTE)
    return not (isinstance(expires, int) and expires <= clock.now_seconds())


def partitions(experiment_id: str, low_ms: int | None = None, high_ms: int | None = None, descending: bool = True) -> Iterator[Partition]:
    """The experiment's trace partitions whose hours meet [low_ms, high_ms], newest hour first (or oldest first).

    Read lazily from the directory (a page at a time), so a walk that stops early reads only the hours it used.
    """
    directory = BUCKET.query("by_bucket", experiment_id=experiment_id)
    low = {"bucket": trace_bucket(low_ms)} if low_ms is not None else None
    high = {"bucket": trace_bucket(high_ms)} if high_ms is not None else None
    for entry in table.iter_query(**directory.range(low, high), forward=not descending, page_size=100):
        if _live(entry):
            yield Partition(experiment_id, int(entry["bucket"]), int(entry["shard"]))


def by_hour(
    experiment_id: str, low_ms: int | None = None, high_ms: int | None = None, descending: bool = True
) -> Iterator[list[Partition]]:
    """``partitions`` grouped by hour: the shards of one hour together, hours in order."""
    for _, group in itertools.groupby(partitions(experiment_id, low_ms, high_ms, descending), key=lambda p: p.bucket):
        yield list(group)
