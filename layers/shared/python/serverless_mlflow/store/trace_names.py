"""Trace-name search at the grain of names, not traces: each trace partition lists the distinct names used in it.

An app sends every request's trace under one of a few names (its endpoints), so a posting per trace cost about
27 write units per trace (trigram postings, their ``gsi2`` copies, and the indexer's rewrite of the info that
cleared its "not yet indexed" flag). Here the info's writer puts one small ``trace_name`` item per distinct
(partition, name) before it writes the info, once per warm function (``ensure``): a trace with a name already
seen costs nothing more. A name search reads a partition's names (one Query), keeps those meeting the filter's
name clauses (``trace_matching``, the same comparison as on the info), and reads each kept name's infos by time
through the info's own name index (lsi4, ``by_name``). Nothing lags: the entry exists before the info does.

Entries are never removed when their traces go (a name without traces reads an empty range); they expire no
earlier than any trace the partition can hold. A partition with more than ``MAX_NAMES`` names (an app naming
each trace differently) is read by time instead (``matching`` answers None).

Tables written by earlier releases hold trigram postings per trace and flagged infos, and no entries: until the
``trace_names`` step (``tools/trace_names.py``) is recorded, searches also read those (``functions/traces/search``).
"""

from __future__ import annotations

import threading
from typing import Any

from serverless_mlflow.storage import table
from serverless_mlflow.storage.schema import ENTITY, TTL_ATTRIBUTE
from serverless_mlflow.store import trace_partitions
from serverless_mlflow.store.trace_partitions import Partition

ENTRY = ENTITY["trace_name"]
# Names read per partition before a search gives up on them and reads the partition by time.
MAX_NAMES = 200

# (table, partition key, name) -> the expiry this function knows the entry has (None: never expires).
_recorded: dict[tuple[str, str, str], int | None] = {}
_lock = threading.Lock()


def entry(experiment_id: str, request_time: int, trace_id: str, name: str, expires: int | None) -> dict[str, Any]:
    """The entry a named trace needs in its partition (``expires``: the trace's TTL, None: kept until deleted)."""
    partition = trace_partitions.partition_of(experiment_id, int(request_time), trace_id)
    needed = trace_partitions._entry_expiry(int(request_time), expires)
    return ENTRY.item(
        {"trace_name": name, **({} if needed is None else {TTL_ATTRIBUTE: needed})},
        experiment_id=experiment_id,
        bucket=partition.bucket,
        shard=partition.shard,
        trace_name=name,
    )


def ensure(experiment_id: str, request_time: int, trace_id: str, name: str | None, expires: int | None) -> None:
    """Record ``name`` in the trace's partition (if this function has not yet), before the info is written there.

    One conditional update: it never shortens a stored expiry. Idempotent, so a retried request is safe.
    """
    if name is None:
        return
    item = entry(str(experiment_id), request_time, trace_id, name, expires)
    needed = item.get(TTL_ATTRIBUTE)
    cache_key = (table.table_name(), item["pk"], name)
    with _lock:
        known = _recorded.get(cache_key, ...)
    if known is not ... and trace_partitions._covers(known, needed):
        return
    names = {"#n": "trace_name", "#x": TTL_ATTRIBUTE}
    values: dict[str, Any] = {":n": name, ":t": ENTRY.name}
    if needed is None:
        expression = "SET #n = :n, entity_type = :t REMOVE #x"
        condition = "attribute_not_exists(pk) OR attribute_exists(#x)"
    else:
        expression, values[":x"] = "SET #n = :n, entity_type = :t, #x = :x", needed
        condition = "attribute_not_exists(pk) OR (attribute_exists(#x) AND #x < :x)"
    try:
        table.update({"pk": item["pk"], "sk": item["sk"]}, expression, names=names, values=values, condition=condition)
    except table.ConditionFailed:
        pass  # recorded already, with an expiry at least as late
    with _lock:
        _recorded[cache_key] = needed


def ensure_for(info: dict[str, Any]) -> None:
    """``ensure`` for an info item about to be written (its name, partition and expiry)."""
    ensure(str(info["experiment_id"]), int(info["request_time"]), info["trace_id"], info.get("trace_name"), info.get(TTL_ATTRIBUTE))


def entry_of(info: dict[str, Any]) -> dict[str, Any]:
    """The entry a named info needs in its partition (``admin verify``, the ``trace_names`` step)."""
    return entry(str(info["experiment_id"]), int(info["request_time"]), info["trace_id"], info["trace_name"], info.get(TTL_ATTRIBUTE))


def names(partition: Partition) -> list[str] | None:
    """The names used in ``partition`` (strongly consistent), or None when there are more than ``MAX_NAMES``."""
    query = ENTRY.query("names", experiment_id=partition.experiment_id, bucket=partition.bucket, shard=partition.shard)
    found: list[str] = []
    for items, _ in table.query_pages(**query, limit=MAX_NAMES + 1):
        found += [item["trace_name"] for item in items]
        if len(found) > MAX_NAMES:
            return None
    return found


def forget() -> None:
    """Drop what this function remembers having recorded (tests that recreate tables)."""
    with _lock:
        _recorded.clear()
