"""Which runs' latest metrics the indexer has not indexed yet: writers mark a run, the indexer unmarks it.

A run's latest metrics live in its own partition (``RUN#<run>``), so a training loop that logs a point per step
no longer writes the experiment's partition per point. Searches still need to know, in one strongly consistent
read per experiment, which runs' RANK items and summaries may be stale: those runs carry a ``run_metrics_marker``
item in the experiment partition, on LSI5 with the other "not indexed yet" flags. A marker is written at most
once per run between two indexer passes, so the experiment partition sees a few write units per run and indexer
batch, whatever the number of points.

The run's ``run_metric_state`` item (``RUN#<run>`` / ``MS``) carries the handshake: ``v`` is bumped by every
metric write that changed a latest value, *after* that write; ``epoch`` is advanced by the indexer *before* it
reads a run's metrics.

**Writer**, around its latest-value writes:

* before (``before_write``, given the state and the marker read with the run item in one BatchGetItem): unless a
  marker of the state's epoch e (or a later one) is there, put one with epoch e. The marker is in place before the
  new values, and a full experiment partition (``table.CollectionFull``) refuses the request before anything is
  written;
* after (``after_write``): ``ADD v 1`` returns the epoch e'. If e' > e (an indexer pass began in between and may
  have read the metrics before this write, then removed the marker), put a marker with epoch e'.

A marker's epoch never goes down (its put is conditional).
**Indexer** (``begin`` / ``retire``), per run and batch: ``ADD epoch 1`` → E, then it reads the run's metrics and
writes the derived items, then deletes the marker on condition that its epoch is below E.

Why a reader that trusts an unmarked run never misses an acknowledged write W (its values written at w, its bump at
b seeing epoch e'): a marker of epoch ≥ e' is present from before b on (W's own, or one found before w with the
epoch read then, which is e' unless a pass began in between: then W put one of epoch e'), and such a marker is
deleted only by a pass that advanced the epoch past e', so after b, hence after w: that pass read W's values and
indexed them before deleting it.

A run that is already marked costs a writer one UpdateItem in the run's own partition (plus the reads it makes
anyway): the experiment partition is written once per run and indexer pass, not per point. A marker put after the
pass that indexed its write is cleaned up by the indexer, which is given the marker's own stream record.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from serverless_mlflow.core import clock
from serverless_mlflow.storage import table
from serverless_mlflow.storage.schema import ENTITY, ENTITY_TYPE, PK, SK

STATE = ENTITY["run_metric_state"]
MARKER = ENTITY["run_metrics_marker"]


def keys(experiment_id: str, run_id: str) -> list[dict[str, str]]:
    """The run's state and marker keys: a writer reads them with the run item (one BatchGetItem)."""
    return [STATE.key(run_id=run_id), MARKER.key(experiment_id=experiment_id, run_id=run_id)]


def before_write(experiment_id: str, run_id: str, state: dict[str, Any] | None, marker: dict[str, Any] | None) -> int:
    """Writers, before writing a run's latest values (``state``, ``marker``: as just read, None if absent): make
    sure a marker of the current epoch is there. Returns that epoch (for ``after_write``)."""
    epoch = int((state or {}).get("epoch", 0))
    if marker is None or int(marker.get("epoch", -1)) < epoch:
        _mark(experiment_id, run_id, epoch)
    return epoch


def after_write(experiment_id: str, run_id: str, ensured: int) -> None:
    """Writers, after a latest value of the run changed (before answering): count the write; re-mark the run if an
    indexer pass began since ``before_write`` (it may have read the metrics before this write)."""
    epoch = int(_count(run_id, "v", "ALL_NEW").get("epoch", 0))
    if epoch > ensured:
        _mark(experiment_id, run_id, epoch)


def read(experiment_id: str, run_id: str) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """(state, marker) of a run, for a writer that does not read them with the run item (one BatchGetItem)."""
    state_key, marker_key = keys(experiment_id, run_id)
    found = {(item[PK], item[SK]): item for item in table.batch_get([state_key, marker_key])}
    return found.get((state_key[PK], state_key[SK])), found.get((marker_key[PK], marker_key[SK]))


def _mark(experiment_id: str, run_id: str, epoch: int) -> None:
    now = clock.now_millis()
    marker = MARKER.item({"run_id": run_id, "epoch": epoch, "changed_at": now}, experiment_id=experiment_id, run_id=run_id, changed_at=now)
    try:
        table.put(marker, condition="attribute_not_exists(pk) OR #e < :e", names={"#e": "epoch"}, values={":e": epoch})
    except table.ConditionFailed:
        pass  # a marker of this epoch or a later one is there


def begin(run_id: str) -> int:
    """Indexer: start a pass over the run's metrics (before reading them); returns the pass's epoch."""
    return int(_count(run_id, "epoch", "UPDATED_NEW")["epoch"])


def _count(run_id: str, counter: str, return_values: str) -> dict[str, Any]:
    """Add one to a counter of the run's state item (created on first use)."""
    state = table.update(
        STATE.key(run_id=run_id),
        "ADD #c :one SET entity_type = :type",
        names={"#c": counter},
        values={":one": 1, ":type": STATE.type_name},
        return_values=return_values,
    )
    return state or {}


def retire(experiment_id: str, run_id: str, epoch: int) -> bool:
    """Indexer: the pass of ``epoch`` wrote everything the run's metrics imply; remove an older marker. True if removed."""
    try:
        table.delete(
            MARKER.key(experiment_id=experiment_id, run_id=run_id),
            condition="attribute_exists(pk) AND #e < :e",
            names={"#e": "epoch"},
            values={":e": epoch},
        )
    except table.ConditionFailed:
        return False  # no marker, or one put after this pass began: its own record brings the indexer back
    return True


def marked_runs(unindexed: Iterable[dict[str, Any]]) -> set[str]:
    """Run ids with a marker among an experiment's LSI5 items."""
    return {item["run_id"] for item in unindexed if item.get(ENTITY_TYPE) == MARKER.type_name}
