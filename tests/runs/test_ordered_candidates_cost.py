"""A filter on one key ordered by another (``params.p = 'v'`` ORDER BY ``metrics.m``) reads the order value of
every candidate but run items for about one page only, and later pages skip what precedes the token.

Runs are written over HTTP (the session runtime's sync indexer has indexed them once a request other than a run
write has been answered); the search runs in-process so ``table.STATS`` counts its DynamoDB work alone.
"""

from __future__ import annotations

from typing import Any

import pytest
from runs import search

from serverless_mlflow.storage import table
from tests.conftest import unique

pytestmark = pytest.mark.e2e

N_RUNS, PAGE = 120, 10


def _measure(fn: Any) -> tuple[Any, int]:
    table.STATS.reset()
    result = fn()
    return result, table.STATS.snapshot()["items_read"]


def test_param_filter_ordered_by_a_metric_reads_run_items_for_about_a_page(client: Any) -> None:
    experiment_id = client.create_experiment(unique("ordc-cost"))
    for i in range(N_RUNS):
        run_id = client.create_run(experiment_id, start_time=1000 + i).info.run_id
        client.log_param(run_id, "p", "v")
        client.log_metric(run_id, "m", float((i * 37) % N_RUNS), timestamp=1, step=0)
    client.get_experiment(experiment_id)  # not a run write: the runs' records are indexed before it runs

    body = {"experiment_ids": [experiment_id], "filter": "params.p = 'v'", "order_by": ["metrics.m DESC"], "max_results": PAGE}
    seen: list[float] = []
    token = None
    for _ in range(3):
        result, items_read = _measure(lambda token=token: search.search_runs({**body, **({"page_token": token} if token else {})}))
        runs = result["runs"]
        assert len(runs) == PAGE
        seen += [run["data"]["metrics"][0]["value"] for run in runs]
        # The order value of every candidate (its RANK item and its metric) plus run items for about one page
        # (the verification chunk, 16 runs), not one per candidate (that was 3 x N_RUNS); the page's data on top.
        data_items = sum(1 + sum(len(run["data"].get(field, [])) for field in ("params", "metrics", "tags")) for run in runs)
        assert items_read <= 2 * N_RUNS + 2 * PAGE + data_items, items_read
        token = result["next_page_token"]
    assert seen == [float(v) for v in range(N_RUNS - 1, N_RUNS - 1 - 3 * PAGE, -1)]
