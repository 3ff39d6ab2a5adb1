"""Issue 12's budget, items read <= 5 x runs returned + 50 per page, for the plans whose returned runs come
from run summaries (one item per run instead of a Query of its range), and page N costing about page 1.

Runs are written over HTTP (the session runtime's sync indexer has indexed them, summaries included, once a
request other than a run write has been answered); the searches run in-process so ``table.STATS`` counts their DynamoDB work alone.
"""

from __future__ import annotations

from typing import Any

import pytest
from runs import search

from serverless_mlflow.storage import table
from tests.conftest import unique

# The module's world is built once, on one worker (xdist would otherwise build it on each).
pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("summary-costs")]

N_RUNS, PAGE, PAGES = 300, 25, 4


@pytest.fixture(scope="module")
def experiment(server: str) -> tuple[str, Any]:
    import mlflow
    from mlflow.entities import Metric, Param, RunTag

    client = mlflow.MlflowClient(server)
    experiment_id = client.create_experiment(unique("summary-cost"))
    for i in range(N_RUNS):
        run_id = client.create_run(experiment_id, start_time=1000 + i).info.run_id
        metrics = [Metric(f"m{k}", float((i * (37 + k)) % N_RUNS), 1, 0) for k in range(3)]
        params = [Param(f"p{k}", f"v{(i + k) % 5}") for k in range(3)]
        tags = [RunTag("t", "a" if i % 2 else "b"), RunTag("team", f"x{i % 3}")]
        client.log_batch(run_id, metrics=metrics, params=params, tags=tags)
    client.get_experiment(experiment_id)  # not a run write: the runs' records are indexed before it runs
    return experiment_id, client


def _pages(experiment_id: str, filter_string: str, order_by: list[str]) -> list[tuple[dict[str, Any], int]]:
    out, token = [], None
    for _ in range(PAGES):
        body = {"experiment_ids": [experiment_id], "filter": filter_string, "order_by": order_by, "max_results": PAGE}
        table.STATS.reset()
        result = search.search_runs({**body, **({"page_token": token} if token else {})})
        out.append((result, table.STATS.snapshot()["items_read"]))
        token = result.get("next_page_token")
        assert token
    return out


@pytest.mark.parametrize(
    ("filter_string", "order_by"),
    [
        ("metrics.m0 >= 100", ["metrics.m0 DESC"]),  # ordered range
        ("tags.t = 'a' AND metrics.m1 < 250", ["metrics.m1 ASC"]),  # ordered range, every other run verified out
        ("", ["metrics.m2 DESC"]),  # rank plan
        ("", []),  # start-time plan
    ],
)
def test_pages_read_one_summary_per_run_within_the_budget(experiment: tuple[str, Any], filter_string: str, order_by: list[str]) -> None:
    experiment_id, client = experiment
    pages = _pages(experiment_id, filter_string, order_by)
    for result, items_read in pages:
        assert len(result["runs"]) == PAGE
        assert items_read <= 5 * PAGE + 50, (filter_string, items_read)
    first, last = pages[0][1], pages[-1][1]
    assert last <= 1.2 * first + PAGE, (filter_string, first, last)
    # The runs are whole: what get_run answers (data, inputs) for each returned run.
    for row in pages[-1][0]["runs"]:
        run = client.get_run(row["info"]["run_id"])
        assert {m["key"]: m["value"] for m in row["data"]["metrics"]} == run.data.metrics
        assert {p["key"]: p["value"] for p in row["data"]["params"]} == run.data.params
        assert {t["key"]: t["value"] for t in row["data"]["tags"]} == run.data.tags
