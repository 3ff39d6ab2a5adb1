"""One batch of stream records -> derived items, coalesced per source item and per run.

Idempotent by construction: the derived items written are always those of the source item as it is now (read
strongly consistent), and the items removed are those implied by the records' images or found through FTS
reverse items, minus the current ones. Replaying any record, any batch, or the whole stream converges to the
same state; an out-of-date record can never resurrect an old RANK item.

A batch is worked in *units* (``batch.py``): the records of one run (its items, its latest metrics, its marker)
or of one other source item. Within a unit every source item is indexed once however many of its records the
batch holds (a training loop logging one point per request sends a record per point: their RANK item moves
once), the run's summary is rebuilt once, and the run's metric pass (``metric_marks``) runs once: epoch, the
digest of its latest values, its marker's removal. So the experiment partition gains a few write units per run
and batch, not per point.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from serverless_mlflow.core import clock
from serverless_mlflow.index import fts, metric_marks, run_summaries
from serverless_mlflow.index.derived import (
    FLAG_ATTRIBUTE,
    FLAGGED_TYPES,
    NameSource,
    derive,
    is_source,
    name_source,
    only_flag_removed,
    remove_flag,
)
from serverless_mlflow.storage import table
from serverless_mlflow.storage.schema import ENTITY, ENTITY_TYPE, PK, SK
from serverless_mlflow.store import run_metrics

Item = dict[str, Any]
Key = tuple[str, str]
WATERMARK = ENTITY["config"].key(key="indexer_watermark")
METRIC_KEY = ENTITY["metric_key"]

# The attribute whose value the derived items come from: the flag is only cleared if it still holds
# the value that was indexed (compare-before-clear; a concurrent write keeps its flag).
_INDEXED_ATTRIBUTE = {
    "latest_metric": "value",
    "param": "value",
    "run_tag": "value",
    "run": "run_name",
    "experiment_entry": "name",
    "registered_model_entry": "name",
    "trace": "trace_name",
}
# What a run summary copies beyond the indexed value: a flag stays while any of it changed meanwhile.
_SUMMARISED_ATTRIBUTES = {
    "latest_metric": ("rank",),
    "run": ("status", "end_time", "lifecycle_stage"),
}


@dataclass
class Images:
    key: Key
    old: Item | None
    new: Item | None
    created_ms: int | None
    sequence: str

    @property
    def relevant(self) -> bool:
        if only_flag_removed(self.old, self.new):
            return False
        if self.new is None and (self.old or {}).get(ENTITY_TYPE) == metric_marks.MARKER.type_name:
            return False  # the indexer's own removal of a marker
        return is_source(self.old) or is_source(self.new)


@dataclass
class Outcome:
    indexed: bool = False
    puts: int = 0
    deletes: int = 0
    flag_cleared: bool = False
    created_ms: int | None = None
    metric_key: tuple[str, str] | None = None  # (experiment id, key) of a latest metric: its RANK partition is listed
    extra: dict[str, Any] = field(default_factory=dict)


def images(record: dict[str, Any]) -> Images:
    ddb = record.get("dynamodb") or {}
    keys = table.from_item(ddb.get("Keys") or {})
    old = table.from_item(ddb["OldImage"]) if ddb.get("OldImage") else None
    new = table.from_item(ddb["NewImage"]) if ddb.get("NewImage") else None
    created = ddb.get("ApproximateCreationDateTime")
    created_ms = int(float(created) * 1000) if created is not None else None
    return Images((keys[PK], keys[SK]), old, new, created_ms, str(ddb.get("SequenceNumber", "")))


def prefetch(keys: Iterable[Key]) -> dict[Key, Item | None]:
    """Current items in one BatchGetItem per 100 keys (strongly consistent); None for a missing one."""
    wanted = list(dict.fromkeys(keys))
    found = table.batch_get([{PK: pk, SK: sk} for pk, sk in wanted]) if wanted else []
    current: dict[Key, Item | None] = dict.fromkeys(wanted)
    current.update({(item[PK], item[SK]): item for item in found})
    return current


# --- one source item, however many of its records the batch holds ----------------------------------------


def stale_of(img: Images) -> dict[Key, Item]:
    """What one record's images imply (raises on an image that cannot be derived: that record is poison)."""
    return {**derive(img.old), **derive(img.new)}


def index_item(key: Key, records: list[Images], stale: dict[Key, Item], current: Item | None, writes: Writes) -> Outcome:
    """Plan what the item implies now (puts) and what its records' images implied (``stale``) and no longer holds
    (deletes) into ``writes``, the invocation's coalesced writes (``apply`` writes them)."""
    outcome = Outcome(indexed=True)
    if current is not None and not is_source(current):
        current = None
    target = derive(current)
    # Nothing this item implies changed since before the batch (e.g. a run status update): its summary and flag
    # only. Compared with the first record's old image, what an earlier invocation indexed: ``stale`` also holds
    # what the new images imply, which nothing wrote yet (a name added by a MODIFY).
    if records and all(img.old is not None for img in records) and derive(records[0].old) == target:
        return outcome
    stale = dict(stale)
    existing_fts: set[Key] = set()
    for source in _name_sources(*(img.old for img in records), *(img.new for img in records), current):
        for reverse in fts.indexed_postings(source.scope, source.kind, source.entity_id):
            forward, rev = fts.posting_items(source.scope, source.kind, source.entity_id, reverse["level"], reverse["token"])
            for derived in (forward, rev):
                derived_key = (derived[PK], derived[SK])
                stale[derived_key] = derived
                existing_fts.add(derived_key)
    # A posting already stored need not be written again (a rename keeps most trigrams).
    puts = [item for derived_key, item in target.items() if derived_key not in existing_fts]
    deletes = [item for derived_key, item in stale.items() if derived_key not in target]
    outcome.puts, outcome.deletes = len(puts), len(deletes)
    writes.delete(*deletes)
    writes.put(*puts)
    if current is not None and current.get(ENTITY_TYPE) == run_metrics.LATEST.type_name and not run_metrics.is_legacy_latest(current):
        outcome.metric_key = (str(current["experiment_id"]), current["key"])
    return outcome


def _name_sources(*items: Item | None) -> list[NameSource]:
    seen: dict[tuple[str, str, str], NameSource] = {}
    for item in items:
        source = name_source(item) if item else None
        if source is not None:
            seen.setdefault((source.scope, source.kind, source.entity_id), source)
    return list(seen.values())


@dataclass
class Writes:
    """Derived puts and deletes planned by one unit (or merged for an invocation): one intent per key, the last
    planned wins (units plan in stream order; a key is put or deleted once however many records imply it)."""

    intents: dict[Key, tuple[bool, Item]] = field(default_factory=dict)  # key -> (put?, item or key)

    def put(self, *items: Item) -> None:
        for item in items:
            self.intents[(item[PK], item[SK])] = (True, item)

    def delete(self, *items: Item) -> None:
        for item in items:
            self.intents[(item[PK], item[SK])] = (False, item)

    def merge(self, other: Writes) -> None:
        self.intents.update(other.intents)


def apply(writes: Writes) -> None:
    """Write the coalesced intents so that every forward posting always has its reverse item (cleanup can find
    it): first every put but forward postings' and every delete but reverse postings', then forward puts and
    reverse deletes (a forward put's reverse is never deleted: both are implied together). Each step is as few
    BatchWriteItems as its 25-item chunks take."""

    def key(item: Item) -> dict[str, str]:
        return {PK: item[PK], SK: item[SK]}

    first_puts: list[Item] = []
    first_deletes: list[dict[str, str]] = []
    forward_puts: list[Item] = []
    reverse_deletes: list[dict[str, str]] = []
    for is_put, item in writes.intents.values():
        kind = item.get(ENTITY_TYPE)
        if is_put:
            (forward_puts if kind == "fts_forward" else first_puts).append(item)
        else:
            (reverse_deletes if kind == "fts_reverse" else first_deletes).append(key(item))
    if first_puts or first_deletes:
        table.batch_write(puts=first_puts, deletes=first_deletes)
    if forward_puts or reverse_deletes:
        table.batch_write(puts=forward_puts, deletes=reverse_deletes)


_registered: set[tuple[str, str, str]] = set()
_registered_lock = threading.Lock()


def register_metric_keys(keys: Iterable[tuple[str, str]]) -> None:
    """Record that each experiment has a RANK partition for its key: (experiment id, key) pairs not remembered
    by this instance are read in one BatchGetItem, the missing ones put in one BatchWriteItem (per 100 / 25)."""
    name = table.table_name()
    with _registered_lock:
        unknown = sorted({pair for pair in keys if (name, *pair) not in _registered})
    if not unknown:
        return
    item_keys = [METRIC_KEY.key(experiment_id=experiment_id, key=key) for experiment_id, key in unknown]
    found = {(item[PK], item[SK]) for item in table.batch_get(item_keys, consistent=False)}
    table.batch_write(
        puts=[
            METRIC_KEY.item({"key": key}, experiment_id=experiment_id, key=key)
            for (experiment_id, key), item_key in zip(unknown, item_keys, strict=True)
            if (item_key[PK], item_key[SK]) not in found
        ]
    )
    with _registered_lock:
        _registered.update((name, *pair) for pair in unknown)


# --- a run: its summary and its metric pass -----------------------------------------------------------------


def plan_digest(experiment_id: str, run_id: str, latest: list[Item], current: Item | None, writes: Writes) -> bool:
    """Plan the copy of the run's latest values into its range (the digest) unless it holds them already (a run
    without any has none). True if it changes."""
    if not latest:
        if current is None:
            return False
        writes.delete(current)
        return True
    digest = run_metrics.digest_item(experiment_id, run_id, latest)
    if run_metrics.same_digest(current, digest):
        return False
    writes.put(digest)
    return True


def metric_pass(experiment_id: str, run_id: str, digest: Item | None, writes: Writes) -> None:
    """After ``metric_marks.begin`` gave the pass its epoch: the digest from the run's latest values read now,
    written with the RANK items of those values (``index_item``: the same reads' era, both after the epoch began)."""
    plan_digest(experiment_id, run_id, run_metrics.read_latest(run_id), digest, writes)


def refresh_summary(run: tuple[str, str], read: dict[Key, Item | None] | None = None) -> None:
    """Rebuild the summary of a run (before any of its flags or its marker may be cleared); ``read``: its summary
    and its experiment's pair declaration as prefetched (the summary read no later than the declaration)."""
    run_summaries.rebuild(*run, read=read)


def clear_flag(current: Item | None) -> bool:
    """Remove the LSI5 "not indexed yet" flag if the item still is the version just indexed."""
    if not current or current.get(ENTITY_TYPE) not in FLAGGED_TYPES or FLAG_ATTRIBUTE not in current:
        return False
    if current[ENTITY_TYPE] == "trace" and name_source(current) is None:
        return False  # an earlier release's flag on a layout 2 trace: its name is not posted (tools/trace_names.py)
    names: dict[str, str] = {}
    values: dict[str, Any] = {}
    terms = []
    attributes = (_INDEXED_ATTRIBUTE[current[ENTITY_TYPE]], *_SUMMARISED_ATTRIBUTES.get(current[ENTITY_TYPE], ()))
    for i, attribute in enumerate(attributes):
        names[f"#a{i}"] = attribute
        value = current.get(attribute)
        if value is None:
            terms.append(f"attribute_not_exists(#a{i})")
        elif isinstance(value, (str, int)):
            terms.append(f"#a{i} = :a{i}")
            values[f":a{i}"] = value
    # False: changed meanwhile, and its own stream record will index it and clear the flag.
    return remove_flag(current, " AND ".join(terms), names, values)


# An instance records the watermark at most this often per table (by its own clock): one conditional write per
# invocation was an eighth of the indexer's requests when each write is indexed on its own (the local sync drain),
# for a figure read as a lag, which this leaves at most a second behind.
WATERMARK_INTERVAL_MS = 1000
_watermarked: dict[str, int] = {}  # table name -> when this instance last recorded its watermark (epoch ms)
_watermark_lock = threading.Lock()


def record_watermark(created_ms: int) -> None:
    """CONFIG CFG#indexer_watermark: the latest source change time indexed (monotonic; lag reporting), at most
    once per ``WATERMARK_INTERVAL_MS`` per instance and table."""
    now = clock.now_millis()
    name = table.table_name()
    with _watermark_lock:
        if now - _watermarked.get(name, -WATERMARK_INTERVAL_MS) < WATERMARK_INTERVAL_MS:
            return
        _watermarked[name] = now
    try:
        table.update(
            WATERMARK,
            "SET #v = :t, lag_ms = :lag, updated_at = :now, entity_type = :et",
            names={"#v": "value"},
            values={":t": created_ms, ":lag": max(0, now - created_ms), ":now": now, ":et": "config"},
            condition="attribute_not_exists(#v) OR #v < :t",
        )
    except table.ConditionFailed:
        pass  # an equal or later point is already recorded


def read_watermark() -> Item | None:
    return table.get(WATERMARK)
