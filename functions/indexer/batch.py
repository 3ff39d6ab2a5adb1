"""A batch of stream records, worked in units: one per run (every record of its items, latest metrics and marker),
one per other source item. Units run in parallel, in steps that every unit ends before the next begins:

1. a run whose latest metrics have records: ``metric_marks.begin`` (its pass's epoch), before anything is read;
2. the current version of every source item, the runs' digests and summaries and their experiments' pair
   declarations: one BatchGetItem per 100 keys for the whole batch, after step 1;
3. each source item once: its RANK/FTS items (``logic.index_item``), and the run's digest of its latest values,
   planned, not written;
4. the whole batch's derived writes at once, coalesced (one intent per key, the last in stream order): a few
   25-item BatchWriteItems for the batch instead of some per source item (FTS postings in two steps: a forward
   posting never exists without its reverse item);
5. per run its summary (from the summary read in step 2, re-read only if another rebuild moved it on); then
   the items' flags (conditional, one by one) and the run's marker (``metric_marks.retire``): only after what
   they vouch for is written.

A record whose images cannot be derived fails alone (the others are indexed); a unit that fails reports every
one of its records; if step 4 fails every unit's records are reported (nothing was cleared). Lambda retries
from the lowest failed record: everything is idempotent.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from serverless_mlflow.core import parallel
from serverless_mlflow.index import metric_marks, pair_ranks, run_summaries
from serverless_mlflow.storage.schema import ENTITY_TYPE
from serverless_mlflow.store import run_metrics

from . import logic
from .logic import Images, Item, Key, Outcome

log = logging.getLogger(__name__)
UNIT_WORKERS = 8

Run = tuple[str, str]  # (experiment id, run id)


@dataclass
class Unit:
    run: Run | None  # None: a source item outside any run (an experiment, a model, a trace)
    items: dict[Key, list[Images]] = field(default_factory=dict)
    stale: dict[Key, dict[Key, Item]] = field(default_factory=dict)
    metric_pass: bool = False  # the run's latest metrics (or its marker) have records

    @property
    def sequences(self) -> list[str]:
        return [img.sequence for records in self.items.values() for img in records]


@dataclass
class BatchResult:
    failures: list[str] = field(default_factory=list)  # sequence numbers
    outcomes: list[Outcome] = field(default_factory=list)


def _unit_of(img: Images) -> tuple[Run | None, bool]:
    """(the run a record belongs to, whether it starts the run's metric pass)."""
    item = img.new or img.old or {}
    run = run_summaries.run_of(item)
    kind = item.get(ENTITY_TYPE)
    metric = kind == metric_marks.MARKER.type_name or (kind == run_metrics.LATEST.type_name and not run_metrics.is_legacy_latest(item))
    return run, metric


def plan(records: list[dict[str, Any]], result: BatchResult) -> list[Unit]:
    """Group a batch's relevant records into units (records that cannot be read or derived fail alone)."""
    units: dict[Any, Unit] = {}
    for record in records:
        try:
            img = logic.images(record)
            if not img.relevant:
                result.outcomes.append(Outcome(created_ms=img.created_ms))
                continue
            stale = logic.stale_of(img)
            run, metric = _unit_of(img)
        except Exception:
            log.exception("unreadable stream record")
            result.failures.append(str((record.get("dynamodb") or {}).get("SequenceNumber", "")))
            continue
        unit = units.setdefault(run if run is not None else img.key, Unit(run))
        unit.items.setdefault(img.key, []).append(img)
        unit.stale.setdefault(img.key, {}).update(stale)
        unit.metric_pass |= metric
    return list(units.values())


def process(records: list[dict[str, Any]]) -> BatchResult:
    result = BatchResult()
    units = plan(records, result)
    epochs: dict[Run, int] = {}

    def begin(unit: Unit) -> None:
        assert unit.run is not None
        epochs[unit.run] = metric_marks.begin(unit.run[1])

    _each(units, [u for u in units if u.metric_pass], begin, result)
    digests = {run: _digest_key(*run) for run in epochs}
    runs = [unit.run for unit in units if unit.run is not None]
    summaries = [_summary_key(*run) for run in runs]
    declarations = [_declaration_key(run[0]) for run in runs]
    # Read after every epoch began: a metric write bumped after its pass began is not missed (metric_marks).
    # Summaries are listed before the pair declarations: each is read no later than its declaration
    # (run_summaries.rebuild), whichever of the 100-key BatchGetItems they fall in.
    currents = logic.prefetch([key for unit in units for key in unit.items] + list(digests.values()) + summaries + declarations)
    planned: dict[int, tuple[list[Outcome], logic.Writes]] = {}

    def derive(unit: Unit) -> None:
        writes = logic.Writes()
        outcomes = [
            _merged(records, logic.index_item(key, records, unit.stale[key], currents.get(key), writes))
            for key, records in unit.items.items()
        ]
        if unit.run is not None and unit.run in epochs:
            logic.metric_pass(*unit.run, currents.get(digests[unit.run]), writes)
        planned[id(unit)] = (outcomes, writes)

    _each(units, list(units), derive, result)
    # Every unit's derived writes at once (a few BatchWriteItems for the batch, not some per item), then the
    # metric keys their RANK items are under, listed for their experiments (once per batch and key). If either
    # fails, every unit's records are reported (nothing was cleared; the replay is idempotent).
    writes = logic.Writes()
    for unit in units:
        writes.merge(planned[id(unit)][1])
    metric_keys = {o.metric_key for unit in units for o in planned[id(unit)][0] if o.metric_key is not None}
    try:
        logic.apply(writes)
        logic.register_metric_keys(metric_keys)
    except Exception:
        log.exception("writing the derived items of %d units failed", len(units))
        for unit in units:
            result.failures.extend(unit.sequences)
        return result

    def finish(unit: Unit) -> None:
        outcomes = planned[id(unit)][0]
        if unit.run is not None:
            logic.refresh_summary(unit.run, currents)
        for key, outcome in zip(unit.items, outcomes, strict=True):
            outcome.flag_cleared = logic.clear_flag(currents.get(key))
        if unit.run is not None and unit.run in epochs:
            metric_marks.retire(*unit.run, epochs[unit.run])
        result.outcomes.extend(outcomes)

    _each(units, list(units), finish, result)
    return result


def _summary_key(experiment_id: str, run_id: str) -> Key:
    key = run_summaries.key(experiment_id, run_id)
    return key["pk"], key["sk"]


def _declaration_key(experiment_id: str) -> Key:
    key = pair_ranks.declaration_key(experiment_id)
    return key["pk"], key["sk"]


def _digest_key(experiment_id: str, run_id: str) -> Key:
    key = run_metrics.DIGEST.key(experiment_id=experiment_id, run_id=run_id)
    return key["pk"], key["sk"]


def _merged(records: list[Images], outcome: Outcome) -> Outcome:
    created = [img.created_ms for img in records if img.created_ms is not None]
    outcome.created_ms = max(created) if created else None
    return outcome


def _each(units: list[Unit], chosen: list[Unit], fn: Callable[[Unit], None], result: BatchResult) -> None:
    """``fn`` for each chosen unit, in parallel; a failed unit's records are failures (and leave ``units``)."""

    def guarded(unit: Unit) -> bool:
        try:
            fn(unit)
        except Exception:
            log.exception("indexing failed for %s", unit.run or next(iter(unit.items), None))
            return False
        return True

    for unit, ok in zip(chosen, parallel.parallel_map(guarded, chosen, workers=UNIT_WORKERS), strict=True):
        if not ok:
            result.failures.extend(unit.sequences)
            units.remove(unit)
