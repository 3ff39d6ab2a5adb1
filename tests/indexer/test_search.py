"""Index-backed searches give MLflow's answers: FTS candidates never miss a match (checked against
MLflow's own LIKE/ILIKE), RANK order equals SqlAlchemyStore's ``order_by``, and both stay exact
while the indexer is paused (flagged sources are read directly)."""

from __future__ import annotations

import math
import random
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mlflow.utils.search_utils import _ilike, _like

from serverless_mlflow.index import fts, param_ranks, rank_items, ranks
from serverless_mlflow.search.like import like_match
from serverless_mlflow.storage import table
from serverless_mlflow.storage.schema import ENTITY
from serverless_mlflow.store import run_metrics
from tests.sqlite_template import migrated_sqlite

from . import support as s

ALPHABET = "aAbB_%.x İiıſsSKkßΣσς\u0307é"


@settings(max_examples=400, deadline=None)
@given(name=st.text(alphabet=ALPHABET, max_size=12), data=st.data())
def test_pattern_tokens_never_exclude_a_match(name: str, data: st.DataObject) -> None:
    # Patterns built from the name (so many of them match), with case changes and wildcards.
    start = data.draw(st.integers(0, len(name)))
    end = data.draw(st.integers(start, len(name)))
    chars = list(name[start:end])
    for i in range(len(chars)):
        roll = data.draw(st.integers(0, 9))
        chars[i] = "_" if roll == 0 else chars[i].swapcase() if roll < 4 else chars[i]
    pattern = data.draw(st.sampled_from(["%", ""])) + "".join(chars) + data.draw(st.sampled_from(["%", ""]))
    tokens = fts.pattern_tokens(pattern)
    if tokens is None:
        return
    indexed = {token for _, token in fts.name_tokens(name)}
    # MLflow's Python matchers and the sqlite semantics the search package reproduces.
    if _like(name, pattern) or _ilike(name, pattern) or like_match(name, pattern, True) or like_match(name, pattern, False):
        assert set(tokens) <= indexed, (name, pattern)


def test_short_and_wildcard_patterns_fall_back() -> None:
    assert fts.pattern_tokens("%ab%") is None
    assert fts.pattern_tokens("a_b_c") is None
    assert fts.pattern_tokens("%") is None
    assert fts.pattern_tokens("%abc%") == ["abc"]
    assert fts.pattern_tokens("AB_CDE%") == ["cde"]


@pytest.fixture
def stream(dynamodb_endpoint: str):
    with s.private_table(dynamodb_endpoint) as st:
        yield st


PATTERNS = ["%tra%", "%TRA%", "%ain%", "Tra%", "%n_ng%", "%ing", "%ab%", "t%", "%ő_ab%", "%xyz%", "%_#r%", "%100%", "%ſom%"]


def _names(rng: random.Random, n: int) -> list[str]:
    words = ["train", "Training", "eval", "ab", "NING", "#run", "ſome", "100%", "x", "tra_in", "Ｔrain"]
    return [" ".join(rng.sample(words, rng.randint(1, 3))) + f" {i}" for i in range(n)]


def _check_experiments(patterns: list[str]) -> None:
    entries = [i for i in table.query(fts.experiments_scope(s.WS), "E#") if i["entity_type"] == "experiment_entry"]
    for pattern in patterns:
        for matcher in (_like, _ilike):
            exact = {e["experiment_id"] for e in entries if matcher(e["name"], pattern)}
            candidates = fts.experiment_candidates(s.WS, pattern)
            if candidates is None:
                continue  # the caller lists everything
            assert exact <= candidates, (pattern, matcher.__name__)
            names = {e["experiment_id"]: e["name"] for e in entries}
            assert {c for c in candidates if c in names and matcher(names[c], pattern)} == exact


def test_experiment_name_search_exact_while_indexer_paused(stream: s.Stream) -> None:
    rng = random.Random(7)
    clock = s.Clock()
    names = _names(rng, 30)
    for i, name in enumerate(names, start=1):
        s.put_experiment(str(i), name, clock.tick())
    s.put_experiment("99", "t" * 300 + "training", clock.tick())  # too long to cut: always a candidate
    s.drain(stream)
    _check_experiments(PATTERNS)
    # Indexer paused: renames and creates are not delivered; the flagged entries are checked directly.
    for i in range(1, 10):
        s.put_experiment(str(i), rng.choice(["brand new", "TRAINING again", "other"]) + str(i), clock.tick())
    for i in range(31, 36):
        s.put_experiment(str(i), f"late training {i}", clock.tick())
    assert fts.pending_ids(fts.experiments_scope(s.WS), fts.EXPERIMENT)
    _check_experiments([*PATTERNS, "%brand%", "%again%"])
    s.drain(stream)
    assert fts.pending_ids(fts.experiments_scope(s.WS), fts.EXPERIMENT) == set()
    _check_experiments([*PATTERNS, "%brand%", "%again%"])


def test_run_and_model_name_search_exact_while_paused(stream: s.Stream) -> None:
    clock = s.Clock()
    s.put_experiment("1", "e", clock.tick())
    s.put_run("1", "a" * 32, "training-run", clock.tick())
    s.put_run("1", "b" * 32, "eval", clock.tick())
    s.put_model("Fraud Model", clock.tick())
    s.put_model("other", clock.tick())
    s.drain(stream)
    assert fts.run_candidates(["1"], "%ainin%") == {"a" * 32}
    assert fts.registered_model_candidates(s.WS, "%MODEL%") == {"Fraud Model"}
    # Paused: a rename is visible through the flag at once.
    s.put_run("1", "b" * 32, "retraining", clock.tick())
    s.put_model("new model", clock.tick())
    assert {"a" * 32, "b" * 32} <= fts.run_candidates(["1"], "%ainin%")
    assert {"Fraud Model", "new model"} <= fts.registered_model_candidates(s.WS, "%model%")
    s.drain(stream)
    assert fts.run_candidates(["1"], "%ainin%") == {"a" * 32, "b" * 32}


# --- RANK order against MLflow's SqlAlchemyStore ------------------------------------------------

METRIC_VALUES = [0.5, 0.5, -1.0, math.nan, math.inf, 1.7976931348623157e308, -math.inf, 3.0, 0.0, -0.0, math.nan]
PARAM_VALUES = ["b", "a", "B", "a", "", "ab", "z" * 400 + "a", "z" * 400, "z" * 399 + "{", "10", "9"]


@pytest.fixture(scope="module")
def mlflow_store(tmp_path_factory: pytest.TempPathFactory):
    from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore

    root: Path = tmp_path_factory.mktemp("sql")
    return SqlAlchemyStore(migrated_sqlite(f"{root}/db.sqlite"), str(root / "art"))


def _mlflow_order(store, experiment_id: str, clause: str, having: set[str]) -> list[str]:
    runs = store.search_runs([experiment_id], None, 1, order_by=[clause], max_results=1000)
    return [r.info.run_id for r in runs if r.info.run_id in having]


def _our_order(kind: str, key: str, ascending: bool) -> list[str]:
    if kind == "metrics":
        return list(ranks.iter_run_ids_by_metric(["1"], key, ascending))
    return list(param_ranks.iter_run_ids_by_param(["1"], key, ascending))


def test_rank_order_matches_sqlalchemy_store_also_while_paused(stream: s.Stream, mlflow_store) -> None:
    from mlflow.entities import Metric, Param

    experiment_id = mlflow_store.create_experiment(f"rank-{time.time_ns()}")
    clock = s.Clock()
    s.put_experiment("1", "ranked", clock.tick())
    having_metric: set[str] = set()
    having_param: set[str] = set()
    run_ids = []
    for i in range(14):
        start = 1000 + (i % 4)  # start-time ties: broken by run id, as in MLflow
        run = mlflow_store.create_run(experiment_id, "u", start, [], f"r{i}")
        run_id = run.info.run_id
        run_ids.append(run_id)
        s.put_run("1", run_id, f"r{i}", clock.tick(), start_time=start)
        if i < len(METRIC_VALUES):
            mlflow_store.log_metric(run_id, Metric("m", METRIC_VALUES[i], 1, 0))
            s.log_metric("1", run_id, "m", METRIC_VALUES[i], clock.tick())
            having_metric.add(run_id)
        if i < len(PARAM_VALUES):
            mlflow_store.log_param(run_id, Param("p", PARAM_VALUES[i]))
            s.log_param("1", run_id, "p", PARAM_VALUES[i], clock.tick())
            having_param.add(run_id)
    s.drain(stream)

    def check() -> None:
        for ascending in (True, False):
            direction = "ASC" if ascending else "DESC"
            assert _our_order("metrics", "m", ascending) == _mlflow_order(
                mlflow_store, experiment_id, f"metrics.m {direction}", having_metric
            )
            assert _our_order("params", "p", ascending) == _mlflow_order(mlflow_store, experiment_id, f"params.p {direction}", having_param)
            _check_resume(ascending)

    def _check_resume(ascending: bool) -> None:
        # A later page resumes at the last value returned: dropping what earlier pages returned
        # (the page token's job) leaves exactly the rest of the full order.
        metric_groups = list(ranks.iter_metric_groups(["1"], "m", ascending))
        full = [r for g in metric_groups for r in g]
        order = list(ranks.order_runs(metric_groups, ranks.load_runs_consistent))
        for i, run in enumerate(order):
            value = next(r.value for r in full if r.run_id == run["run_id"])
            resumed = [
                x["run_id"] for x in ranks.order_runs(ranks.iter_metric_groups(["1"], "m", ascending, value), ranks.load_runs_consistent)
            ]
            seen = {x["run_id"] for x in order[:i]}
            assert [r for r in resumed if r not in seen] == [x["run_id"] for x in order[i:]]
        param_groups = list(param_ranks.iter_param_groups(["1"], "p", ascending))
        full = [r for g in param_groups for r in g]
        order = list(ranks.order_runs(param_groups, ranks.load_runs_consistent))
        for i, run in enumerate(order):
            value = next(r.value for r in full if r.run_id == run["run_id"])
            resumed = [
                x["run_id"]
                for x in ranks.order_runs(param_ranks.iter_param_groups(["1"], "p", ascending, value), ranks.load_runs_consistent)
            ]
            seen = {x["run_id"] for x in order[:i]}
            assert [r for r in resumed if r not in seen] == [x["run_id"] for x in order[i:]]

    check()
    # Paused indexer: new latest values and a new param are not indexed yet, the order is still MLflow's.
    for i, value in [(0, -5.0), (3, 2.0), (4, math.nan)]:
        mlflow_store.log_metric(run_ids[i], Metric("m", value, 2, 1))
        s.log_metric("1", run_ids[i], "m", value, clock.tick())
    mlflow_store.log_metric(run_ids[12], Metric("m", 0.5, 1, 0))
    s.log_metric("1", run_ids[12], "m", 0.5, clock.tick())
    having_metric.add(run_ids[12])
    mlflow_store.log_param(run_ids[12], Param("p", "aa"))
    s.log_param("1", run_ids[12], "p", "aa", clock.tick())
    having_param.add(run_ids[12])
    check()
    s.drain(stream)
    check()


def test_top10_reads_few_items(stream: s.Stream) -> None:
    clock = s.Clock()
    s.put_experiment("1", "big", clock.tick())
    items = []
    for i in range(300):
        run_id = f"{i:032x}"
        items.append(
            ENTITY["run"].item(
                {"run_id": run_id, "experiment_id": "1", "start_time": i, "lifecycle_stage": "active"},
                experiment_id="1",
                run_id=run_id,
                start_time=i,
                lifecycle_stage="active",
            )
        )
        latest = run_metrics.latest_item("1", run_id, {"key": "loss", "value": i / 7, "timestamp": 1, "step": 0})
        items.append(rank_items.metric_rank_item(latest))
    table.batch_write(puts=items)
    table.STATS.reset()
    top = list(_take(ranks.iter_run_ids_by_metric(["1"], "loss", False), 10))
    assert top == [f"{i:032x}" for i in range(299, 289, -1)]
    assert table.STATS.items_read < 60, table.STATS.snapshot()


def _take(iterator, n: int) -> list:
    out = []
    for value in iterator:
        out.append(value)
        if len(out) == n:
            break
    return out
