"""Randomized differential test, end to end: the same random operations go to our server (a fresh local
runtime, through the real client) and to MLflow's SqlAlchemyStore on sqlite; then many random search_runs
filters and orderings, paginated with small max_results, must give the same runs in the same order, and every
run and metric history must read back the same.

Run ids differ between the two stores, so runs are matched through a ``ref`` tag, and MLflow's last
tie-breaker (run_id ASC) is checked on each side with its own ids: both sides must produce the same sequence
of sort values, and within equal sort values each side must be in ascending run-id order.
"""

from __future__ import annotations

import math
import random
from pathlib import Path
from typing import Any

import mlflow
import pytest
from mlflow.entities import Dataset, DatasetInput, InputTag, Metric, Param, RunStatus, RunTag, ViewType
from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore

from serverless_mlflow import search
from tests.search.helpers import STRINGS, assert_same, outcome
from tests.search.test_runs_differential import (
    CONTEXTS,
    DATASETS,
    METRIC_KEYS,
    METRIC_VALUES,
    PARAM_KEYS,
    SAME_ON_ANY_IDS,
    START_TIMES,
    TAG_KEYS,
    USERS,
    _clause,
)
from tests.sqlite_template import migrated_sqlite

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

SEED = 3_2026
N_RUNS = 30
# Random queries after the fixed plan checks: a sample in ``make test``, four times as many in ``make test-long``
# (the sample is the long run's first queries: same seed).
N_QUERIES = 60
N_QUERIES_LONG = 240
REF = "ref"


class World:
    def __init__(self, url: str, tmp: Path) -> None:
        self.client = mlflow.MlflowClient(url)
        self.store = SqlAlchemyStore(migrated_sqlite(f"{tmp}/db.sqlite"), str(tmp / "art"))
        self.ours_exps: list[str] = []
        self.ref_exps: list[str] = []
        self.ours_ids: list[str] = []
        self.ref_ids: list[str] = []

    def to_ours(self, text: str) -> str:
        for ref_id, our_id in zip(self.ref_ids, self.ours_ids, strict=True):
            text = text.replace(ref_id, our_id)
        return text


def _random_metrics(rng: random.Random) -> list[Metric]:
    metrics: list[Metric] = []
    for key in METRIC_KEYS:
        if rng.random() < 0.35:
            continue
        seen: set[tuple[int, int]] = set()
        for _ in range(rng.choice([1, 1, 2, 3])):
            timestamp, step = rng.choice([10, 20]), rng.choice([0, 0, 1, 2, -3, 2**60])
            # One point per (timestamp, step): the SQL store orders equal ones arbitrarily.
            if (timestamp, step) in seen:
                continue
            seen.add((timestamp, step))
            metrics.append(Metric(key, rng.choice(METRIC_VALUES), timestamp, step))
    return metrics


def build(world: World, rng: random.Random) -> None:
    for side_exps, create in ((world.ours_exps, world.client.create_experiment), (world.ref_exps, world.store.create_experiment)):
        side_exps.extend([create("diff-a"), create("diff-b")])
    for i in range(N_RUNS):
        exp_index = 0 if rng.random() < 0.8 else 1
        run_name = rng.choice(STRINGS) if rng.random() < 0.9 else None
        user, start = rng.choice(USERS), rng.choice(START_TIMES)
        # The client takes user_id from the mlflow.user tag; the store takes it as an argument.
        tags = [RunTag(REF, str(i)), RunTag("mlflow.user", user), *(RunTag(k, rng.choice(STRINGS)) for k in TAG_KEYS if rng.random() < 0.5)]
        params = [Param(k, rng.choice(STRINGS)) for k in PARAM_KEYS if rng.random() < 0.6]
        metrics = _random_metrics(rng)
        datasets = []
        for name, digest in rng.sample(DATASETS, rng.choice([0, 0, 1, 2])):
            context = rng.choice(CONTEXTS)
            datasets.append(
                DatasetInput(Dataset(name, digest, "local", "src"), [InputTag("mlflow.data.context", context)] if context else [])
            )
        status = rng.choice([None, RunStatus.FINISHED, RunStatus.FAILED, RunStatus.KILLED])
        end_time = rng.choice([None, 2500, 6000, 6000])
        new_name = rng.choice(STRINGS) if rng.random() < 0.2 else None
        delete = rng.random() < 0.15

        ours = world.client.create_run(world.ours_exps[exp_index], start_time=start, tags={t.key: t.value for t in tags}, run_name=run_name)
        ref = world.store.create_run(world.ref_exps[exp_index], user, start, tags, run_name)
        our_id, ref_id = ours.info.run_id, ref.info.run_id
        world.ours_ids.append(our_id)
        world.ref_ids.append(ref_id)
        world.client.log_batch(our_id, metrics, params, [])
        world.store.log_batch(ref_id, metrics, params, [])
        if datasets:
            world.client.log_inputs(our_id, datasets)
            world.store.log_inputs(ref_id, datasets)
        if status is not None:
            # The client's own REST store: MlflowClient.update_run has no end_time.
            world.client._tracking_client.store.update_run_info(our_id, status, end_time, new_name)
            world.store.update_run_info(ref_id, status, end_time, new_name)
        if delete:
            world.client.delete_run(our_id)
            world.store.delete_run(ref_id)


def _logical(run: Any) -> dict[str, Any]:
    """What must be equal between the two sides for one run (ids and artifact roots excluded)."""
    info = run.info
    return {
        "ref": run.data.tags[REF],
        "run_name": info.run_name,
        "user_id": info.user_id,
        "status": info.status,
        "start_time": info.start_time,
        "end_time": info.end_time,
        "lifecycle_stage": info.lifecycle_stage,
        "metrics": {k: ("nan" if math.isnan(v) else v) for k, v in run.data.metrics.items()},
        "params": run.data.params,
        "tags": run.data.tags,
        "datasets": sorted(
            (d.dataset.name, d.dataset.digest, d.dataset.source, tuple(sorted((t.key, t.value) for t in d.tags)))
            for d in run.inputs.dataset_inputs
        ),
    }


def _term_values(run: Any, order_by: search.OrderBy) -> tuple[Any, ...]:
    """A run's values for every ORDER BY term except the final run_id tie-breaker, from its JSON."""
    entity = {
        "info": {
            "start_time": run.info.start_time,
            "end_time": run.info.end_time,
            "run_name": run.info.run_name,
            "status": run.info.status,
            "user_id": run.info.user_id,
        },
        "metrics": run.data.metrics,
        "params": run.data.params,
        "tags": run.data.tags,
    }
    return tuple(tuple(search.term_value(entity, order_by.kind, term)) for term in order_by[:-1])


def _pages(search_fn: Any, size: int) -> list[list[Any]]:
    pages, token = [], None
    while True:
        result = search_fn(size, token)
        pages.append(list(result))
        token = result.token
        if not token:
            return pages
        assert len(pages) < 200, "pagination did not terminate"


def _check_order(runs: list[Any], order_by: search.OrderBy) -> list[tuple[Any, ...]]:
    """The sequence of sort values, after checking that equal ones are in ascending run-id order."""
    values = [_term_values(run, order_by) for run in runs]
    for i in range(1, len(runs)):
        if values[i] == values[i - 1]:
            assert runs[i - 1].info.run_id < runs[i].info.run_id, "tie-breaker must be run_id ASC"
    return values


def _compare_search(world: World, filter_string: str, order_by: list[str] | None, view_type: int, size: int, context: str) -> bool:
    def ours(size: int, token: str | None) -> Any:
        return world.client.search_runs(world.ours_exps, world.to_ours(filter_string), view_type, size, order_by, token)

    def ref(size: int, token: str | None) -> Any:
        return world.store.search_runs(world.ref_exps, filter_string, view_type, size, order_by, token)

    expected = outcome(_pages, ref, size)
    actual = outcome(_pages, ours, size)
    if actual[0] == "err":
        # The client prefixes the server's message with its error code.
        actual = (actual[0], actual[1], actual[2].removeprefix(f"{actual[1]}: "))
    if expected[0] != "ok" or actual[0] != "ok":
        assert_same(actual, expected, context)
        return False
    ref_pages, our_pages = expected[1], actual[1]
    assert [len(p) for p in our_pages] == [len(p) for p in ref_pages], context
    ref_runs = [run for page in ref_pages for run in page]
    our_runs = [run for page in our_pages for run in page]
    assert sorted(r.data.tags[REF] for r in our_runs) == sorted(r.data.tags[REF] for r in ref_runs), context
    parsed = search.parse_run_order_by(order_by)
    assert _check_order(our_runs, parsed) == _check_order(ref_runs, parsed), context
    return bool(ref_runs)


def _order_by(rng: random.Random) -> list[str] | None:
    """Orderings whose values are the same on both sides (ids and artifact URIs differ by construction)."""
    if rng.random() < 0.3:
        return rng.choice([None, ["attributes.start_time ASC"], ["start_time DESC"], ["created"]])
    pool = [
        *(f"metrics.{k if '.' not in k else '`' + k + '`'}" for k in METRIC_KEYS),
        "params.p1",
        "params.`p 3`",
        "tags.t1",
        "tags.`mlflow.runName`",
        "attributes.start_time",
        "attributes.end_time",
        "attributes.run_name",
        "status",
    ]
    return [f"{t} {rng.choice(['ASC', 'DESC', ''])}".strip() for t in rng.sample(pool, rng.choice([1, 1, 2, 3]))]


@pytest.mark.parametrize("queries", [N_QUERIES, pytest.param(N_QUERIES_LONG, marks=pytest.mark.long)])
def test_search_runs_matches_sqlalchemy_store(fresh_server: str, tmp_path: Path, queries: int) -> None:
    rng = random.Random(SEED)
    world = World(fresh_server, tmp_path)
    build(world, rng)

    # Every run reads back the same, and so does every metric history.
    for our_id, ref_id in zip(world.ours_ids, world.ref_ids, strict=True):
        ours, ref = world.client.get_run(our_id), world.store.get_run(ref_id)
        assert _logical(ours) == _logical(ref), ref.data.tags[REF]
        for key in ref.data.metrics:
            ours_history = world.client.get_metric_history(our_id, key)
            ref_history = world.store.get_metric_history(ref_id, key)
            assert [(m.timestamp, m.step, "nan" if math.isnan(m.value) else m.value) for m in ours_history] == [
                (m.timestamp, m.step, "nan" if math.isnan(m.value) else m.value) for m in ref_history
            ], (ref.data.tags[REF], key)

    view_types = [ViewType.ACTIVE_ONLY, ViewType.ACTIVE_ONLY, ViewType.DELETED_ONLY, ViewType.ALL]
    # The start-time plan (no filter or attribute filters, start-time order), with small pages.
    for order_by in (None, ["attributes.start_time ASC"], ["start_time DESC"]):
        for view_type in (ViewType.ACTIVE_ONLY, ViewType.DELETED_ONLY, ViewType.ALL):
            filter_string = rng.choice(["", "", "attributes.status != 'RUNNING'", "attributes.start_time >= 2000"])
            size = rng.choice([2, 5])
            _compare_search(world, filter_string, order_by, view_type, size, f"plan: {filter_string!r} {order_by} {view_type} {size}")
    # Random filters and orderings (the full plan), paginated.
    nonempty = errors = 0
    for i in range(queries):
        filter_string = " and ".join(_clause(rng, world.ref_ids, SAME_ON_ANY_IDS) for _ in range(rng.choice([0, 1, 1, 2, 3])))
        order_by = _order_by(rng)
        view_type = rng.choice(view_types)
        size = rng.choice([4, 1000, 1000])
        context = f"query #{i}: filter={filter_string!r} order_by={order_by!r} view_type={view_type} max_results={size}"
        result = outcome(_compare_search, world, filter_string, order_by, view_type, size, context)
        if result[0] != "ok":
            raise AssertionError(f"{context}: {result}")
        nonempty += bool(result[1])
        errors += _is_error(world, filter_string, order_by, view_type)
    assert nonempty > queries // 3 and errors > queries // 24, (nonempty, errors)


def _is_error(world: World, filter_string: str, order_by: list[str] | None, view_type: int) -> bool:
    return outcome(world.store.search_runs, world.ref_exps, filter_string, view_type, 10, order_by)[0] != "ok"
