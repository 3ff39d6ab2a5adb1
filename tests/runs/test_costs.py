"""DynamoDB cost budgets of issue 3 item 6, measured with ``table.STATS`` on the domain functions.

The functions run in-process against the session runtime's table (the HTTP layer adds no DynamoDB work,
and calling them directly keeps the indexer's stream reads out of the counts).
"""

from __future__ import annotations

from typing import Any

import pytest
from runs import data, lifecycle, search

from serverless_mlflow.storage import table
from serverless_mlflow.store import runs as store
from tests.conftest import unique

pytestmark = pytest.mark.e2e


def _experiment(server: str) -> str:
    import requests

    response = requests.post(f"{server}/api/2.0/mlflow/experiments/create", json={"name": unique("costs")}, timeout=30)
    return response.json()["experiment_id"]


def _measure(fn: Any, *args: Any) -> tuple[Any, dict[str, Any]]:
    table.STATS.reset()
    result = fn(*args)
    return result, table.STATS.snapshot()


def test_search_without_filter_reads_about_one_item_per_run_returned(server: str, local_runtime: Any) -> None:
    experiment_id = _experiment(server)
    n_runs, page = 120, 50
    for i in range(n_runs):
        # Some runs share a start time: the page edge may fall inside a tie group.
        lifecycle.create_run({"experiment_id": experiment_id, "start_time": 10_000 + i % 47, "run_name": f"r{i}"})
    local_runtime.drain_stream()  # indexed, as deployed a moment later: every run has its summary
    result, stats = _measure(search.search_runs, {"experiment_ids": [experiment_id], "max_results": page})
    runs = result["runs"]
    assert len(runs) == page and "next_page_token" in result
    # Newest first, ties by run id: the page is MLflow's order.
    keys = [(-r["info"]["start_time"], r["info"]["run_id"]) for r in runs]
    assert keys == sorted(keys)
    # The run items from the LSI (a few more for the tie at the page edge), then one summary per returned run.
    assert stats["items_read"] <= 2 * len(runs) + 3, stats
    # One LSI query (a single page here), one LSI5 query for flagged runs (none) and one BatchGetItem.
    assert stats["requests"] == {"Query": 2, "BatchGetItem": 1}, stats


def test_get_run_and_log_batch_budgets(server: str, local_runtime: Any) -> None:
    experiment_id = _experiment(server)
    run_id = lifecycle.create_run({"experiment_id": experiment_id, "start_time": 1})["run"]["info"]["run_id"]
    metrics = [{"key": f"m{i % 5}", "value": float(i), "timestamp": 1000 + i, "step": i // 5} for i in range(1000)]
    later = [{"key": f"m{k}", "value": float(2000 + k), "timestamp": 5000, "step": 500} for k in range(5)]
    latest = {f"m{k}": float(2000 + k) for k in range(5)}

    # The run, its metric state and marker in one read; the run's marker (the first write since the indexer's last
    # pass); the points (one pack per key: 5 items for 1,000 points); the latest values (one transaction); the write
    # counted.
    _, stats = _measure(data.log_batch, {"run_id": run_id, "metrics": metrics}, {})
    assert stats["requests"] == {"BatchGetItem": 1, "PutItem": 1, "BatchWriteItem": 1, "TransactWriteItems": 1, "UpdateItem": 1}, stats
    assert stats["items_written"] <= 12, stats
    # The run is marked already: the next batch writes nothing to the experiment partition.
    _, stats = _measure(data.log_batch, {"run_id": run_id, "metrics": later}, {})
    assert stats["requests"] == {"BatchGetItem": 1, "BatchWriteItem": 1, "TransactWriteItems": 1, "UpdateItem": 1}, stats

    # Until the indexer's pass, the run's latest values are read from its partition: one more Query.
    store.LOCATOR_CACHE.clear()
    run, stats = _measure(lifecycle.get_run, {"run_id": run_id})
    assert stats["requests"] == {"GetItem": 1, "Query": 2}, stats
    assert {m["key"]: m["value"] for m in run["run"]["data"]["metrics"]} == latest

    local_runtime.drain_stream()  # indexed, as deployed a moment later: the run's range holds its metrics digest
    store.LOCATOR_CACHE.clear()
    run, stats = _measure(lifecycle.get_run, {"run_id": run_id})
    assert stats["requests"] == {"GetItem": 1, "Query": 1}, stats
    assert {m["key"]: m["value"] for m in run["run"]["data"]["metrics"]} == latest
    _, stats = _measure(lifecycle.get_run, {"run_id": run_id})
    assert stats["requests"] == {"Query": 1}, stats


def test_an_indexed_rank_search_reads_no_run_item_ahead(server: str, local_runtime: Any) -> None:
    """Ordering by a metric every run has walks RANK items only: no run item is read ahead for the case of every
    run still waiting for the indexer (the LSI5 read, which the walk needs anyway, shows none is)."""
    experiment_id = _experiment(server)
    for i in range(30):
        run = lifecycle.create_run({"experiment_id": experiment_id, "start_time": 10_000 + i, "run_name": f"r{i}"})
        batch = {"run_id": run["run"]["info"]["run_id"], "metrics": [{"key": "m", "value": i, "timestamp": 1, "step": 0}]}
        data.log_batch(batch, batch)
    local_runtime.drain_stream()
    body = {"experiment_ids": [experiment_id], "max_results": 10, "order_by": ["metrics.m DESC"]}
    search.search_runs(body)  # warm: the layout version is read once per process
    result, stats = _measure(search.search_runs, body)
    assert [r["data"]["metrics"][0]["value"] for r in result["runs"]] == [float(v) for v in range(29, 19, -1)]
    # The LSI5 query (no flagged item), the RANK walk (two pages: the page, then the tie check at its edge) and
    # the page's summaries: no run item (the LSI probe for a sweep not yet indexed took a Query and an item).
    assert stats["requests"] == {"Query": 3, "BatchGetItem": 1}, stats
    assert stats["items_read"] <= 42, stats
