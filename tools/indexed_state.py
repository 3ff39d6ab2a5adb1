"""Runs written directly in their indexed state, for benchmarks that load thousands of runs without the API.

The items come from the same schema builders the API and the indexer use: the run item, its params and tags (no
"not yet indexed" flag), its latest metric values in its partition, the indexer's digest of them in the run's range,
its summary, its pair index items, and the RANK items of the keys asked for (``derived.derive``, exactly what the
indexer writes). Loading them with BatchWriteItem is hours faster than the API's transactions at 100,000 runs.
"""

from __future__ import annotations

from collections.abc import Container, Iterable
from typing import Any

from serverless_mlflow.index import derived, pair_ranks, run_summaries
from serverless_mlflow.store import run_metrics
from serverless_mlflow.store import runs as store

Item = dict[str, Any]


def run_items(
    info: dict[str, Any],
    metrics: dict[str, float],
    params: dict[str, str] | None = None,
    tags: dict[str, str] | None = None,
    pairs: Iterable[pair_ranks.Pair] = (),
    ranked: Container[str] | None = None,
) -> list[Item]:
    """Every item of one run in its indexed state (``ranked``: the keys whose RANK items to write; None: all)."""
    experiment_id, run_id = info["experiment_id"], info["run_id"]
    run = store.run_item(info)
    run.pop(derived.FLAG_ATTRIBUTE, None)  # indexed, as the indexer leaves it
    sources: list[Item] = []
    for key, value in (params or {}).items():
        sources.append(store.PARAM.item({"key": key, "value": value}, experiment_id=experiment_id, run_id=run_id, key=key, changed_at=None))
    for key, value in (tags or {}).items():
        sources.append(store.RUN_TAG.item({"key": key, "value": value}, experiment_id=experiment_id, run_id=run_id, key=key))
    latest = [run_metrics.latest_item(experiment_id, run_id, {"key": k, "value": v, "timestamp": 1, "step": 0}) for k, v in metrics.items()]
    run_range = sorted(
        [run, *sources, *([run_metrics.digest_item(experiment_id, run_id, latest)] if latest else [])], key=lambda i: i["sk"]
    )
    views = store.assemble_runs(run_range)
    pair_items = pair_ranks.entries(experiment_id, run_id, views[0] if views else None, list(pairs))
    items = [*run_range, *latest, store.RUN_LOCATOR.item({"experiment_id": experiment_id}, run_id=run_id)]
    items.append(run_summaries.summary_item(experiment_id, run_id, run_range, 1, pair_items))
    items.extend(pair_items)
    for source in [*sources, *latest]:
        if ranked is None or source["key"] in ranked:
            items.extend(derived.derive(source).values())
    return items
