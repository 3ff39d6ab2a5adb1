"""A metric range ordered by its metric, ANDed with a rare term: the ordered walk notices that few walked runs
match, races the other terms, and lets the rare one drive. Answers equal MLflow's store page by page whichever
way the plan goes, and the rare case reads far less than walking the whole range.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from runs import search

from serverless_mlflow.storage import table
from tests.conftest import unique
from tests.sqlite_template import migrated_sqlite

# The module's world is built once, on one worker (xdist would otherwise build it on each).
pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("ordered-walk-race")]

N_RUNS = 160
RARE = {5, 40, 157}
SEARCHES = [
    ("metrics.m >= 0 AND tags.rare = 'x'", ["metrics.m DESC"]),  # sparse: the walk gives way to the rare tag
    ("metrics.m >= 0 AND tags.rare = 'x'", ["metrics.m ASC"]),
    ("metrics.m < 150 AND tags.rare LIKE 'x%'", ["metrics.m DESC"]),
    ("metrics.m >= 10 AND tags.half = 'y'", ["metrics.m ASC"]),  # dense: the walk answers
    ("metrics.m > 3 AND tags.half = 'y' AND tags.rare = 'x'", ["metrics.m DESC"]),
]


@pytest.fixture(scope="module")
def pair(server: str, tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, str, Any, str]:
    import mlflow
    from mlflow.entities import Metric, RunTag
    from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore

    tmp: Path = tmp_path_factory.mktemp("walk-race")
    client = mlflow.MlflowClient(server)
    store = SqlAlchemyStore(migrated_sqlite(f"{tmp}/ref.db"), str(tmp / "artifacts"))
    name = unique("walk-race")
    ours_exp, ref_exp = client.create_experiment(name), store.create_experiment(name)
    for i in range(N_RUNS):
        tags = [RunTag("ref", str(i)), *([RunTag("half", "y")] if i % 2 == 0 else []), *([RunTag("rare", "x")] if i in RARE else [])]
        ours = client.create_run(ours_exp, start_time=1000 + i).info.run_id
        theirs = store.create_run(ref_exp, "u", 1000 + i, [], None).info.run_id
        client.log_batch(ours, metrics=[Metric("m", float(i), 1, 0)], tags=tags)
        store.log_batch(theirs, metrics=[Metric("m", float(i), 1, 0)], params=[], tags=tags)
    return client, ours_exp, store, ref_exp


def _refs(target: Any, experiment_id: str, filter_string: str, order_by: list[str], size: int) -> list[list[str]]:
    from mlflow.entities import ViewType

    pages, token = [], None
    while True:
        page = target.search_runs([experiment_id], filter_string, ViewType.ACTIVE_ONLY, size, order_by, token)
        pages.append([run.data.tags["ref"] for run in page])
        token = page.token
        if not token:
            return pages


@pytest.mark.parametrize(("filter_string", "order_by"), SEARCHES)
def test_pages_equal_mlflow_store(pair: tuple[Any, str, Any, str], filter_string: str, order_by: list[str]) -> None:
    client, ours_exp, store, ref_exp = pair
    for size in (1, 2, 5, 40):
        ours = _refs(client, ours_exp, filter_string, order_by, size)
        assert ours == _refs(store, ref_exp, filter_string, order_by, size), (filter_string, order_by, size)


def test_a_rare_term_drives_instead_of_a_long_walk(pair: tuple[Any, str, Any, str]) -> None:
    _, ours_exp, _, _ = pair
    body = {"experiment_ids": [ours_exp], "filter": "metrics.m >= 0 AND tags.rare = 'x'", "order_by": ["metrics.m DESC"], "max_results": 2}
    table.STATS.reset()
    result = search.search_runs(body)
    items_read = table.STATS.snapshot()["items_read"]
    assert [run["data"]["metrics"][0]["value"] for run in result["runs"]] == [157.0, 40.0]
    # Walking the whole range would read every run's RANK item and summary (2 x 160); giving way after a
    # sample of 32 walked runs to the rare tag's 3 runs reads about 2 x 32 + a dozen.
    assert items_read < 100, items_read
