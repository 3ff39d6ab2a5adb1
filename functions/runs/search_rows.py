"""Run rows for search plans: the entity dicts the search package evaluates, and the reads that fill them."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, TypeVar

from serverless_mlflow.core import parallel
from serverless_mlflow.core.errors import MlflowError
from serverless_mlflow.index import run_summaries
from serverless_mlflow.index.rank_filters import Flagged
from serverless_mlflow.store import runs as store
from serverless_mlflow.store.runs import RunView

DATA_READ_WORKERS = 16
_In = TypeVar("_In")
_Out = TypeVar("_Out")


def search_entity(view: RunView) -> dict[str, Any]:
    """The run dict shape the search package evaluates (see ``serverless_mlflow.search``)."""
    metrics = {}
    for key, item in view.metrics.items():
        metrics[key] = math.nan if item.get("is_nan") else float(item["value"])
    datasets = []
    for entry in view.dataset_inputs:
        context = next((t["value"] for t in entry["tags"] if t["key"] == "mlflow.data.context"), None)
        datasets.append({"name": entry["dataset"]["name"], "digest": entry["dataset"]["digest"], "context": context})
    return {
        "info": info(view.info),
        "metrics": metrics,
        "params": view.params,
        "tags": view.tags,
        "datasets": datasets,
        "_view": view,
    }


INFO_FIELDS = ("run_id", "run_name", "experiment_id", "user_id", "status", "start_time", "end_time", "artifact_uri", "lifecycle_stage")


def info(item: dict[str, Any]) -> dict[str, Any]:
    return {name: item.get(name) for name in INFO_FIELDS}


def parallel_map(fn: Callable[[_In], _Out], inputs: list[_In]) -> list[_Out]:
    # A page of runs is many small queries: more in flight than the layer's default.
    return parallel.parallel_map(fn, inputs, workers=DATA_READ_WORKERS)


def read_runs(run_ids: list[str]) -> list[RunView]:
    """Runs by id, with their data (a run deleted for good since an index named it is skipped)."""

    def read(run_id: str) -> RunView | None:
        try:
            return store.read_run(run_id)
        except MlflowError:
            return None

    return [view for view in parallel_map(read, run_ids) if view is not None]


def attach_views(page: list[dict[str, Any]], flagged: Flagged) -> None:
    """Give each entity of a page (carrying its run item as ``_item``) its run's data as ``_view``: the run
    summaries of unflagged runs in one BatchGetItem, the others' ranges (``run_summaries.read``).

    When every one of those run items carries its LSI5 flag and the request has not read the LSI5 items yet (a walk
    of the run items by start time over a sweep logged a moment ago), every summary is stale and the runs are read
    from their ranges anyway: the rest of each range around the run item in hand, and no LSI5 Query, which would read
    every flagged run item of the experiments again (200 flagged runs on one page: a full read, not 1.1)."""
    wanting = [e for e in page if "_view" not in e]
    if not wanting:
        return
    items = [e["_item"] for e in wanting]
    if not flagged.loaded and all(run_summaries.FLAG_ATTRIBUTE in item for item in items):
        views = store.read_runs_of_items(items)
    else:
        views = read_views([(item["experiment_id"], item["run_id"]) for item in items], flagged)
    for entity in page:
        if "_view" not in entity:
            entity["_view"] = views[entity["_item"]["run_id"]]


def read_views(runs: list[tuple[str, str]], flagged: Flagged) -> dict[str, RunView]:
    """(experiment id, run id) -> the run with its data, by run id (runs that no longer exist are left out)."""
    if "whole" not in flagged.derived:
        unindexed = flagged.all_items()
        flagged.derived["flagged"] = run_summaries.flagged_runs(unindexed)
        flagged.derived["whole"] = run_summaries.whole_on_lsi5(unindexed)
    return run_summaries.read(runs, flagged.derived["flagged"], flagged.derived["whole"], flagged.latest)
