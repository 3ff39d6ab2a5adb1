"""Declare, backfill and drop pair indexes: ``params.<p> = '<v>'`` ORDER BY ``metrics.<m>`` at any experiment size.

    python -m tools.pair_index add    --experiment 12 --param lr --metric val_loss
    python -m tools.pair_index remove --experiment 12 --param lr --metric val_loss
    python -m tools.pair_index list   --experiment 12

Without a pair index, that search reads every run having p = 'v' (their values of m, then a page of runs):
fine for thousands of runs, about 20 items per returned run at 100,000. With one it reads about the page.
It costs writes: every change of m's latest value (or a new p) rewrites one item per pair naming it.

``add`` records the pair as ``building`` (from then on every run summary rebuild writes the run's pair item),
rebuilds every run of the experiment (each on condition of its summary's revision, so it is safe while
clients log and the indexer runs), then marks the pair ``ready``: searches use it from then on. Run it
again to resume an interrupted backfill. ``remove`` drops the pair from the declaration (searches stop
using it at once) and deletes its items the same way.

An operator's tool like ``tools.admin``: runs against ``TABLE_NAME`` at ``DYNAMODB_ENDPOINT_URL`` (unset = AWS).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "layers" / "shared" / "python"))

from serverless_mlflow.core import parallel
from serverless_mlflow.index import pair_ranks, run_summaries
from serverless_mlflow.index.pair_ranks import BUILDING, MAX_PAIRS, READY, Pair
from serverless_mlflow.storage import table
from serverless_mlflow.store import runs as store

_WORKERS = 16


def _write_pairs(experiment_id: str, change: Any) -> list[Pair]:
    """Apply ``change(pairs) -> pairs`` to the declaration, on condition that nobody changed it meanwhile."""
    key = pair_ranks.declaration_key(experiment_id)
    while True:
        current = table.get(key)
        pairs = change(pair_ranks.pairs_of(current))
        if len(pairs) > MAX_PAIRS:
            raise SystemExit(f"at most {MAX_PAIRS} pair indexes per experiment")
        rev = int(current["rev"]) if current else 0
        item = pair_ranks.PAIR_INDEX.item({"pairs": [p.as_attribute() for p in pairs], "rev": rev + 1}, experiment_id=experiment_id)
        condition, names, values = (
            ("attribute_not_exists(pk)", None, None) if current is None else ("#rev = :rev", {"#rev": "rev"}, {":rev": rev})
        )
        try:
            table.put(item, condition, names, values)
            return pairs
        except table.ConditionFailed:
            continue


def _rebuild_all(experiment_id: str) -> int:
    """Rebuild every run's summary and pair items; the number of runs."""
    run_ids = [item["run_id"] for item in table.iter_query(**store.RUN.query("by_start_time", experiment_id=experiment_id))]
    parallel.parallel_map(lambda run_id: run_summaries.rebuild(experiment_id, run_id), run_ids, workers=_WORKERS)
    return len(run_ids)


def add(experiment_id: str, param: str, metric: str) -> int:
    """Declare and backfill a pair; the number of runs rebuilt."""
    _write_pairs(
        experiment_id, lambda pairs: [p for p in pairs if (p.param, p.metric) != (param, metric)] + [Pair(param, metric, BUILDING)]
    )
    runs = _rebuild_all(experiment_id)
    _write_pairs(
        experiment_id, lambda pairs: [Pair(p.param, p.metric, READY) if (p.param, p.metric) == (param, metric) else p for p in pairs]
    )
    return runs


def remove(experiment_id: str, param: str, metric: str) -> int:
    _write_pairs(experiment_id, lambda pairs: [p for p in pairs if (p.param, p.metric) != (param, metric)])
    return _rebuild_all(experiment_id)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.pair_index", description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=("add", "remove", "list"))
    parser.add_argument("--experiment", required=True, help="experiment id")
    parser.add_argument("--param", help="param key (add, remove)")
    parser.add_argument("--metric", help="metric key (add, remove)")
    args = parser.parse_args(argv)
    if args.command == "list":
        for pair in pair_ranks.declared(args.experiment):
            print(f"params.{pair.param} x metrics.{pair.metric}: {pair.state}")
        return 0
    if not args.param or not args.metric:
        parser.error("--param and --metric are required")
    runs = (add if args.command == "add" else remove)(args.experiment, args.param, args.metric)
    print(f"{args.command}: params.{args.param} x metrics.{args.metric} in experiment {args.experiment}, {runs} runs rebuilt")
    return 0


if __name__ == "__main__":
    sys.exit(main())
