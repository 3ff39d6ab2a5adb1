"""A batch of stream records, worked in units: one per run (every record of its items, latest metrics and marker),
one per other source item. Units run in parallel; a unit's steps run in order:

1. a run whose latest metrics have records: ``metric_marks.begin`` (its pass's epoch), before anything is read;
2. the current version of every source item of the unit (one BatchGetItem for the whole batch, after step 1);
3. each source item once: its RANK/FTS items (``logic.index_item``);
4. the run's digest of its latest values, then its summary (once per run);
5. the items' flags, then the run's marker (``metric_marks.retire``): only after what they vouch for is written.

A record whose images cannot be derived fails alone (the others are indexed); a unit that fails reports every
one of its records. Lambda retries from the lowest failed record: everything is idempotent.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from serverless_mlflow import metric_marks, parallel, run_metrics, run_summaries
from serverless_mlflow.schema import ENTITY_TYPE

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
    # Read after every epoch began: a metric write bumped after its pass began is not missed (metric_marks).
    currents = logic.prefetch([key for unit in units for key in unit.items] + list(digests.values()))

    def work(unit: Unit) -> None:
        outcomes = [
            _merged(records, logic.index_item(key, records, unit.stale[key], currents.get(key))) for key, records in unit.items.items()
        ]
        if unit.run is not None:
            if unit.run in epochs:
                logic.metric_pass(*unit.run, epochs[unit.run], currents.get(digests[unit.run]))
            logic.refresh_summary(unit.run)
        for key, outcome in zip(unit.items, outcomes, strict=True):
            outcome.flag_cleared = logic.clear_flag(currents.get(key))
        if unit.run is not None and unit.run in epochs:
            metric_marks.retire(*unit.run, epochs[unit.run])
        result.outcomes.extend(outcomes)

    _each(units, list(units), work, result)
    return result


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
