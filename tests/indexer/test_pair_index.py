"""Pair indexes (``tools.pair_index``): ``params.p = 'v'`` ORDER BY ``metrics.m`` walks one key range in metric
order. Answers equal MLflow's store page by page (NaN, +-inf, ties, runs lacking the metric or the param,
deleted runs, page tokens in every group), while the indexer lags behind every kind of change, and after it
catches up; the plan reads about the page, not every run having the param value; ``admin verify`` agrees with
the items; ``remove`` deletes them.
"""

from __future__ import annotations

import math
import random
from pathlib import Path
from typing import Any

import pytest
from runs import search

from serverless_mlflow.index import pair_ranks
from serverless_mlflow.storage import table
from serverless_mlflow.storage.schema import ENTITY_TYPE
from tests.sqlite_template import migrated_sqlite
from tools import admin, pair_index

pytestmark = pytest.mark.e2e

N_RUNS = 80
SEARCHES: list[tuple[str, tuple[str, ...]]] = [
    ("params.p = 'a'", ("metrics.m DESC",)),
    ("params.p = 'a'", ("metrics.m ASC",)),
    ("params.p = 'b'", ("metrics.m DESC", "attributes.start_time ASC")),
    ("params.p = 'a' AND metrics.m > 0.3", ("metrics.m ASC",)),  # the filter's bound starts the walk
    ("params.p = 'b' AND metrics.m <= 0.5", ("metrics.m DESC",)),
    ("params.p = 'a' AND tags.t = 'x'", ("metrics.m DESC",)),  # verified on the summaries
    ("params.p = 'c'", ("metrics.m DESC",)),  # a value no run has
]
# Pages of 3 put a page token in every group (NaN, +-inf, ties, runs lacking the metric); they are walked while the
# indexer lags, the case this test is about. The other checks (backfilled, caught up, removed) page by 7.
PAGE_SIZES = (3, 40)
QUICK_PAGE_SIZES = (7,)


def _value(rng: random.Random, i: int) -> float:
    if i % 23 == 0:
        return math.nan
    if i % 31 == 0:
        return math.inf if i % 2 else -math.inf
    return round(rng.random(), 1)  # ties


def _load(client: Any, store: Any, experiments: tuple[str, str], n: int, offset: int = 0) -> list[tuple[str, str]]:
    from mlflow.entities import Metric, Param, RunTag

    rng = random.Random(7 + offset)
    runs = []
    for i in range(offset, offset + n):
        tags = [RunTag("ref", str(i)), RunTag("t", "x" if i % 3 else "y")]
        params = [] if i % 11 == 0 else [Param("p", "a" if i % 2 else "b")]
        metrics = [] if i % 13 == 0 else [Metric("m", _value(rng, i), 1, 0)]
        start = 1000 + i  # unique: the last tie-breaker, run_id, differs between the two stores
        ours = client.create_run(experiments[0], start_time=start).info.run_id
        theirs = store.create_run(experiments[1], "u", start, [], None).info.run_id
        client.log_batch(ours, metrics=metrics, params=params, tags=tags)
        store.log_batch(theirs, metrics=metrics, params=params, tags=tags)
        runs.append((ours, theirs))
    client.get_experiment(experiments[0])  # not a run write: in sync mode the runs are indexed before it runs
    return runs


def _pages(target: Any, experiment_id: str, filter_string: str, order_by: tuple[str, ...], size: int, view: int) -> list[list[str]]:
    pages, token = [], None
    while True:
        page = target.search_runs([experiment_id], filter_string, view, size, list(order_by), token)
        pages.append([run.data.tags["ref"] for run in page])
        token = page.token
        if not token:
            return pages


def _compare(client: Any, store: Any, experiments: tuple[str, str], sizes: tuple[int, ...] = QUICK_PAGE_SIZES) -> None:
    from mlflow.entities import ViewType

    for filter_string, order_by in SEARCHES:
        for size in sizes:
            for view in (ViewType.ACTIVE_ONLY, ViewType.ALL):
                ours = _pages(client, experiments[0], filter_string, order_by, size, view)
                theirs = _pages(store, experiments[1], filter_string, order_by, size, view)
                assert ours == theirs, (filter_string, order_by, size, view)


def _pair_items(experiment_id: str) -> list[dict[str, Any]]:
    """Every pair item of the experiment's declared pairs (each pair has its own partition), and none left in the
    experiment partition."""
    assert not table.query(pair_ranks.PAIR_INDEX.pk.render({"experiment_id": experiment_id}), "RANK#pm#")
    out: list[dict[str, Any]] = []
    for pair in [pair_ranks.Pair("p", "m"), *pair_ranks.declared(experiment_id)]:
        pk = pair_ranks.PAIR_RANK.pk.render({"experiment_id": experiment_id, "pair_id": pair.pair_id})
        out += [item for item in table.iter_query(pk) if item[ENTITY_TYPE] == "pair_rank" and item not in out]
    return out


def _costs(experiment_id: str, filter_string: str, order_by: tuple[str, ...], size: int) -> list[dict[str, Any]]:
    out, token = [], None
    while True:
        body = {"experiment_ids": [experiment_id], "filter": filter_string, "order_by": list(order_by), "max_results": size}
        table.STATS.reset()
        result = search.search_runs({**body, **({"page_token": token} if token else {})})
        out.append(table.STATS.snapshot())
        token = result.get("next_page_token")
        if not token:
            return out


@pytest.mark.long
def test_pair_index_answers_as_mlflow_while_the_indexer_lags(paused_runtime: Any, tmp_path: Path) -> None:
    import mlflow
    from mlflow.entities import Metric, Param, RunStatus, RunTag
    from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore

    client = mlflow.MlflowClient(paused_runtime.url)
    rest = client._tracking_client.store
    store = SqlAlchemyStore(migrated_sqlite(f"{tmp_path}/ref.db"), str(tmp_path / "artifacts"))
    experiments = (client.create_experiment("pairs"), store.create_experiment("pairs"))
    paused_runtime.indexer_mode = "sync"
    runs = _load(client, store, experiments, N_RUNS)
    # Deleted runs keep their items: the view type decides.
    for ours, theirs in runs[5:9]:
        client.delete_run(ours)
        store.delete_run(theirs)

    # Declared over existing runs: the backfill writes one item per run having p, and the pair is ready.
    assert pair_index.add(experiments[0], "p", "m") == N_RUNS
    assert [(p.param, p.metric, p.state) for p in pair_ranks.declared(experiments[0])] == [("p", "m", pair_ranks.READY)]
    having_p = sum(1 for i in range(N_RUNS) if i % 11)
    assert len(_pair_items(experiments[0])) == having_p
    assert admin.verify().differences == 0
    _compare(client, store, experiments)

    # The plan reads about the page (issue 12's budget): a walk of the pair's range, not every run having
    # p = 'a' (about 70) as it does without the pair (checked after `remove` below).
    with_pair = {search_args: _costs(experiments[0], *search_args, 10) for search_args in SEARCHES[:2]}
    for search_args, costs in with_pair.items():
        for cost in costs:
            assert cost["items_read"] <= 5 * 10 + 50, (search_args, cost)

    # Every kind of change while the indexer is paused: searches read the flagged runs' current values.
    paused_runtime.indexer_mode = "paused"

    def both(index: int, change: Any) -> None:
        change(rest, runs[index][0])
        change(store, runs[index][1])

    both(1, lambda s, run: s.log_metric(run, Metric("m", 99.0, 5, 2)))  # jumps to the top
    both(3, lambda s, run: s.log_metric(run, Metric("m", math.nan, 5, 2)))  # into the NaN group
    both(13, lambda s, run: s.log_metric(run, Metric("m", -5.0, 1, 1)))  # lacked the metric, now first in ASC
    both(22, lambda s, run: s.log_param(run, Param("p", "a")))  # lacked the param: now a candidate
    both(24, lambda s, run: s.set_tag(run, RunTag("t", "y")))
    both(33, lambda s, run: s.update_run_info(run, RunStatus.FINISHED, 9000, None))
    both(44, lambda s, run: s.delete_run(run))
    both(6, lambda s, run: s.restore_run(run))
    new_runs = _load(client, store, experiments, 6, offset=N_RUNS)  # new runs, not indexed yet
    _compare(client, store, experiments, PAGE_SIZES)

    paused_runtime.indexer_mode = "sync"
    assert paused_runtime.drain_stream() > 0
    assert admin.verify().differences == 0
    # Run 22 gained the param; the new runs having it got their items.
    assert len(_pair_items(experiments[0])) == having_p + 1 + sum(1 for i in range(N_RUNS, N_RUNS + 6) if i % 11)
    _compare(client, store, experiments)
    assert len(new_runs) == 6

    # Removed: searches stop using it at once, and its items go.
    pair_index.remove(experiments[0], "p", "m")
    assert pair_ranks.declared(experiments[0]) == []
    assert _pair_items(experiments[0]) == []
    assert admin.verify().differences == 0
    _compare(client, store, experiments)
    for search_args, costs in with_pair.items():
        without = _costs(experiments[0], *search_args, 10)
        assert sum(c["items_read"] for c in costs) < 0.5 * sum(c["items_read"] for c in without), (search_args, costs, without)


def test_a_declared_pair_is_used_only_once_ready(paused_runtime: Any, tmp_path: Path) -> None:
    """While ``building`` (a backfill under way) searches do not read the pair's items; the rebuild of every
    run written meanwhile already writes them."""
    import mlflow
    from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore

    client = mlflow.MlflowClient(paused_runtime.url)
    store = SqlAlchemyStore(migrated_sqlite(f"{tmp_path}/ref.db"), str(tmp_path / "artifacts"))
    experiments = (client.create_experiment("building"), store.create_experiment("building"))
    paused_runtime.indexer_mode = "sync"
    pair_index._write_pairs(experiments[0], lambda pairs: [pair_ranks.Pair("p", "m", pair_ranks.BUILDING)])
    _load(client, store, experiments, 30)
    # Written by the indexer's rebuilds (the declaration was read with each summary).
    assert len(_pair_items(experiments[0])) == sum(1 for i in range(30) if i % 11)
    before = _pair_items(experiments[0])
    table.batch_write(deletes=[{"pk": item["pk"], "sk": item["sk"]} for item in before[:5]])  # a half-done backfill
    _compare(client, store, experiments)  # not trusted while building: every answer still exact
    table.batch_write(puts=before[:5])
    pair_index.add(experiments[0], "p", "m")
    _compare(client, store, experiments)


def test_pair_keys_hold_any_param_value(paused_runtime: Any, tmp_path: Path) -> None:
    """Keys with unicode, values with '#', unicode and longer than the key's 300-character budget (two values sharing
    that head): each value's runs, and only those, in metric order."""
    import mlflow
    from mlflow.entities import Metric, Param, RunTag
    from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore

    client = mlflow.MlflowClient(paused_runtime.url)
    store = SqlAlchemyStore(migrated_sqlite(f"{tmp_path}/ref.db"), str(tmp_path / "artifacts"))
    experiments = (client.create_experiment("odd keys"), store.create_experiment("odd keys"))
    paused_runtime.indexer_mode = "sync"
    param, metric = "lr/x:ü", "val loss/é"
    assert pair_index.add(experiments[0], param, metric) == 0
    head = "é#" * 200
    values = [head + "a", head + "b", "0.01#€", "0.01"]
    for i in range(24):
        tags = [RunTag("ref", str(i))]
        ours = client.create_run(experiments[0], start_time=1000 + i).info.run_id
        theirs = store.create_run(experiments[1], "u", 1000 + i, [], None).info.run_id
        metrics = [Metric(metric, float((i * 7) % 5), 1, 0)]
        params = [Param(param, values[i % 4])]
        client.log_batch(ours, metrics=metrics, params=params, tags=tags)
        store.log_batch(theirs, metrics=metrics, params=params, tags=tags)
    client.get_experiment(experiments[0])  # not a run write: the runs are indexed before it runs
    from mlflow.entities import ViewType

    for value in values:
        escaped = value.replace("'", "\\'")
        for order in (f"metrics.`{metric}` DESC", f"metrics.`{metric}` ASC"):
            args = (f"params.`{param}` = '{escaped}'", (order,), 2, ViewType.ALL)
            ours_pages = _pages(client, experiments[0], *args)
            assert ours_pages == _pages(store, experiments[1], *args), (value, order)
            assert sum(map(len, ours_pages)) == 6
    assert admin.verify().differences == 0
