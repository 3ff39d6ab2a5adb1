"""Per-record indexing: derive from the *current* source item, delete what older images implied.

Idempotent by construction: the derived items written are always those of the source item as it is
now (read strongly consistent), and the items removed are those implied by the record's images or
found through FTS reverse items, minus the current ones. Replaying any record, any batch, or the whole
stream converges to the same state; an out-of-date record can never resurrect an old RANK item.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from serverless_mlflow import clock, fts, run_summaries, table
from serverless_mlflow.derived import FLAG_ATTRIBUTE, FLAGGED_TYPES, NameSource, derive, is_source, name_source, only_flag_removed
from serverless_mlflow.schema import ENTITY, ENTITY_TYPE, PK, SK

Item = dict[str, Any]
Key = tuple[str, str]
WATERMARK = ENTITY["config"].key(key="indexer_watermark")
_MISSING = object()

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

    @property
    def relevant(self) -> bool:
        return (is_source(self.old) or is_source(self.new)) and not only_flag_removed(self.old, self.new)


@dataclass
class Outcome:
    indexed: bool = False
    puts: int = 0
    deletes: int = 0
    flag_cleared: bool = False
    created_ms: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def images(record: dict[str, Any]) -> Images:
    ddb = record.get("dynamodb") or {}
    keys = table.from_item(ddb.get("Keys") or {})
    old = table.from_item(ddb["OldImage"]) if ddb.get("OldImage") else None
    new = table.from_item(ddb["NewImage"]) if ddb.get("NewImage") else None
    created = ddb.get("ApproximateCreationDateTime")
    created_ms = int(float(created) * 1000) if created is not None else None
    return Images((keys[PK], keys[SK]), old, new, created_ms)


def prefetch(records: Iterable[dict[str, Any]]) -> dict[Key, Item | None]:
    """Current source items of a batch in one BatchGetItem per 100 keys (strongly consistent)."""
    wanted = {img.key for img in map(images, records) if img.relevant}
    found = table.batch_get([{PK: pk, SK: sk} for pk, sk in wanted]) if wanted else []
    current: dict[Key, Item | None] = dict.fromkeys(wanted)
    current.update({(item[PK], item[SK]): item for item in found})
    return current


def process_record(
    record: dict[str, Any], currents: dict[Key, Item | None] | None = None, summarised: set[tuple[str, str]] | None = None
) -> Outcome:
    """Index one record. ``summarised``: runs whose summary this batch already rebuilt (each read of a run's
    range in a batch follows every write the batch holds, so one rebuild per run and batch is enough)."""
    img = images(record)
    outcome = Outcome(created_ms=img.created_ms)
    if not img.relevant:
        return outcome
    outcome.indexed = True
    cached = currents.get(img.key, _MISSING) if currents is not None else _MISSING
    current = table.get({PK: img.key[0], SK: img.key[1]}) if cached is _MISSING else cached
    if current is not None and not is_source(current):
        current = None

    old_derived, new_derived, target = derive(img.old), derive(img.new), derive(current)
    if img.old is not None and old_derived == new_derived == target:
        # Nothing this change implies differs (e.g. a run status update): the summary and the flag only.
        refresh_summary(img, summarised)
        outcome.flag_cleared = clear_flag(current)
        return outcome

    stale: dict[Key, Item] = {**old_derived, **new_derived}
    existing_fts: set[Key] = set()
    for source in _name_sources(img.old, img.new, current):
        for reverse in fts.indexed_postings(source.scope, source.kind, source.entity_id):
            forward, rev = fts.posting_items(source.scope, source.kind, source.entity_id, reverse["level"], reverse["token"])
            for derived in (forward, rev):
                key = (derived[PK], derived[SK])
                stale[key] = derived
                existing_fts.add(key)

    # A posting already stored need not be written again (a rename keeps most trigrams).
    puts = [item for key, item in target.items() if key not in existing_fts]
    deletes = [item for key, item in stale.items() if key not in target]
    outcome.puts, outcome.deletes = len(puts), len(deletes)
    apply(puts, deletes)
    refresh_summary(img, summarised)
    outcome.flag_cleared = clear_flag(current)
    return outcome


def refresh_summary(img: Images, summarised: set[tuple[str, str]] | None) -> None:
    """Rebuild the summary of the run the record's item belongs to (before its flag may be cleared)."""
    run = run_summaries.run_of(img.new or img.old or {})
    if run is None or (summarised is not None and run in summarised):
        return
    run_summaries.rebuild(*run)
    if summarised is not None:
        summarised.add(run)


def _name_sources(*items: Item | None) -> list[NameSource]:
    seen: dict[tuple[str, str, str], NameSource] = {}
    for item in items:
        source = name_source(item) if item else None
        if source is not None:
            seen.setdefault((source.scope, source.kind, source.entity_id), source)
    return list(seen.values())


def apply(puts: list[Item], deletes: list[Item]) -> None:
    """Write so that every forward posting always has its reverse item (cleanup can find it)."""
    def is_forward(item: Item) -> bool:
        return item[ENTITY_TYPE] == "fts_forward"

    def key(item: Item) -> dict[str, str]:
        return {PK: item[PK], SK: item[SK]}

    first_puts = [item for item in puts if not is_forward(item)]
    forward_puts = [item for item in puts if is_forward(item)]
    reverse_deletes = [key(item) for item in deletes if item[ENTITY_TYPE] == "fts_reverse"]
    other_deletes = [key(item) for item in deletes if item[ENTITY_TYPE] != "fts_reverse"]
    if first_puts:
        table.batch_write(puts=first_puts)
    if forward_puts or other_deletes:
        table.batch_write(puts=forward_puts, deletes=other_deletes)
    if reverse_deletes:
        table.batch_write(deletes=reverse_deletes)


def clear_flag(current: Item | None) -> bool:
    """Remove the LSI5 "not indexed yet" flag if the item still is the version just indexed."""
    if not current or current.get(ENTITY_TYPE) not in FLAGGED_TYPES or FLAG_ATTRIBUTE not in current:
        return False
    names = {"#f": FLAG_ATTRIBUTE}
    values: dict[str, Any] = {":f": current[FLAG_ATTRIBUTE]}
    condition = "#f = :f"
    attributes = (_INDEXED_ATTRIBUTE[current[ENTITY_TYPE]], *_SUMMARISED_ATTRIBUTES.get(current[ENTITY_TYPE], ()))
    for i, attribute in enumerate(attributes):
        names[f"#a{i}"] = attribute
        value = current.get(attribute)
        if value is None:
            condition += f" AND attribute_not_exists(#a{i})"
        elif isinstance(value, (str, int)):
            condition += f" AND #a{i} = :a{i}"
            values[f":a{i}"] = value
    try:
        table.update({PK: current[PK], SK: current[SK]}, "REMOVE #f", names=names, values=values, condition=condition)
    except table.ConditionFailed:
        return False  # changed meanwhile: its own stream record will index it and clear the flag
    return True


def record_watermark(created_ms: int) -> None:
    """CONFIG CFG#indexer_watermark: the latest source change time indexed (monotonic; lag reporting)."""
    now = clock.now_millis()
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
