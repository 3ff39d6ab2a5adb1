"""Index-backed searches through the handlers equal MLflow's own store while the indexer lags.

The same runs go to our server (indexer paused) and to MLflow's SqlAlchemyStore on sqlite. search_runs
ordered by a metric or a param (RANK plan), filtered by run name (FTS plan) and search_experiments by
name substring (FTS) must return the same runs in the same order, page by page: with nothing indexed,
after the indexer catches up, and after more writes while it is paused again.
"""

from __future__ import annotations

import math
import uuid
from typing import Any

import pytest

from tests.sqlite_template import migrated_sqlite

pytestmark = pytest.mark.e2e

ORDERS = [["metrics.acc DESC"], ["metrics.acc ASC"], ["params.p ASC"], ["params.p DESC"], ["metrics.loss DESC"]]
NAME_FILTERS = ["attributes.run_name LIKE '%alpha%'", "attributes.run_name ILIKE '%BETA-1%'", "attributes.run_name LIKE 'gam%a_'"]
ACC = [0.5, 0.9, math.nan, math.inf, -1.0, 0.9, 0.0, -math.inf, 2.5, None, 0.1, 0.9]
PARAMS = ["b", "a", "c", None, "aa", "b", "A", "", "z" * 300, "b", None, "é"]


def _log(client: Any, store: Any, pair: tuple[str, str], name: str, start: int, acc: float | None, param: str | None) -> tuple[str, str]:
    from mlflow.entities import Metric, Param, RunTag

    ours = client.create_run(pair[0], start_time=start, run_name=name, tags={"ref": name}).info.run_id
    theirs = store.create_run(pair[1], "u", start, [RunTag("ref", name)], name).info.run_id
    metrics = [] if acc is None else [Metric("acc", acc, 1, 0)]
    params = [] if param is None else [Param("p", param)]
    client.log_batch(ours, metrics=metrics, params=params)
    store.log_batch(theirs, metrics=metrics, params=params, tags=[])
    return ours, theirs


def _pages_ours(client: Any, experiment_id: str, order_by: list[str] | None, filter_string: str = "") -> list[str]:
    names, token = [], None
    while True:
        page = client.search_runs([experiment_id], filter_string, max_results=4, order_by=order_by, page_token=token)
        names += [run.data.tags["ref"] for run in page]
        token = page.token
        if not token:
            return names


def _pages_theirs(store: Any, experiment_id: str, order_by: list[str] | None, filter_string: str = "") -> list[str]:
    from mlflow.entities import ViewType

    names, token = [], None
    while True:
        page = store.search_runs([experiment_id], filter_string, ViewType.ACTIVE_ONLY, 4, order_by, token)
        names += [run.data.tags["ref"] for run in page]
        token = page.token
        if not token:
            return names


def _compare(client: Any, store: Any, pair: tuple[str, str]) -> None:
    for order_by in ORDERS:
        assert _pages_ours(client, pair[0], order_by) == _pages_theirs(store, pair[1], order_by), order_by
    for filter_string in NAME_FILTERS:
        ours = _pages_ours(client, pair[0], None, filter_string)
        assert ours == _pages_theirs(store, pair[1], None, filter_string), filter_string


def test_rank_and_name_searches_match_reference_while_indexer_lags(paused_runtime: Any, tmp_path: Any) -> None:
    import mlflow
    from mlflow.entities import Metric, RunTag
    from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore

    client = mlflow.MlflowClient(paused_runtime.url)
    store = SqlAlchemyStore(migrated_sqlite(f"{tmp_path}/ref.db"), str(tmp_path / "artifacts"))
    tag = uuid.uuid4().hex[:6]
    pair = (client.create_experiment(f"idx-{tag}"), store.create_experiment(f"idx-{tag}"))
    # Distinct start times: ties would fall to run ids, which differ between the two stores.
    names = [f"alpha-{i}" if i % 3 == 0 else f"beta-{i}" if i % 3 == 1 else f"gamma{i}a" for i in range(len(ACC))]
    runs = [_log(client, store, pair, name, 1000 + (7 * i) % 13, ACC[i], PARAMS[i]) for i, name in enumerate(names)]

    _compare(client, store, pair)  # nothing indexed yet: flagged sources only

    paused_runtime.indexer_mode = "sync"
    assert paused_runtime.drain_stream() > 0
    paused_runtime.indexer_mode = "paused"
    _compare(client, store, pair)  # everything indexed

    # New latest values, a new run and a deleted run while the index lags again.
    for (ours, theirs), value in zip(runs[:4], [3.0, -5.0, math.nan, 0.9], strict=True):
        client.log_metric(ours, "acc", value, timestamp=2, step=1)
        store.log_metric(theirs, Metric("acc", value, 2, 1))
    _log(client, store, pair, "alpha-late", 999, 0.95, "b")
    client.delete_run(runs[5][0])
    store.delete_run(runs[5][1])
    client.set_tag(runs[6][0], "mlflow.runName", "beta-1-renamed")
    store.set_tag(runs[6][1], RunTag("mlflow.runName", "beta-1-renamed"))
    _compare(client, store, pair)


def test_experiment_name_search_matches_reference_while_indexer_lags(paused_runtime: Any, tmp_path: Any) -> None:
    import mlflow
    from mlflow.entities import ViewType
    from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore

    client = mlflow.MlflowClient(paused_runtime.url)
    store = SqlAlchemyStore(migrated_sqlite(f"{tmp_path}/ref.db"), str(tmp_path / "artifacts"))
    tag = uuid.uuid4().hex[:6]
    for i, word in enumerate(["Training", "train", "TRAINING-x", "retrain_me", "other", "tra_in"]):
        for target in (client, store):
            target.create_experiment(f"{tag}-{word}-{i}")

    def compare() -> None:
        for pattern in ["%train%", "%TRAIN%", f"{tag}-%ra_n%", "%ining%", f"{tag}-tra\\_in%"]:
            for comparator in ("LIKE", "ILIKE"):
                filter_string = f"name {comparator} '{pattern}'"
                ours = [e.name for e in client.search_experiments(ViewType.ALL, filter_string=filter_string, max_results=1000)]
                theirs = [e.name for e in store.search_experiments(ViewType.ALL, filter_string=filter_string, max_results=1000)]
                assert ours == theirs, filter_string

    compare()
    paused_runtime.indexer_mode = "sync"
    paused_runtime.drain_stream()
    paused_runtime.indexer_mode = "paused"
    compare()
    renamed = client.get_experiment_by_name(f"{tag}-other-4")
    client.rename_experiment(renamed.experiment_id, f"{tag}-now-training-4")
    store.rename_experiment(store.get_experiment_by_name(f"{tag}-other-4").experiment_id, f"{tag}-now-training-4")
    compare()


STAGES = ["prod", "dev", "prod", None, "pre-prod", "prod", "staging", "dev", "prod", "p#x", None, "prod"]
FILTERS = [
    "metrics.acc > 0.2",
    "metrics.acc >= 0.9",
    "metrics.acc < 1 AND metrics.acc > -5",
    "metrics.acc = 0.9",
    "metrics.acc <= 1.7976931348623157e308",
    "metrics.acc > 0 AND params.p != 'b'",
    "params.p = 'b'",
    "params.p = 'é'",
    "params.p LIKE 'a%'",
    "params.p LIKE 'z%'",
    "tags.stage = 'prod'",
    "tags.stage LIKE 'pr%' AND metrics.acc < 1",
    "tags.stage = 'prod' AND params.p = 'b'",
    "tags.stage = 'p#x' AND attributes.status = 'RUNNING'",
    "metrics.loss < 100 AND tags.stage = 'prod'",
    "attributes.status = 'RUNNING'",  # start-time plan on LSI3 (status); rank plan with an attribute filter
    "attributes.status = 'FINISHED' AND attributes.start_time > 1003",
    "metrics.acc > -100 AND tags.stage = 'p#x'",  # ordered by acc: the tag names fewer runs than a page
    "metrics.acc < 10 AND params.p = 'aa' AND metrics.loss >= 0",
]
FILTER_ORDERS = [["metrics.acc DESC"], ["metrics.acc ASC"], None, ["params.p ASC"], ["tags.stage DESC", "metrics.acc"]]


def _filter_orders(matrix: str, phase: int) -> list[tuple[str, list[str] | None]]:
    """``full``: every filter under every order (380 paged comparisons over the four phases, minutes: ``make
    test-long``); ``rotation``: every filter once per phase, under the orders in turn, shifted by the phase, so
    every filter and every order is compared in every phase and each filter meets four of the five orders."""
    if matrix == "full":
        return [(f, order_by) for f in FILTERS for order_by in FILTER_ORDERS]
    return [(f, FILTER_ORDERS[(i + phase) % len(FILTER_ORDERS)]) for i, f in enumerate(FILTERS)]


def _compare_filtered(client: Any, store: Any, pair: tuple[str, str], matrix: str, phase: int) -> int:
    nonempty = 0
    for filter_string, order_by in _filter_orders(matrix, phase):
        ours = _pages_ours(client, pair[0], order_by, filter_string)
        assert ours == _pages_theirs(store, pair[1], order_by, filter_string), (filter_string, order_by)
        nonempty += bool(ours)
    return nonempty


@pytest.mark.parametrize("matrix", ["rotation", pytest.param("full", marks=pytest.mark.long)])
def test_filters_served_by_rank_items_match_reference_while_indexer_lags(paused_runtime: Any, tmp_path: Any, matrix: str) -> None:
    """Metric ranges, param/tag equality and prefix LIKE (RANK-served filter plans), page by page."""
    import mlflow
    from mlflow.entities import Metric, RunStatus, RunTag
    from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore

    client = mlflow.MlflowClient(paused_runtime.url)
    store = SqlAlchemyStore(migrated_sqlite(f"{tmp_path}/ref.db"), str(tmp_path / "artifacts"))
    tag = uuid.uuid4().hex[:6]
    pair = (client.create_experiment(f"idx-f-{tag}"), store.create_experiment(f"idx-f-{tag}"))
    runs = []
    for i, acc in enumerate(ACC):
        ours, theirs = _log(client, store, pair, f"run-{i}", 1000 + (7 * i) % 13, acc, PARAMS[i])
        if STAGES[i] is not None:
            client.set_tag(ours, "stage", STAGES[i])
            store.set_tag(theirs, RunTag("stage", STAGES[i]))
        client.log_metric(ours, "loss", float(i), timestamp=1, step=0)
        store.log_metric(theirs, Metric("loss", float(i), 1, 0))
        runs.append((ours, theirs))

    assert _compare_filtered(client, store, pair, matrix, 0) > (40 if matrix == "full" else 8)  # nothing indexed yet: flagged sources only

    paused_runtime.indexer_mode = "sync"
    assert paused_runtime.drain_stream() > 0
    paused_runtime.indexer_mode = "paused"
    _compare_filtered(client, store, pair, matrix, 1)  # everything indexed

    # Changes while the index lags again: new latest values, retagged and untagged runs, a deleted
    # run, a new run: stale RANK items must not match, unindexed sources must.
    for (ours, theirs), value in zip(runs[:4], [3.0, -5.0, math.nan, 0.9], strict=True):
        client.log_metric(ours, "acc", value, timestamp=2, step=1)
        store.log_metric(theirs, Metric("acc", value, 2, 1))
    for index, stage in ((1, "prod"), (0, "dev"), (4, "prod")):
        client.set_tag(runs[index][0], "stage", stage)
        store.set_tag(runs[index][1], RunTag("stage", stage))
    client.delete_tag(runs[2][0], "stage")
    store.delete_tag(runs[2][1], "stage")
    client.delete_run(runs[5][0])
    store.delete_run(runs[5][1])
    for ours, theirs in runs[6:9]:
        client.set_terminated(ours, "FINISHED", end_time=5000)
        store.update_run_info(theirs, RunStatus.FINISHED, 5000, None)
    late = _log(client, store, pair, "late", 999, 0.95, "b")
    client.set_tag(late[0], "stage", "prod")
    store.set_tag(late[1], RunTag("stage", "prod"))
    _compare_filtered(client, store, pair, matrix, 2)

    paused_runtime.indexer_mode = "sync"
    assert paused_runtime.drain_stream() > 0
    paused_runtime.indexer_mode = "paused"
    _compare_filtered(client, store, pair, matrix, 3)
