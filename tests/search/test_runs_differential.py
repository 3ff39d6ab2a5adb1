"""Differential test: search_runs on MLflow's SqlAlchemyStore (sqlite) vs our search module on mirrored dicts.

~150 runs with adversarial data (NaN/inf/negative metrics, several values per metric key, unicode and
wildcard characters in names/params/tags, missing keys, equal start times, deleted runs, datasets), then ~320
random filter/order_by/view_type combinations: the run_id order (or the error code + message) must be
identical, and for a subset, every page with small max_results too.
"""

from __future__ import annotations

import math
import random
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from mlflow.entities import Dataset, DatasetInput, InputTag, Metric, Param, RunStatus, RunTag, ViewType
from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore

from serverless_mlflow import search
from tests.search.helpers import LIKE_PATTERNS, STRINGS, assert_same, drain_mlflow, drain_ours, outcome, quoted
from tests.sqlite_template import migrated_sqlite

# The module's stores are built once, on one worker (xdist would otherwise build them on each).
pytestmark = pytest.mark.xdist_group("runs-differential")
SEED = 20261122
N_RUNS = 150
N_QUERIES = 260
METRIC_KEYS = ["m1", "m2", "m.3", "loss"]
PARAM_KEYS = ["p1", "p2", "p 3"]
TAG_KEYS = ["t1", "t2"]
METRIC_VALUES = [0.0, -0.0, 1.0, -1.0, 0.5, 2.5, 3.0, 100.0, -100.25, 1e308, 1.7976931348623157e308, math.inf, -math.inf, math.nan]
START_TIMES = [1000, 2000, 2000, 3000, 5000, 5000]
USERS = ["alice", "Alice", "bob", "ünï"]
DATASETS = [("ds_a", "d1"), ("ds_a", "d2"), ("DS_b", "d3"), ("日本", "d%4")]
CONTEXTS = ["training", "eval", "Training", None]


@pytest.fixture(scope="module")
def world(scratch_dir: Path) -> dict[str, Any]:
    rng = random.Random(SEED)
    tmp = scratch_dir
    store = SqlAlchemyStore(migrated_sqlite(f"{tmp}/db.sqlite"), str(tmp / "art"))
    exp_id = store.create_experiment("search-diff")
    mirror: list[dict[str, Any]] = []
    for i in range(N_RUNS):
        run_name = rng.choice(STRINGS) if rng.random() < 0.9 else f"run-{i}"
        created = store.create_run(exp_id, rng.choice(USERS), rng.choice(START_TIMES), [], run_name)
        run_id = created.info.run_id
        params = {k: rng.choice(STRINGS) for k in PARAM_KEYS if rng.random() < 0.6}
        tags = {k: rng.choice(STRINGS) for k in TAG_KEYS if rng.random() < 0.5}
        history: dict[str, list[dict[str, Any]]] = {}
        metrics: list[Metric] = []
        for key in METRIC_KEYS:
            if rng.random() < 0.35:
                continue
            seen: set[tuple[int, int, str]] = set()
            for _ in range(rng.choice([1, 1, 2, 3])):
                m = {"value": rng.choice(METRIC_VALUES), "timestamp": rng.choice([10, 20]), "step": rng.choice([0, 0, 1, 2])}
                ident = (m["timestamp"], m["step"], repr(m["value"]))
                if ident in seen:
                    continue
                seen.add(ident)
                history.setdefault(key, []).append(m)
                metrics.append(Metric(key, m["value"], m["timestamp"], m["step"]))
        store.log_batch(run_id, metrics, [Param(k, v) for k, v in params.items()], [RunTag(k, v) for k, v in tags.items()])
        datasets: list[dict[str, Any]] = []
        for name, digest in rng.sample(DATASETS, rng.choice([0, 0, 1, 2])):
            context = rng.choice(CONTEXTS)
            input_tags = [InputTag("mlflow.data.context", context)] if context is not None else []
            store.log_inputs(run_id, [DatasetInput(Dataset(name, digest, "local", "src"), input_tags)])
            datasets.append({"name": name, "digest": digest, "context": context})
        if rng.random() < 0.5:
            status = rng.choice([RunStatus.FINISHED, RunStatus.FAILED, RunStatus.KILLED])
            end_time = rng.choice([None, 2500, 6000, 6000])
            new_name = rng.choice(STRINGS) if rng.random() < 0.3 else None
            store.update_run_info(run_id, status, end_time, new_name)
        all_tags = dict(tags)
        if rng.random() < 0.04:
            # The SQL store keeps the run's name column but filters run_name through this tag.
            store.delete_tag(run_id, "mlflow.runName")
        if rng.random() < 0.15:
            store.delete_run(run_id)
        stored = store.get_run(run_id)
        info, stored_tags = stored.info, stored.data.tags
        all_tags.update({k: v for k, v in stored_tags.items() if k.startswith("mlflow.")})
        mirror.append(
            {
                "info": {
                    "run_id": info.run_id,
                    "run_name": info.run_name,
                    "experiment_id": info.experiment_id,
                    "user_id": info.user_id,
                    "status": info.status,
                    "start_time": info.start_time,
                    "end_time": info.end_time,
                    "artifact_uri": info.artifact_uri,
                    "lifecycle_stage": info.lifecycle_stage,
                },
                "metrics": {k: search.latest_metric(h)["value"] for k, h in history.items()},  # type: ignore[index]
                "params": params,
                "tags": all_tags,
                "datasets": datasets,
            }
        )
    return {"store": store, "exp_id": exp_id, "runs": mirror, "rng": rng}


def _number(rng: random.Random, runs: list[dict[str, Any]]) -> str:
    return rng.choice(
        ["0", "-0", "1", "-1", "0.5", "2.5", "3", "100", "-100.25", "1e308", "1.7976931348623157e308", "1e999", "-1e999", "99", ".5"]
    )


def _string_value(rng: random.Random, like: bool) -> str:
    return quoted(rng.choice(LIKE_PATTERNS if like and rng.random() < 0.7 else STRINGS), rng)


# run_id LIKE patterns: against another store (random ids on each side) only patterns every id matches alike.
ID_PATTERNS = ("%a%", "%0%", "0%")
SAME_ON_ANY_IDS = ("%", "%-%", "%_%")


def _clause(rng: random.Random, run_ids: list[str], id_patterns: tuple[str, ...] = ID_PATTERNS) -> str:
    kind = rng.choice(["metric", "metric", "param", "param", "tag", "attr", "attr", "attr", "dataset", "bad"])
    if kind == "metric":
        ident = rng.choice(["metrics", "metric"])
        key = rng.choice([*METRIC_KEYS, "missing"])
        key = f"`{key}`" if "." in key and rng.random() < 0.5 else key
        return f"{ident}.{key} {rng.choice(['>', '>=', '=', '!=', '<', '<='])} {_number(rng, [])}"
    if kind in ("param", "tag"):
        ident = rng.choice(["params", "param", "parameter"] if kind == "param" else ["tags", "tag"])
        key = rng.choice(PARAM_KEYS if kind == "param" else [*TAG_KEYS, "mlflow.runName"])
        key = f"`{key}`" if " " in key or "." in key else key
        op = rng.choice(["=", "!=", "LIKE", "ILIKE", "like", "IS NULL", "IS NOT NULL"])
        if op.startswith("IS"):
            return f"{ident}.{key} {op}"
        return f"{ident}.{key} {op} {_string_value(rng, 'LIKE' in op.upper())}"
    if kind == "attr":
        key = rng.choice(["run_name", "status", "user_id", "run_id", "start_time", "end_time", "artifact_uri", "created", "`Run name`"])
        prefix = rng.choice(["attributes.", "attribute.", "attr.", "run.", ""])
        if key in ("start_time", "end_time", "created"):
            return f"{prefix}{key} {rng.choice(['>', '>=', '=', '!=', '<', '<='])} {rng.choice(['1000', '2000', '2500', '5000', '6000', '2000.0', '0'])}"
        if key == "run_id" and rng.random() < 0.6:
            ids = rng.sample(run_ids, rng.choice([1, 2, 5]))
            return f"{prefix}run_id {rng.choice(['IN', 'NOT IN'])} ({', '.join(repr(i) for i in ids)})"
        op = rng.choice(["=", "!=", "LIKE", "ILIKE"])
        if key == "status":
            value = quoted(rng.choice(["FINISHED", "RUNNING", "FAILED", "KILLED", "finished", "%ED", "%ed"]), rng)
        elif key == "user_id":
            value = quoted(rng.choice([*USERS, "%l%", "AL%", "%ï"]), rng)
        elif key == "artifact_uri":
            value = quoted(rng.choice(["%art%", "%ART%", "%/artifacts"]), rng)
        elif key == "run_id":
            value = quoted(rng.choice(run_ids) if rng.random() < 0.5 else rng.choice(id_patterns), rng)
        else:
            value = _string_value(rng, "LIKE" in op)
        return f"{prefix}{key} {op} {value}"
    if kind == "dataset":
        key = rng.choice(["name", "digest", "context"])
        ident = rng.choice(["datasets", "dataset"])
        op = rng.choice(["=", "!=", "LIKE", "ILIKE", "IN", "NOT IN"])
        pool = {
            "name": ["ds_a", "DS_b", "日本", "ds_%", "%B"],
            "digest": ["d1", "d2", "d3", "d%4", "d_"],
            "context": ["training", "eval", "Training", "%rain%", "TRAIN%"],
        }[key]
        if op in ("IN", "NOT IN"):
            return f"{ident}.{key} {op} ({', '.join(repr(v) for v in rng.sample(pool, 2))})"
        return f"{ident}.{key} {op} {quoted(rng.choice(pool), rng)}"
    return rng.choice(
        [
            "metrics.m1 LIKE '1'",
            "params.p1 > 'a'",
            "attributes.start_time LIKE 5",
            "attributes.run_name IN ('a')",
            "attributes.status IN ('FINISHED')",
            "attributes.lifecycle_stage = 'active'",
            "foo.bar = 'x'",
            "metrics.m1 = 'x'",
            "params.p1 = 5",
            "params.p1 = abc",
            "attributes.start_time = '5'",
            "datasets.foo = 'x'",
            "metrics.m1 IS NULL",
            "attributes.run_id IS NULL",
            "metrics.m1 > 1 OR metrics.m1 < 0",
            "params.p1 = 'a'; params.p2 = 'b'",
            "metrics.m1 > +1",
            "attributes.run_id IN ()",
            "attributes.run_id IN ('a', 1)",
            "attributes.user_id <> 'bob'",
            "run_name = 'alpha' AND",
            "tags.t1 == 'a'",
        ]
    )


def _order_by(rng: random.Random) -> list[str] | None:
    if rng.random() < 0.2:
        return None
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
        "user_id",
        "run_id",
        "artifact_uri",
        "created",
    ]
    terms = rng.sample(pool, rng.choice([1, 1, 2, 3]))
    result = [f"{t} {rng.choice(['ASC', 'DESC', 'asc', 'desc', ''])}".strip() for t in terms]
    if rng.random() < 0.05:
        result.append(rng.choice(["datasets.name", "metrics.m1 sideways", "foo.bar", result[0], "`params`.p1 DESC"]))
    return result


def _mlflow_ids(
    store: SqlAlchemyStore, exp_id: str, filter_string: str, view_type: int, max_results: int, order_by: list[str] | None
) -> list[str]:
    return [r.info.run_id for r in store.search_runs([exp_id], filter_string, view_type, max_results, order_by)]


def _our_ids(runs: list[dict[str, Any]], filter_string: str, view_type: int, max_results: int, order_by: list[str] | None) -> list[str]:
    return [r["info"]["run_id"] for r in _ours(runs, filter_string, view_type, max_results, order_by, None)[0]]


def _ours(
    runs: list[dict[str, Any]], filter_string: str, view_type: int, max_results: int, order_by: list[str] | None, token: str | None
) -> Any:
    q = search.prepare_run_search(filter_string, order_by, max_results, token)
    stages = search.view_type_stages(view_type)
    return q.run([r for r in runs if r["info"]["lifecycle_stage"] in stages])


def test_runs_match_mlflow_sqlalchemy_store(world: dict[str, Any]) -> None:
    store, exp_id, runs = world["store"], world["exp_id"], world["runs"]
    rng = random.Random(SEED + 1)
    run_ids = [r["info"]["run_id"] for r in runs]
    n_errors = n_nonempty = n_paged = 0
    for i in range(N_QUERIES):
        filter_string = " and ".join(_clause(rng, run_ids) for _ in range(rng.choice([0, 1, 1, 2, 3])))
        order_by = _order_by(rng)
        view_type = rng.choice([ViewType.ACTIVE_ONLY, ViewType.ACTIVE_ONLY, ViewType.DELETED_ONLY, ViewType.ALL])
        expected = outcome(_mlflow_ids, store, exp_id, filter_string, view_type, 1000, order_by)
        actual = outcome(_our_ids, runs, filter_string, view_type, 1000, order_by)
        assert_same(actual, expected, f"query #{i}: filter={filter_string!r} order_by={order_by!r} view_type={view_type}")
        if expected[0] != "ok":
            n_errors += 1
            continue
        n_nonempty += bool(expected[1])
        if i % 8 == 0 and len(expected[1]) > 3:
            n_paged += 1
            size = rng.choice([1, 2, 7])
            mlflow_pages = drain_mlflow(partial(store.search_runs, [exp_id], filter_string, view_type, size, order_by))
            our_pages = drain_ours(partial(_ours, runs, filter_string, view_type, size, order_by))
            assert [[r.info.run_id for r in p] for p in mlflow_pages] == [[r["info"]["run_id"] for r in p] for p in our_pages], (
                f"paging query #{i}: filter={filter_string!r} order_by={order_by!r} max_results={size}"
            )
    # The generator must exercise all outcome classes, or this test proves little.
    assert n_errors > 20 and n_nonempty > 100 and n_paged > 8, (n_errors, n_nonempty, n_paged)


def test_run_order_with_every_key_type(world: dict[str, Any]) -> None:
    """Each orderable key in both directions, unfiltered, over all runs (NaN/inf/missing placement, ties)."""
    store, exp_id, runs = world["store"], world["exp_id"], world["runs"]
    keys = [
        *(f"metrics.`{k}`" for k in METRIC_KEYS),
        *(f"params.`{k}`" for k in PARAM_KEYS),
        "tags.t1",
        "tags.t2",
        "attributes.start_time",
        "attributes.end_time",
        "attributes.run_name",
        "attributes.status",
        "attributes.user_id",
        "attributes.run_id",
        "attributes.artifact_uri",
    ]
    for key in keys:
        for direction in ("ASC", "DESC"):
            order_by = [f"{key} {direction}"]
            expected = [r.info.run_id for r in store.search_runs([exp_id], "", ViewType.ALL, 1000, order_by)]
            actual = [r["info"]["run_id"] for r in _ours(runs, "", ViewType.ALL, 1000, order_by, None)[0]]
            assert actual == expected, order_by


def test_run_comparison_semantics_exhaustively(world: dict[str, Any]) -> None:
    """Every LIKE pattern / string / number against each comparator on each value path (param, tag, run_name
    tag, user_id column, dataset): the random test may miss a corner (e.g. ILIKE folding only ASCII)."""
    store, exp_id, runs = world["store"], world["exp_id"], world["runs"]
    filters: list[str] = []
    for ident in ("params.p1", "tags.t1", "attributes.run_name", "datasets.context"):
        for op in ("LIKE", "ILIKE"):
            filters += [f"{ident} {op} '{p}'" for p in LIKE_PATTERNS]
        filters += [f"{ident} {op} '{v}'" for op in ("=", "!=") for v in STRINGS[:12]]
    filters += [
        f"metrics.m1 {op} {n}"
        for op in (">", ">=", "=", "!=", "<", "<=")
        for n in ("0", "-0", "1", "1e308", "1.7976931348623157e308", "1e999", "-1e999", "-1")
    ]
    filters += [f"attributes.user_id ILIKE '{p}'" for p in ("%ï", "%Ï", "ALICE", "%L%")]
    for filter_string in filters:
        expected = outcome(_mlflow_ids, store, exp_id, filter_string, ViewType.ALL, 1000, None)
        actual = outcome(_our_ids, runs, filter_string, ViewType.ALL, 1000, None)
        assert_same(actual, expected, filter_string)


@pytest.mark.parametrize("batched", [True, False])
def test_latest_metric_ties_follow_the_sql_store(world: dict[str, Any], batched: bool) -> None:
    """(step, timestamp, value) ties (NaN counts as 0, inf as MAX_FLOAT): the first logged value stays latest."""
    store = world["store"]
    exp_id = store.create_experiment(f"latest-ties-{batched}")
    histories = [
        [(0.0, 10, 0), (math.nan, 10, 0)],
        [(math.nan, 10, 0), (0.0, 10, 0)],
        [(math.inf, 10, 0), (1.7976931348623157e308, 10, 0), (5.0, 10, 0)],
        [(5.0, 10, 1), (math.nan, 10, 1), (-1.0, 99, 0)],
        [(math.nan, 10, 2), (1.0, 10, 2)],
    ]
    runs = []
    for history in histories:
        run_id = store.create_run(exp_id, "u", 1, [], "r").info.run_id
        metrics = [Metric("k", v, ts, step) for v, ts, step in history]
        if batched:
            store.log_batch(run_id, metrics, [], [])
        else:
            for m in metrics:
                store.log_batch(run_id, [m], [], [])
        latest = search.latest_metric([{"value": v, "timestamp": ts, "step": step} for v, ts, step in history])
        assert latest is not None
        runs.append(
            {
                "info": {"run_id": run_id, "start_time": 1, "lifecycle_stage": "active"},
                "metrics": {"k": latest["value"]},
                "params": {},
                "tags": {},
                "datasets": [],
            }
        )
    for filter_string in ("metrics.k = 0", "metrics.k != 0", "metrics.k > 1", "metrics.k <= 1e308", ""):
        for order_by in (None, ["metrics.k DESC"], ["metrics.k"]):
            expected = [r.info.run_id for r in store.search_runs([exp_id], filter_string, ViewType.ALL, 100, order_by)]
            assert [r["info"]["run_id"] for r in search.prepare_run_search(filter_string, order_by).run(runs)[0]] == expected, (
                filter_string,
                order_by,
            )
