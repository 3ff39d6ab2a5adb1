"""Migration step ``traces_v2``: move a live table's layout 1 traces into trace partitions.

Layout 1 kept every trace info (``T#<trace_id>``, with three LSI copies) and every span (``T#<trace_id>#S#<span>``)
in the experiment partition ``EXP#<id>``. Layout 2 keeps an info in its (hour, shard) trace partition and the
spans next to the trace's locator (``TRACE#<trace_id>``); see ``serverless_mlflow.store.traces``.

Online and resumable, while clients keep tracing (the request paths already write layout 2 only, and read
layout 1 as well until this step is recorded done):

* an info moves in one transaction: its layout 2 copy is put, the layout 1 item deleted if it is still the
  version read (its ``rev``), and the locator pointed at the copy (if nothing placed the info meanwhile). A
  change in between fails the transaction and the info is read again;
* spans are copied in transactions that check each layout 1 span still exists (a trace deleted meanwhile gets
  no orphan copies: deletion removes layout 1 spans before it reads layout 2 ones), then the originals go;
* readers read layout 1 before layout 2 (``search``, ``span_items``), so an item moved between the two reads
  is seen once either way.

Running it again continues where it stopped: whatever is left in layout 1 is what remains to move. When no
experiment holds layout 1 trace items any more, the step is recorded in ``CONFIG / CFG#layout``.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "layers" / "shared" / "python"))

from serverless_mlflow.storage import layout, table
from serverless_mlflow.storage.item_size import item_bytes
from serverless_mlflow.storage.schema import ENTITY_TYPE, PK, SK
from serverless_mlflow.store import trace_names, trace_writes
from serverless_mlflow.store import traces as store

STEP = layout.TRACES_V2
MAX_ATTEMPTS = 5
# A transaction holds at most 100 operations and 4 MB: spans (up to ~300 KB each) go in chunks under both.
TRANSACTION_OPERATIONS = 100
TRANSACTION_BYTES = 3 * 1024 * 1024
_SPAN_ATTRIBUTES = ("span", "spill_key", "start_time_unix_nano")


@dataclass
class Progress:
    infos_moved: int = 0
    infos_gone: int = 0  # moved or deleted by a request meanwhile
    spans_moved: int = 0
    spans_gone: int = 0
    experiments: list[str] = field(default_factory=list)


def layout1_infos(experiment_id: str) -> Iterator[dict[str, Any]]:
    return table.iter_query(**store.TRACE_V1.query("by_request_time", experiment_id=experiment_id))


def layout1_items(experiment_id: str) -> Iterator[dict[str, Any]]:
    """Every layout 1 trace item of the experiment (infos and spans), in key order."""
    return table.iter_query(**store.SPAN_V1.query("everything", experiment_id=experiment_id))


def move_info(item: dict[str, Any], progress: Progress) -> None:
    for _ in range(MAX_ATTEMPTS):
        if trace_writes.move_layout1(item):
            progress.infos_moved += 1
            return
        current = table.get({PK: item[PK], SK: item[SK]})
        if current is None:
            progress.infos_gone += 1  # moved by a start_trace, or deleted
            return
        locator = store.locate(item["trace_id"]) or {}
        if locator.get("info_time") is None:
            item = current  # changed since read: move the new version
            continue
        # A start_trace placed the info in layout 2 but has not (yet, or ever: a crash) removed this one: fold
        # this one into it, as start_trace does, so nothing added to it is lost.
        placed = store.read_info(locator, item["trace_id"])
        legacy_key = {PK: current[PK], SK: current[SK]}
        if placed is not None:
            trace_writes.save_info(placed, previous=legacy_key, expect_existing=True)
        else:
            attributes = {k: v for k, v in current.items() if k not in trace_writes.KEY_ATTRIBUTES}
            copy = trace_writes.info_item(attributes)
            trace_names.ensure_for(copy)
            trace_writes.save_info(copy, previous=legacy_key)
            table.update(store.LOCATOR.key(trace_id=item["trace_id"]), "SET info_time = :t", values={":t": int(current["request_time"])})
        progress.infos_moved += 1
        return
    raise RuntimeError(f"trace {item['trace_id']}: its layout 1 info kept changing during the move")


def _span_copy(item: dict[str, Any]) -> dict[str, Any]:
    trace_id = store.SPAN_V1.parse(item[SK], fields=("trace_id",))["trace_id"]
    attributes = {name: item[name] for name in (*_SPAN_ATTRIBUTES, "expires_at") if name in item}
    return store.SPAN.item(attributes, trace_id=trace_id, span_id=store.span_id_of(item))


def _chunks(spans: list[dict[str, Any]]) -> Iterator[list[dict[str, Any]]]:
    chunk: list[dict[str, Any]] = []
    size = 0
    for span in spans:
        bytes_ = item_bytes(table.to_item(span))
        if chunk and (2 * (len(chunk) + 1) > TRANSACTION_OPERATIONS or size + bytes_ > TRANSACTION_BYTES):
            yield chunk
            chunk, size = [], 0
        chunk.append(span)
        size += bytes_
    if chunk:
        yield chunk


def move_spans(spans: list[dict[str, Any]], progress: Progress) -> None:
    """Copy layout 1 spans next to their locators, each only while its original still exists; then delete them."""
    for chunk in _chunks(spans):
        operations = []
        for span in chunk:
            operations.append(table.put_op(_span_copy(span)))
            operations.append(table.check_op({PK: span[PK], SK: span[SK]}, "attribute_exists(pk)"))
        try:
            table.transact(operations)
        except table.ConditionFailed:
            # Some span of the chunk is gone (its trace deleted meanwhile): move the others one by one.
            for span in chunk:
                try:
                    table.transact([table.put_op(_span_copy(span)), table.check_op({PK: span[PK], SK: span[SK]}, "attribute_exists(pk)")])
                except table.ConditionFailed:
                    progress.spans_gone += 1
                    continue
                table.delete({PK: span[PK], SK: span[SK]})
                progress.spans_moved += 1
            continue
        table.batch_write(deletes=[{PK: span[PK], SK: span[SK]} for span in chunk])
        progress.spans_moved += len(chunk)


def migrate_experiment(experiment_id: str, progress: Progress) -> None:
    for info in layout1_infos(experiment_id):
        move_info(info, progress)
    batch: list[dict[str, Any]] = []
    for item in layout1_items(experiment_id):
        if item.get(ENTITY_TYPE) == "trace_spans":
            batch.append(item)
            if len(batch) >= 500:
                move_spans(batch, progress)
                batch = []
    if batch:
        move_spans(batch, progress)
    progress.experiments.append(experiment_id)


def remaining(experiment_ids: Iterable[str]) -> int:
    """Layout 1 trace items (infos and spans) still in these experiments."""
    return sum(1 for e in experiment_ids for item in layout1_items(e) if item.get(ENTITY_TYPE) in ("trace", "trace_spans"))


def run(experiment_ids: list[str], record: bool = True) -> Progress:
    """Move every layout 1 trace of ``experiment_ids`` (every experiment of the table); record the step when
    none is left."""
    progress = Progress()
    for experiment_id in experiment_ids:
        migrate_experiment(experiment_id, progress)
    if record and remaining(experiment_ids) == 0:
        layout.record_steps([STEP])
    return progress
