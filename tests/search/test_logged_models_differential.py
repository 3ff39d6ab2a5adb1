"""Differential test: search_logged_models on MLflow's SqlAlchemyStore (sqlite) vs our module on mirrored dicts."""

from __future__ import annotations

import itertools
import math
import random
from functools import partial
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from mlflow.entities import LoggedModelParameter, LoggedModelStatus, LoggedModelTag, Metric
from mlflow.exceptions import MlflowException
from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore

from serverless_mlflow import search
from tests.search.helpers import LIKE_PATTERNS, STRINGS, assert_same, drain_mlflow, drain_ours, outcome, quoted
from tests.sqlite_template import migrated_sqlite

SEED = 99
N_MODELS = 45
N_QUERIES = 220
CLOCK = [10, 10, 20, 30, 30]
VALUES = [0.0, 1.0, -1.0, 2.5, 100.0, math.nan, math.inf, -math.inf, 1.7976931348623157e308]
# Logged model names may not contain / : . % " '
NAMES = [s for s in STRINGS if not any(c in s for c in "/:.%\"'")]
DATASETS = [(None, None), ("ds", "d1"), ("ds", "d2"), ("other", "d3")]


@pytest.fixture(scope="module")
def world(scratch_dir: Path) -> dict[str, Any]:
    rng = random.Random(SEED)
    clock = (rng.choice(CLOCK) for _ in itertools.count())
    store = SqlAlchemyStore(migrated_sqlite(f"{scratch_dir}/lm.sqlite"), str(scratch_dir / "art"))
    exp_id = store.create_experiment("lm")
    run_ids = [store.create_run(exp_id, "u", 1, [], f"r{i}").info.run_id for i in range(2)]
    mirror = []
    with mock.patch("mlflow.store.tracking.sqlalchemy_store.get_current_time_millis", side_effect=lambda: next(clock)):
        for _ in range(N_MODELS):
            tags = {k: rng.choice(STRINGS) for k in ("t1", "t2") if rng.random() < 0.5}
            params = {k: rng.choice(STRINGS) for k in ("p1",) if rng.random() < 0.6}
            lm = store.create_logged_model(
                exp_id,
                rng.choice(NAMES),
                rng.choice([*run_ids, None]),
                [LoggedModelTag(k, v) for k, v in tags.items()],
                [LoggedModelParameter(k, v) for k, v in params.items()],
                rng.choice(["sklearn", "Sklearn", "pyfunc", None]),
            )
            metrics = []
            for key in ("acc", "loss"):
                for _ in range(rng.choice([0, 1, 2, 3])):
                    name, digest = rng.choice(DATASETS)
                    m = {
                        "key": key,
                        "value": rng.choice(VALUES),
                        "timestamp": rng.choice([1, 2, 3]),
                        "step": rng.choice([0, 1]),
                        "run_id": rng.choice(run_ids),
                        "dataset_name": name,
                        "dataset_digest": digest,
                    }
                    if any(
                        (o["key"], o["timestamp"], o["step"], o["run_id"]) == (key, m["timestamp"], m["step"], m["run_id"]) for o in metrics
                    ):
                        continue
                    metrics.append(m)
                    store.log_batch(
                        m["run_id"],
                        [
                            Metric(
                                key, m["value"], m["timestamp"], m["step"], model_id=lm.model_id, dataset_name=name, dataset_digest=digest
                            )
                        ],
                        [],
                        [],
                    )
            if rng.random() < 0.7:
                store.finalize_logged_model(lm.model_id, rng.choice([LoggedModelStatus.READY, LoggedModelStatus.FAILED]))
            if rng.random() < 0.1:
                store.delete_logged_model(lm.model_id)
            got = store.get_logged_model(lm.model_id, allow_deleted=True)
            stored_metric_rows = len(got.metrics or [])
            assert stored_metric_rows == len(metrics), "the mirror must hold every stored metric row"
            mirror.append(
                {
                    "model_id": got.model_id,
                    "experiment_id": got.experiment_id,
                    "name": got.name,
                    "artifact_location": got.artifact_location,
                    "creation_timestamp": got.creation_timestamp,
                    "last_updated_timestamp": got.last_updated_timestamp,
                    "status": str(got.status),
                    "lifecycle_stage": None,  # set below from what MLflow still lists
                    "model_type": got.model_type,
                    "source_run_id": got.source_run_id,
                    "tags": tags,
                    "params": params,
                    "metrics": metrics,
                }
            )
    live = {m.model_id for m in store.search_logged_models([exp_id], max_results=1000)}
    for m in mirror:
        m["lifecycle_stage"] = "active" if m["model_id"] in live else "deleted"
    return {"store": store, "exp_id": exp_id, "models": mirror, "run_ids": run_ids}


def _filter(rng: random.Random, run_ids: list[str]) -> str:
    clauses = []
    for _ in range(rng.choice([0, 1, 1, 2])):
        roll = rng.random()
        if roll < 0.25:
            op = rng.choice(["=", "!=", "LIKE", "ILIKE", "like", "IN", "NOT IN"])
            if "IN" in op:
                clauses.append(f"name {op} ({', '.join(repr(s) for s in rng.sample(STRINGS, 3))})")
            else:
                clauses.append(f"name {op} {quoted(rng.choice(LIKE_PATTERNS if 'LIKE' in op.upper() else STRINGS), rng)}")
        elif roll < 0.45:
            clauses.append(
                f"metrics.{rng.choice(['acc', 'loss', 'nope'])} {rng.choice(['>', '>=', '=', '!=', '<', '<='])} {rng.choice(['0', '1', '-1', '2.5', '1e308', '1.7976931348623157e308', '1e999'])}"
            )
        elif roll < 0.55:
            clauses.append(f"params.p1 {rng.choice(['=', '!=', 'LIKE', 'ILIKE'])} '{rng.choice(LIKE_PATTERNS + STRINGS)}'")
        elif roll < 0.65:
            clauses.append(
                f"tags.{rng.choice(['t1', 't2', '`t1`'])} {rng.choice(['=', '!=', 'LIKE', 'ILIKE'])} '{rng.choice(LIKE_PATTERNS + STRINGS)}'"
            )
        elif roll < 0.8:
            clauses.append(
                rng.choice(
                    [
                        f"{rng.choice(['creation_timestamp', 'creation_time', 'last_updated_timestamp', 'attributes.creation_timestamp_ms'])} {rng.choice(['>', '=', '<=', '!='])} {rng.choice(['10', '20', '30'])}",
                        f"model_type {rng.choice(['=', '!=', 'LIKE', 'ILIKE'])} '{rng.choice(['sklearn', 'SK%', 'py%'])}'",
                        f"status {rng.choice(['=', '!=', 'LIKE'])} '{rng.choice(['READY', '2', '3', 'FAILED', '%'])}'",
                        f"status {rng.choice(['IN', 'NOT IN'])} ('{rng.choice(['READY', '2'])}', '3')",
                        f"experiment_id {rng.choice(['=', '!='])} '{rng.choice(['1', '01', '1.0', 'x'])}'",
                        f"source_run_id {rng.choice(['=', '!=', 'IN'])} {'(' + repr(run_ids[0]) + ')' if rng.random() < 0.3 else repr(rng.choice(run_ids))}",
                    ]
                )
            )
        else:
            clauses.append(
                rng.choice(
                    ["metrics.acc LIKE 1", "name > 'a'", "foo.bar = 'x'", "name IS NULL", "name = 'a' OR name = 'b'", "params.p1 IN ('a')"]
                )
            )
    return " AND ".join(clauses)


def _datasets(rng: random.Random) -> list[dict[str, Any]] | None:
    roll = rng.random()
    if roll < 0.75:
        return None
    if roll < 0.85:
        return [{"dataset_name": "ds", "dataset_digest": None}]
    return [{"dataset_name": rng.choice(["ds", "other"]), "dataset_digest": rng.choice(["d1", "d3"])}]


def _order_by(rng: random.Random) -> list[dict[str, Any]] | None:
    if rng.random() < 0.25:
        return None
    fields = [
        "name",
        "creation_timestamp",
        "creation_time",
        "last_updated_timestamp",
        "model_type",
        "source_run_id",
        "model_id",
        "metrics.acc",
        "metrics.loss",
        "metrics.nope",
    ]
    result = []
    for field in rng.sample(fields, rng.choice([1, 1, 2])):
        ob: dict[str, Any] = {"field_name": field, "ascending": rng.random() < 0.5, "dataset_name": None, "dataset_digest": None}
        if field.startswith("metrics.") and rng.random() < 0.4:
            ob["dataset_name"] = rng.choice(["ds", "other"])
            ob["dataset_digest"] = rng.choice([None, "d1"])
        result.append(ob)
    if rng.random() < 0.05:
        result.append({"field_name": rng.choice(["params.p1", "nope"]), "ascending": True})
    return result


def _mlflow_ids(store: SqlAlchemyStore, exp_id: str, filter_string: str, datasets: Any, max_results: int, order_by: Any) -> list[str]:
    try:
        return [m.model_id for m in store.search_logged_models([exp_id], filter_string or None, datasets, max_results, order_by)]
    except MlflowException as e:
        if "sqlite3" in e.message or "sqlalchemy" in e.message:
            # The bad value reached the database driver: a crash we answer with a clean 400 instead.
            raise RuntimeError(e.message) from e
        raise


def _ours(models: list[dict[str, Any]], filter_string: str, datasets: Any, max_results: int, order_by: Any, token: str | None) -> Any:
    q = search.prepare_logged_model_search(filter_string or None, datasets, max_results, order_by, token)
    return q.run([m for m in models if m["lifecycle_stage"] != "deleted"])


def _our_ids(models: list[dict[str, Any]], filter_string: str, datasets: Any, max_results: int, order_by: Any) -> list[str]:
    return [m["model_id"] for m in _ours(models, filter_string, datasets, max_results, order_by, None)[0]]


def test_logged_models_match_mlflow(world: dict[str, Any]) -> None:
    store, exp_id, models = world["store"], world["exp_id"], world["models"]
    rng = random.Random(SEED + 1)
    n_errors = n_nonempty = n_paged = 0
    for i in range(N_QUERIES):
        filter_string, datasets, order_by = _filter(rng, world["run_ids"]), _datasets(rng), _order_by(rng)
        expected = outcome(_mlflow_ids, store, exp_id, filter_string, datasets, 1000, order_by)
        actual = outcome(_our_ids, models, filter_string, datasets, 1000, order_by)
        assert_same(actual, expected, f"query #{i}: filter={filter_string!r} datasets={datasets!r} order_by={order_by!r}")
        if expected[0] != "ok":
            n_errors += 1
            continue
        n_nonempty += bool(expected[1])
        if i % 6 == 0 and len(expected[1]) > 3:
            n_paged += 1
            size = rng.choice([1, 2, 5])
            mlflow_pages = drain_mlflow(
                lambda tok, f=filter_string, d=datasets, s=size, o=order_by: store.search_logged_models([exp_id], f or None, d, s, o, tok)
            )
            our_pages = drain_ours(partial(_ours, models, filter_string, datasets, size, order_by))
            assert [[m.model_id for m in p] for p in mlflow_pages] == [[m["model_id"] for m in p] for p in our_pages], f"paging #{i}"
    assert n_errors > 5 and n_nonempty > 80 and n_paged > 8, (n_errors, n_nonempty, n_paged)
