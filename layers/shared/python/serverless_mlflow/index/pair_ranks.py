"""Pair indexes: ``params.p = 'v'`` ORDER BY ``metrics.m``, one key range per param value, in metric order.

Single-key RANK items cannot answer that search cheaply: the top 100 of the 1,000 runs having p = 'v' need
either all 1,000 runs' values of m or a walk of m's order until 100 of them are met. A pair index keeps one
``pair_rank`` item per run having p, keyed by p's value then m's latest value (or "missing"), so the page is
a walk of one key range.

Pairs are opt-in per experiment (``tools/pair_index.py``): every change of m then rewrites one item per
declared pair naming m. A pair's items have a partition of their own (``PRANK#<experiment>#<pair>``), not the
experiment's: a training loop moves them at every indexer batch. The declaration (``pair_index``, ``PX#META``) lists each pair and whether it is
``ready``: backfilled for every run, so searches may use it. The run summary rebuild (``run_summaries``)
writes a run's pair items in the same transaction as its summary, which lists them (``pair_entries``): a
run's pair items always match its summary, and a reader trusts both only while the run has no flagged
item (exactly as for summaries).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from serverless_mlflow.index import rank_items, ranks
from serverless_mlflow.storage import keys, table
from serverless_mlflow.storage.schema import ENTITY, PK, SK
from serverless_mlflow.store.runs import RunView

PAIR_INDEX = ENTITY["pair_index"]
PAIR_RANK = ENTITY["pair_rank"]
# A metric change rewrites at most 2 items per pair (delete + put): with the summary, one transaction.
MAX_PAIRS = 32
BUILDING, READY = "building", "ready"

Item = dict[str, Any]


@dataclass(frozen=True)
class Pair:
    param: str
    metric: str
    state: str = BUILDING

    @property
    def pair_id(self) -> str:
        # Keys up to 250 characters each would not fit one sort key with the value: a digest names the pair.
        return hashlib.sha256(json.dumps([self.param, self.metric]).encode("utf-8")).hexdigest()[:20]

    def as_attribute(self) -> dict[str, str]:
        return {"param": self.param, "metric": self.metric, "state": self.state}


def declaration_key(experiment_id: str) -> dict[str, str]:
    return PAIR_INDEX.key(experiment_id=experiment_id)


def pairs_of(declaration: Item | None) -> list[Pair]:
    return [Pair(p["param"], p["metric"], p.get("state", BUILDING)) for p in (declaration or {}).get("pairs") or []]


def declared(experiment_id: str) -> list[Pair]:
    return pairs_of(table.get(declaration_key(experiment_id)))


def ready_pair(experiment_ids: Iterable[str], param: str, metric: str) -> Pair | None:
    """The (param, metric) pair if every experiment has it backfilled (one GetItem per experiment)."""
    found: Pair | None = None
    for experiment_id in experiment_ids:
        found = next((p for p in declared(experiment_id) if (p.param, p.metric, p.state) == (param, metric, READY)), None)
        if found is None:
            return None
    return found


# --- the items of one run (built with its summary) ----------------------------------------------------------


def entries(experiment_id: str, run_id: str, view: RunView | None, pairs: list[Pair]) -> list[Item]:
    """The pair items of a run, from the run as its range gives it (None: no run, no items)."""
    if view is None:
        return []
    params = {key: str(value) for key, value in view.params.items()}
    metrics = {key: rank_items.metric_value(item["value"]) for key, item in view.metrics.items()}
    out = []
    for pair in pairs:
        if pair.param not in params:
            continue
        value = metrics.get(pair.metric)
        position = ranks.MISSING_KEY if value is None else keys.float64(rank_items.rank_value(value))
        attributes = {"run_id": run_id, "param": pair.param, "metric": pair.metric}
        if value is not None:
            attributes["value"] = repr(value)
        out.append(
            PAIR_RANK.item(
                attributes,
                experiment_id=experiment_id,
                pair_id=pair.pair_id,
                value_key=rank_items.param_value_key(params[pair.param]),
                position=position,
                run_id=run_id,
            )
        )
    return out


def listing(items: list[Item]) -> list[list[str]]:
    """What a summary records of its run's pair items: [partition key, sort key, value] each (value "" when missing)."""
    return sorted([item[PK], item[SK], item.get("value", "")] for item in items)


def changes(experiment_id: str, old_listing: list[list[str]], items: list[Item]) -> tuple[list[Item], list[dict[str, str]]]:
    """(items to put, keys to delete) that turn the pair items an old summary listed into ``items``."""
    had = {(pk, sk): value for pk, sk, value in old_listing}
    puts = [item for item in items if had.get((item[PK], item[SK])) != item.get("value", "")]
    keep = {(item[PK], item[SK]) for item in items}
    deletes = [{PK: pk, SK: sk} for pk, sk in had if (pk, sk) not in keep]
    return puts, deletes


# --- reading ---------------------------------------------------------------------------------------------


def value_range(
    experiment_id: str, pair: Pair, param_value: str, skip: frozenset[str], overrides: tuple[tuple[str, float | None], ...]
) -> ranks.ValueRange:
    """The runs having ``param_value`` in metric order; ``skip``/``overrides``: runs whose pair items may be stale."""
    value_key = rank_items.param_value_key(param_value)
    query = PAIR_RANK.query("by_value", experiment_id=experiment_id, pair_id=pair.pair_id, value_key=value_key)
    return ranks.ValueRange(experiment_id, query.pk_value, query.bound(), skip, overrides, with_missing=True)
