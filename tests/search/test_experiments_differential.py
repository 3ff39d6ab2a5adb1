"""Differential test: search_experiments on MLflow's SqlAlchemyStore (sqlite) vs our module on mirrored dicts."""

from __future__ import annotations

import itertools
import random
from functools import partial
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from mlflow.entities import ExperimentTag, ViewType
from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore

from serverless_mlflow import search
from tests.search.helpers import LIKE_PATTERNS, STRINGS, assert_same, drain_mlflow, drain_ours, outcome, quoted
from tests.sqlite_template import migrated_sqlite

SEED = 424242
N_EXPERIMENTS = 70
N_QUERIES = 300
CLOCK = [1000, 1000, 2000, 3000, 3000, 3000, 4000]


@pytest.fixture(scope="module")
def world(scratch_dir: Path) -> dict[str, Any]:
    rng = random.Random(SEED)
    # MLflow stamps experiments with its clock: drive it from a small pool so timestamps tie often.
    clock = (rng.choice(CLOCK) for _ in itertools.count())
    store = SqlAlchemyStore(migrated_sqlite(f"{scratch_dir}/db.sqlite"), str(scratch_dir / "art"))
    ids = ["0"]
    names = list(STRINGS) + [f"{rng.choice(STRINGS)}-{i}" for i in range(N_EXPERIMENTS)]
    with mock.patch("mlflow.store.tracking.sqlalchemy_store.get_current_time_millis", side_effect=lambda: next(clock)):
        for name in names[:N_EXPERIMENTS]:
            tags = [ExperimentTag(k, rng.choice(STRINGS)) for k in ("t1", "t2") if rng.random() < 0.5]
            ids.append(store.create_experiment(name, tags=tags))
        for exp_id in ids[1:]:
            roll = rng.random()
            if roll < 0.15:
                store.delete_experiment(exp_id)
            elif roll < 0.3:
                store.rename_experiment(
                    exp_id, names[N_EXPERIMENTS + int(exp_id)] if N_EXPERIMENTS + int(exp_id) < len(names) else f"renamed-{exp_id}"
                )
            elif roll < 0.4:
                store.set_experiment_tag(exp_id, ExperimentTag("t3", rng.choice(STRINGS)))
    mirror = []
    for exp_id in ids:
        e = store.get_experiment(exp_id)
        mirror.append(
            {
                "experiment_id": e.experiment_id,
                "name": e.name,
                "artifact_location": e.artifact_location,
                "lifecycle_stage": e.lifecycle_stage,
                "creation_time": e.creation_time,
                "last_update_time": e.last_update_time,
                "tags": dict(e.tags),
            }
        )
    return {"store": store, "experiments": mirror}


def _clause(rng: random.Random, ids: list[str]) -> str:
    kind = rng.choice(["name", "name", "id", "time", "tag", "tag", "bad"])
    if kind == "name":
        ident = rng.choice(["name", "attribute.name", "`name`"])
        op = rng.choice(["=", "!=", "LIKE", "ILIKE", "LIKE", "ILIKE"])
        pool = LIKE_PATTERNS if "LIKE" in op and rng.random() < 0.8 else STRINGS
        return f"{ident} {op} {quoted(rng.choice(pool), rng)}"
    if kind == "id":
        op = rng.choice(["=", "!=", "IN", "NOT IN"])
        if op in ("IN", "NOT IN"):
            return f"experiment_id {op} ({', '.join(repr(i) for i in rng.sample(ids, rng.choice([1, 3])))})"
        return f"experiment_id {op} '{rng.choice([*ids, '007', ' 3'])}'"
    if kind == "time":
        key = rng.choice(["creation_time", "last_update_time", "attribute.creation_time"])
        return f"{key} {rng.choice(['>', '>=', '=', '!=', '<', '<='])} {rng.choice(['1000', '2000', '3000', '3500', '4000', '0'])}"
    if kind == "tag":
        key = rng.choice(["tags.t1", "tag.t2", "tags.t3", "tags.`t1`", "tags.missing"])
        op = rng.choice(["=", "!=", "LIKE", "ILIKE", "IS NULL", "IS NOT NULL"])
        if op.startswith("IS"):
            return f"{key} {op}"
        pool = LIKE_PATTERNS if "LIKE" in op and rng.random() < 0.8 else STRINGS
        return f"{key} {op} {quoted(rng.choice(pool), rng)}"
    return rng.choice(
        [
            "name like 'a%'",
            "name IN ('a')",
            "name > 'a'",
            "experiment_id LIKE '1'",
            "experiment_id = 'abc'",
            "experiment_id IN ('1', 'x')",
            "experiment_id = 5",
            "creation_time = 1.5",
            "creation_time LIKE 5",
            "creation_time = '5'",
            "creation_time IN ('5')",
            "last_update_time IS NULL",
            "name IS NULL",
            "tags.t1 like 'a'",
            "tags.t1 > 'a'",
            "tags.t1 IN ('a')",
            "attributes.name = 'a'",
            "params.x = 'a'",
            "foo = 'x'",
            "lifecycle_stage = 'active'",
            "name = 'a' OR name = 'b'",
            "tags.t1 = 5",
        ]
    )


def _order_by(rng: random.Random) -> list[str] | None:
    if rng.random() < 0.2:
        return None
    pool = ["name", "experiment_id", "creation_time", "last_update_time", "attribute.name", "attribute.creation_time"]
    terms = [f"{t} {rng.choice(['ASC', 'DESC', 'desc', ''])}".strip() for t in rng.sample(pool, rng.choice([1, 1, 2, 3]))]
    if rng.random() < 0.08:
        terms.append(rng.choice(["tags.t1", "foo", "name sideways", "params.x", terms[0]]))
    return terms


def _mlflow_ids(store: SqlAlchemyStore, view_type: int, max_results: int, filter_string: str, order_by: list[str] | None) -> list[str]:
    return [e.experiment_id for e in store.search_experiments(view_type, max_results, filter_string, order_by)]


def _ours(
    exps: list[dict[str, Any]], view_type: int, max_results: int, filter_string: str, order_by: list[str] | None, token: str | None
) -> Any:
    q = search.prepare_experiment_search(filter_string, order_by, max_results, token)
    stages = search.view_type_stages(view_type)
    return q.run([e for e in exps if e["lifecycle_stage"] in stages])


def _our_ids(exps: list[dict[str, Any]], view_type: int, max_results: int, filter_string: str, order_by: list[str] | None) -> list[str]:
    return [e["experiment_id"] for e in _ours(exps, view_type, max_results, filter_string, order_by, None)[0]]


def test_experiments_match_mlflow_sqlalchemy_store(world: dict[str, Any]) -> None:
    store, exps = world["store"], world["experiments"]
    rng = random.Random(SEED + 1)
    ids = [e["experiment_id"] for e in exps]
    n_errors = n_nonempty = n_paged = 0
    for i in range(N_QUERIES):
        filter_string = " AND ".join(_clause(rng, ids) for _ in range(rng.choice([0, 1, 1, 2])))
        order_by = _order_by(rng)
        view_type = rng.choice([ViewType.ACTIVE_ONLY, ViewType.ACTIVE_ONLY, ViewType.DELETED_ONLY, ViewType.ALL])
        expected = outcome(_mlflow_ids, store, view_type, 1000, filter_string, order_by)
        actual = outcome(_our_ids, exps, view_type, 1000, filter_string, order_by)
        assert_same(actual, expected, f"query #{i}: filter={filter_string!r} order_by={order_by!r} view_type={view_type}")
        if expected[0] != "ok":
            n_errors += 1
            continue
        n_nonempty += bool(expected[1])
        if i % 6 == 0 and len(expected[1]) > 3:
            n_paged += 1
            size = rng.choice([1, 2, 5])
            mlflow_pages = drain_mlflow(partial(store.search_experiments, view_type, size, filter_string, order_by))
            our_pages = drain_ours(partial(_ours, exps, view_type, size, filter_string, order_by))
            assert [[e.experiment_id for e in p] for p in mlflow_pages] == [[e["experiment_id"] for e in p] for p in our_pages], (
                f"paging query #{i}: filter={filter_string!r} order_by={order_by!r} max_results={size}"
            )
    assert n_errors > 20 and n_nonempty > 100 and n_paged > 10, (n_errors, n_nonempty, n_paged)


def test_experiment_name_semantics_exhaustively(world: dict[str, Any]) -> None:
    store, exps = world["store"], world["experiments"]
    filters = [f"name {op} '{p}'" for op in ("LIKE", "ILIKE") for p in LIKE_PATTERNS]
    filters += [f"tags.t1 {op} '{p}'" for op in ("LIKE", "ILIKE", "=", "!=") for p in LIKE_PATTERNS[:12]]
    for filter_string in filters:
        expected = outcome(_mlflow_ids, store, ViewType.ALL, 1000, filter_string, None)
        actual = outcome(_our_ids, exps, ViewType.ALL, 1000, filter_string, None)
        assert_same(actual, expected, filter_string)


def test_experiment_max_results_errors(world: dict[str, Any]) -> None:
    store, exps = world["store"], world["experiments"]
    for max_results in (None, 0, -1, 50001):
        expected = outcome(_mlflow_ids, store, ViewType.ALL, max_results, "", None)
        assert expected[0] == "err"
        assert outcome(_our_ids, exps, ViewType.ALL, max_results, "", None) == expected
