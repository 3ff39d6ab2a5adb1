"""Writing trace aggregates: rollup deltas and contribution records, exact under replays, races and faults.

A trace's ``Change`` (``trace_aggregates``) moves its shares of rollup items from what its record lists to its
target. Each transaction applies some shares to the rollup items (read once, written with their revision as
condition) and replaces the record with what is then applied (conditioned on its revision), so the record
always equals what the rollups hold of the trace: a replay or a second indexer re-derives the target, finds
the rest still to move (nothing, once done) and never counts twice.

* Traces whose change fits one transaction are packed together, by hour, up to ``MAX_OPERATIONS`` operations:
  their shares of the same rollup item (the current hour's and minute's, moved by every trace) make one write.
  A pack puts the traces it aggregates for the first time on one rollup shard, the next in turn (``rollups``).
* A trace whose change does not fit (a 1,000-span trace with as many span names moves over a thousand items)
  is applied alone, in steps of at most ``MAX_OPERATIONS``: after each, its record lists the shares applied so
  far; the signature and the record's final attributes come with the last step.
* A conflict (a condition failed: another indexer moved a record or an item) re-reads the traces of the pack
  and applies them one by one. Any other failure does the same, and a trace that fails alone is reported
  (``Outcome.failed``): the indexer reports only its records to Lambda, every other trace is written.
"""

from __future__ import annotations

import itertools
import logging
import os
import random
import threading
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from serverless_mlflow.core import parallel
from serverless_mlflow.index.trace_aggregates import MAX_OPERATIONS, RECORD, Change, Share, _change, encode_shares, load, share
from serverless_mlflow.index.trace_metrics import rollups
from serverless_mlflow.storage import table
from serverless_mlflow.storage.schema import PK, ROLLUP_SHARDS, SK, TRACE_BUCKET_MS

log = logging.getLogger(__name__)
MAX_ATTEMPTS = 8
# Traces read (in parallel) before their writes are packed into transactions: bounds the spans held in memory
# (a deployed batch of 1,000 records names at most 1,000 traces: read in one window).
LOAD_WINDOW = 1000
# A record past this many bytes (compressed) would not fit an item with its keys: the trace fails alone.
RECORD_MAX_BYTES = 350 * 1024

# Shards in turn from a random start: one process spreads its transactions evenly, and processes (concurrent
# Lambda invocations) start apart.
_shards = itertools.count(random.randrange(ROLLUP_SHARDS))
_longest_lock = threading.Lock()
_longest_written: dict[tuple[str, str], int] = {}  # (table, experiment) -> the longest duration this process wrote


@dataclass
class Outcome:
    changed: int = 0
    failed: set[str] = field(default_factory=set)
    error: BaseException | None = None
    deferred: set[str] = field(default_factory=set)  # traces in progress never aggregated, left for later (``defer``)


def refresh(traces: Iterable[str] | Mapping[str, bool], defer: bool = False) -> Outcome:
    """Rebuild the aggregates of these traces (trace id -> whether its info changed: ``traces_of``; a plain
    iterable counts every info as changed). Traces are read ``LOAD_WINDOW`` at a time, in parallel. ``defer``:
    traces in progress that were never aggregated are not, but listed in ``Outcome.deferred`` (``load``)."""
    info_changed = dict(traces) if isinstance(traces, Mapping) else dict.fromkeys(traces, True)
    pending = sorted(info_changed)
    outcome = Outcome()
    while pending:
        window, pending = pending[:LOAD_WINDOW], pending[LOAD_WINDOW:]
        changes: list[Change] = []
        found_changes = parallel.parallel_map(lambda t: _guarded_change(t, info_changed, defer), window)
        for trace_id, found in zip(window, found_changes, strict=True):
            if isinstance(found, BaseException):
                _failed(outcome, trace_id, found)
            elif found is DEFERRED:
                outcome.deferred.add(trace_id)
            elif isinstance(found, Change):
                changes.append(found)
        singles = sorted((c for c in changes if _fits(c)), key=_hour_order)
        for pack in _packs(singles):
            try:
                _commit(pack)
                outcome.changed += len(pack)
                continue
            except table.ConditionFailed:
                pass  # another indexer moved a record or an item meanwhile: each trace again, with fresh reads
            except Exception as error:
                log.warning("trace aggregates: a pack of %d traces failed (%s); writing them one by one", len(pack), error)
            for change in pack:
                _one(change.trace_id, info_changed, outcome)
        for change in changes:
            if not _fits(change):
                _one(change.trace_id, info_changed, outcome)
    return outcome


DEFERRED = object()  # ``_guarded_change``: the trace was left for later


def _guarded_change(trace_id: str, info_changed: Mapping[str, bool], defer: bool) -> Change | BaseException | object | None:
    try:
        state = load(trace_id, info_changed.get(trace_id, True), defer=defer)
        return DEFERRED if state.deferred else _change(state)
    except Exception as error:
        return error


def _failed(outcome: Outcome, trace_id: str, error: BaseException) -> None:
    log.error("trace aggregates of %s failed: %r", trace_id, error)
    outcome.failed.add(trace_id)
    outcome.error = error


def _one(trace_id: str, info_changed: Mapping[str, bool], outcome: Outcome) -> None:
    try:
        outcome.changed += _refresh_one(trace_id, info_changed.get(trace_id, True))
    except Exception as error:
        _failed(outcome, trace_id, error)


def _refresh_one(trace_id: str, info_changed: bool) -> int:
    """Read the trace afresh and apply its change, in steps if it does not fit one transaction."""
    for _ in range(MAX_ATTEMPTS):
        change = _change(load(trace_id, info_changed))
        if change is None:
            return 0
        try:
            _apply_in_steps(change)
        except table.ConditionFailed:
            continue  # another indexer moved the record or an item meanwhile: read again
        return 1
    raise RuntimeError(f"trace aggregates of {trace_id} kept changing while they were written")


def _fits(change: Change) -> bool:
    return 1 + len(change.signature_ops) + len(change.moved) <= MAX_OPERATIONS


def _apply_in_steps(change: Change) -> None:
    if not change.has_shard:
        change.shard = _next_shard()
    room = MAX_OPERATIONS - 1 - len(change.signature_ops)
    while True:
        sks, last = change.moved[:room], len(change.moved) <= room
        operations = _record_operations(change, sks, last) + _rollup_operations([(change, sks)])
        table.transact(operations)
        if last:
            _longest([change])
            return
        # What the record now lists; the next step goes on from there.
        record = dict(change.state.record or {}, rev=int((change.state.record or {}).get("rev") or 0) + 1, shard=change.shard)
        change.state.record, change.has_shard = record, True
        change.old = _applied(change, sks)
        change.moved = change.moved[room:]


def _commit(pack: list[Change]) -> None:
    """One transaction for the pack's changes (each fits whole); the new traces share one random shard."""
    shard = _next_shard()
    for change in pack:
        if not change.has_shard:
            change.shard = shard
    operations = [op for c in pack for op in _record_operations(c, c.moved, last=True)]
    table.transact(operations + _rollup_operations([(c, c.moved) for c in pack]))
    _longest(pack)


def _next_shard() -> int:
    return next(_shards) % ROLLUP_SHARDS


def _applied(change: Change, sks: list[str]) -> dict[str, Share]:
    """The record's shares once ``sks`` have moved to their target."""
    shares = dict(change.old)
    for sk in sks:
        if sk in change.new:
            shares[sk] = share(change.new[sk])
        else:
            shares.pop(sk, None)
    return shares


def _record_operations(change: Change, sks: list[str], last: bool) -> list[dict[str, Any]]:
    """The record's replacement after ``sks`` moved (and, with the last step, the signature writes)."""
    record = change.state.record
    condition, values = ("rev = :rev", {":rev": record["rev"]}) if record else ("attribute_not_exists(pk)", None)
    shares = _applied(change, sks)
    key = RECORD.key(trace_id=change.trace_id)
    if last and not shares and not change.attributes["signature_key"]:
        return [table.delete_op(key, condition=condition, values=values)] if record else []
    attributes = change.attributes if last else {name: (record or {}).get(name) for name in change.attributes}
    attributes = {**attributes, "experiment_id": change.experiment_id}
    encoded = encode_shares(shares)
    if len(encoded) > RECORD_MAX_BYTES:
        raise ValueError(f"the contribution record of trace {change.trace_id} would be {len(encoded)} bytes")
    rev = int((record or {}).get("rev") or 0) + 1
    item = RECORD.item({**attributes, "parts_z": encoded, "shard": change.shard, "rev": rev}, trace_id=change.trace_id)
    return [table.put_op(item, condition=condition, values=values), *(change.signature_ops if last else [])]


Move = tuple[int, dict[str, list[float]], int]  # (rows, values per metric, sign) of one share moving


def _rollup_operations(moves: list[tuple[Change, list[str]]]) -> list[dict[str, Any]]:
    """The rollup items the moves touch, read once and written once with their revision as condition."""
    deltas: dict[tuple[str, int | None, str], list[Move]] = {}
    templates: dict[tuple[str, int | None, str], rollups.Part] = {}
    for change, sks in moves:
        if change.experiment_id is None:
            continue
        for sk in sks:
            where = (change.experiment_id, change.shard, sk)
            entry = deltas.setdefault(where, [])
            if (old := change.old.get(sk)) is not None:
                entry.append((old[0], old[1], -1))
            if (new := change.new.get(sk)) is not None:
                entry.append((new.count, new.values, +1))
                templates.setdefault(where, new)
    if not deltas:
        return []
    keys = [{PK: rollups.partition(e, shard), SK: sk} for e, shard, sk in deltas]
    current = {(item[PK], item[SK]): item for item in table.batch_get(keys)}
    operations = []
    for (experiment_id, shard, sk), entry in deltas.items():
        pk = rollups.partition(experiment_id, shard)
        item = current.get((pk, sk))
        if item is None and (experiment_id, shard, sk) not in templates:
            log.warning("rollup item %s %s is missing: nothing to take a share out of", pk, sk)
            continue
        rollup = rollups.Rollup.of_item(item) if item else rollups.Rollup.of_part(templates[(experiment_id, shard, sk)])
        for count, values, sign in sorted(entry, key=lambda m: -m[2]):  # additions first: a value moved stays countable
            rollup.apply_share(count, values, sign)
        slice_id = rollups.ROLLUP.parse(sk, fields=("slice",))["slice"]
        condition, values = ("rev = :rev", {":rev": item["rev"]}) if item else ("attribute_not_exists(pk)", None)
        if rollup.count <= 0 and not rollup.metrics:
            if item:
                operations.append(table.delete_op({PK: pk, SK: sk}, condition=condition, values=values))
        else:
            rev = int((item or {}).get("rev") or 0) + 1
            operations.append(table.put_op(rollup.item(experiment_id, shard, slice_id, rev), condition=condition, values=values))
    return operations


def _longest(changes: list[Change]) -> None:
    """The experiments' longest trace durations (monotone: a replay or a race only ever raises it). A duration
    this process already wrote (or saw refused) for the experiment is not written again."""
    longest: dict[str, int] = {}
    for change in changes:
        info = change.state.info
        if info and info.get("execution_duration") is not None and change.experiment_id:
            longest[change.experiment_id] = max(longest.get(change.experiment_id, 0), int(info["execution_duration"]))
    for experiment_id, duration in longest.items():
        seen = (os.environ.get("TABLE_NAME", ""), experiment_id)
        with _longest_lock:
            if _longest_written.get(seen, -1) >= duration:
                continue
        try:
            table.update(
                rollups.META.key(experiment_id=experiment_id),
                "SET max_duration_ms = :d, entity_type = :t",
                values={":d": duration, ":t": rollups.META.name},
                condition="attribute_not_exists(max_duration_ms) OR max_duration_ms < :d",
            )
        except table.ConditionFailed:
            pass
        with _longest_lock:
            _longest_written[seen] = max(_longest_written.get(seen, -1), duration)


def _hour_order(change: Change) -> tuple[str, int, str]:
    info = change.state.info or {}
    return (change.experiment_id or "", int(info.get("request_time") or 0) // TRACE_BUCKET_MS, change.trace_id)


def _packs(changes: list[Change]) -> Iterator[list[Change]]:
    """Consecutive changes grouped while their writes (records, signatures, distinct rollup items) fit one
    transaction (the traces new to the rollups share the pack's shard: their items count once)."""
    pack: list[Change] = []
    keys: set[tuple[str | None, object, str]] = set()
    operations = 0
    for change in changes:
        shard: object = change.shard if change.has_shard else "new"
        own = {(change.experiment_id, shard, sk) for sk in change.moved}
        count = 1 + len(change.signature_ops)
        if pack and operations + count + len(keys | own) > MAX_OPERATIONS:
            yield pack
            pack, keys, operations = [], set(), 0
        pack.append(change)
        keys |= own
        operations += count
    if pack:
        yield pack


def refresh_or_raise(traces: Iterable[str] | dict[str, bool]) -> int:
    """Rebuild the aggregates of these traces; returns how many changed. Raises if any trace failed (tools that
    rebuild in bulk; the indexer uses ``refresh``, which reports the failed traces instead)."""
    outcome = refresh(traces)
    if outcome.failed:
        raise RuntimeError(f"trace aggregates of {sorted(outcome.failed)} could not be written") from outcome.error
    return outcome.changed
