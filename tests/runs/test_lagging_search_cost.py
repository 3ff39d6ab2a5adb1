"""Issue 39 item 4: an exact search while the indexer lags reads at most one full read of the runs it considers.

A sweep logged a moment ago has every run flagged (LSI5) and marked (metrics): the indexed plans read the flagged
items, then used to read every flagged run's range as a candidate on top (1.75 full reads; a filter every run
passes, 1.9). Now a run none of whose items was indexed yet is assembled from the flagged items already read, and
a latest value read to decide is not read again. The runs are written in-process and the stream is not drained,
so the indexer has seen none of them, as right after a sweep deployed.
"""

from __future__ import annotations

from typing import Any

import pytest
from runs import data, lifecycle, search

from serverless_mlflow.store import runs as store
from tests.runs.test_costs import _experiment, _measure

pytestmark = pytest.mark.e2e

RUNS = 200
FILTERS = (
    "metrics.acc > 0.99",
    "params.seed = '17'",
    "params.lr = '3'",
    "tags.team = 'a' and metrics.acc > 0.98",
    "params.lr LIKE '1%' and metrics.loss < 0.5",
    "metrics.acc >= 0.5 and metrics.loss > 0.4",
)
# Reading a matching flagged run whole for the page: its range and its latest metrics (6 + 2 items here).
PER_MATCH = 8
# Filters that most or all runs pass: every run is read whole, and that must not cost more than reading them all
# once. A run still whole on LSI5 (no summary yet) is assembled from the LSI5 items the search read already, and a
# latest value read to decide a metric term is not read again with the rest of the run's partition.
NON_SELECTIVE = (
    "metrics.acc >= 0.0",
    "metrics.loss <= 1",
    "params.lr LIKE '%'",
    "tags.team != 'zzz'",
    "params.seed LIKE '%' and metrics.acc >= 0",
)
# Ordered searches and walks of the run items: (filter, order, max_results). A walk of the order key's RANK items and
# marked values reads the runs once. A walk of the run items by start time (the start-time plan; the rank plan's runs
# lacking the key) used to read each flagged run's item twice, on that index and on LSI5 (1,801 items): a page whose
# run items are all flagged reads the rest of each run's range around its item instead of the LSI5 items, and a
# rank plan that finds every run it considers flagged reads each once, whole. A latest value read to decide a term
# and another read to order are both kept (2,001 before).
ORDERED = (
    ("", ["metrics.acc DESC"], 100),
    ("metrics.loss <= 1", ["metrics.loss"], 1000),
    ("metrics.acc >= 0", ["params.lr DESC"], 1000),
    ("metrics.acc >= 0", ["metrics.loss"], 1000),
    ("", ["metrics.acc DESC"], 1000),
    ("", ["metrics.acc"], 150),
    ("", ["metrics.nope"], 1000),
    ("attributes.status = 'RUNNING'", ["metrics.acc"], 1000),
    ("", ["params.lr"], 1000),
    ("", ["params.nope"], 150),
    ("", [], 1000),
    ("", [], 150),
    ("", ["attributes.start_time ASC"], 1000),
    ("attributes.status = 'RUNNING'", [], 1000),
    ("attributes.start_time >= 1000", ["attributes.start_time DESC"], 1000),
)
# Besides the runs: the experiment's own LSI5 flag (its name waits for the FTS indexer) and the table's layout
# version (one GetItem per process).
PER_SEARCH = 2


def _sweep(experiment_id: str) -> None:
    for i in range(RUNS):
        run_id = lifecycle.create_run({"experiment_id": experiment_id, "start_time": 1000 + i, "run_name": f"r{i}"})["run"]["info"][
            "run_id"
        ]
        metrics = [
            {"key": "acc", "value": i / RUNS, "timestamp": 1, "step": 0},
            {"key": "loss", "value": 1 - i / RUNS, "timestamp": 1, "step": 0},
        ]
        params = [{"key": "lr", "value": str(i % 10)}, {"key": "seed", "value": str(i)}]
        tags = [{"key": "team", "value": "a" if i % 3 else "b"}]
        data.log_batch({"run_id": run_id, "metrics": metrics, "params": params, "tags": tags}, {})


def _ids(result: dict[str, Any]) -> list[str]:
    return [run["info"]["run_id"] for run in result.get("runs", [])]


def test_a_selective_search_while_the_indexer_lags_reads_at_most_the_runs_once(server: str, local_runtime: Any) -> None:
    experiment_id = _experiment(server)
    _sweep(experiment_id)
    views, full = _measure(store.experiment_runs, experiment_id)
    assert len(views) == RUNS
    lagging = {}
    for filter_string in FILTERS:
        result, stats = _measure(search.search_runs, {"experiment_ids": [experiment_id], "filter": filter_string, "max_results": 1000})
        lagging[filter_string] = _ids(result)
        # The flagged items (about the runs' ranges) and one latest value per marked candidate decide which runs
        # may match; only those are read whole again. Selective filters stay under one full read of the sweep.
        assert stats["items_read"] <= full["items_read"] + PER_MATCH * max(0, len(lagging[filter_string]) - 5), (filter_string, stats)
    whole = {}
    for filter_string in NON_SELECTIVE:
        for max_results in (1000, 10):
            request = {"experiment_ids": [experiment_id], "filter": filter_string, "max_results": max_results}
            result, stats = _measure(search.search_runs, request)
            assert len(_ids(result)) == min(RUNS, max_results), filter_string
            whole[(filter_string, max_results)] = result
            assert stats["items_read"] <= full["items_read"] + PER_SEARCH, (filter_string, max_results, stats)
    pages = {}
    for filter_string, order, max_results in ORDERED:
        request = {"experiment_ids": [experiment_id], "filter": filter_string, "order_by": order, "max_results": max_results}
        result, stats = _measure(search.search_runs, request)
        assert len(_ids(result)) == min(RUNS, max_results), (filter_string, order)
        whole[(filter_string, tuple(order), max_results)] = result
        assert stats["items_read"] <= full["items_read"] + PER_SEARCH, (filter_string, order, max_results, stats)
        if "next_page_token" in result:  # the next page resumes at the token and reads the runs once too
            request = {**request, "page_token": result["next_page_token"]}
            pages[(filter_string, tuple(order), max_results)], stats = _measure(search.search_runs, request)
            assert len(_ids(pages[(filter_string, tuple(order), max_results)])) == RUNS - max_results, (filter_string, order)
            assert stats["items_read"] <= full["items_read"] + PER_SEARCH, (filter_string, order, max_results, "page 2", stats)
    local_runtime.drain_stream()  # the indexer catches up: the same answers, read from the RANK items
    for shape, lagging_result in whole.items():
        # The runs assembled from their LSI5 items are the runs as read from their summaries: data and order.
        filter_string, order, max_results = shape if len(shape) == 3 else (shape[0], (), shape[1])
        request = {"experiment_ids": [experiment_id], "filter": filter_string, "order_by": list(order), "max_results": max_results}
        indexed = search.search_runs(request)
        assert indexed == lagging_result, shape
        if shape in pages:
            assert search.search_runs({**request, "page_token": indexed["next_page_token"]}) == pages[shape], shape
    for filter_string in FILTERS:
        result = search.search_runs({"experiment_ids": [experiment_id], "filter": filter_string, "max_results": 1000})
        assert _ids(result) == lagging[filter_string], filter_string
    assert [len(lagging[f]) for f in FILTERS] == [1, 1, 20, 2, 10, 20]
