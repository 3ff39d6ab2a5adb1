"""Property: any sequence of writes, delivered with random batching, duplicates and replays of old
batches (and finally the whole stream again from the start), leaves exactly the derived state that
``admin verify`` recomputes from the source items."""

from __future__ import annotations

import copy
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tools import admin, pair_index

from . import support as s

EXPERIMENTS = ["1", "2"]
RUNS = [f"{i:032x}" for i in range(1, 3)]  # few ids: operations keep hitting the same items


def _run(experiment_id: str, run: str) -> str:
    """A run id belongs to one experiment (MLflow's ids are unique; a run's partition is keyed by its id alone)."""
    return experiment_id + run[1:]


NAMES = st.text(alphabet="abcAB_%# é\x00", min_size=0, max_size=9)
VALUES = st.sampled_from([0.0, -1.5, 2.0, 2.0, float("nan"), float("inf"), float("-inf"), 1e-300])

OPERATION = st.one_of(
    st.tuples(st.just("experiment"), st.sampled_from(EXPERIMENTS), NAMES),
    st.tuples(st.just("run"), st.sampled_from(EXPERIMENTS), st.sampled_from(RUNS), NAMES),
    st.tuples(st.just("metric"), st.sampled_from(EXPERIMENTS), st.sampled_from(RUNS), st.sampled_from(["m", "m#2"]), VALUES),
    st.tuples(st.just("metric"), st.just("1"), st.just(RUNS[0]), st.just("m"), VALUES),
    st.tuples(st.just("param"), st.sampled_from(EXPERIMENTS), st.sampled_from(RUNS), st.sampled_from(["p", "q"]), NAMES),
    st.tuples(st.just("delete_run"), st.sampled_from(EXPERIMENTS), st.sampled_from(RUNS)),
    st.tuples(st.just("model"), st.sampled_from(["M1", "m_2", "#3"])),
    st.tuples(st.just("delete_model"), st.sampled_from(["M1", "m_2", "#3"])),
    st.tuples(st.just("trace"), st.sampled_from(EXPERIMENTS), st.sampled_from(["t1", "t2"]), NAMES),
    st.tuples(st.just("deliver")),
    # A pair index declared (backfilled at once) or dropped at any point: its items converge like the rest.
    st.tuples(st.just("pair"), st.sampled_from(["add", "remove"]), st.just(("q", "m#2"))),
    st.tuples(st.just("param"), st.just("1"), st.just(RUNS[0]), st.just("p"), NAMES),
)


def apply(op: tuple, clock: s.Clock) -> None:
    kind = op[0]
    if kind == "experiment":
        s.put_experiment(op[1], op[2] or "x", clock.tick())
    elif kind == "run":
        s.put_run(op[1], _run(op[1], op[2]), op[3] or None, clock.tick())
    elif kind == "metric":
        s.log_metric(op[1], _run(op[1], op[2]), op[3], op[4], clock.tick())
    elif kind == "param":
        s.log_param(op[1], _run(op[1], op[2]), op[3], op[4], clock.tick())
    elif kind == "delete_run":
        s.delete_run(op[1], _run(op[1], op[2]))
    elif kind == "model":
        s.put_model(op[1], clock.tick())
    elif kind == "delete_model":
        s.delete_model(op[1])
    elif kind == "trace":
        s.set_trace_name(op[1], op[2], op[3])
    elif kind == "pair":
        (pair_index.add if op[1] == "add" else pair_index.remove)("1", *op[2])


def deliver_randomly(stream: s.Stream, rng: random.Random, delivered: list[list[dict]]) -> None:
    records = stream.read_new()
    while records:
        size = rng.randint(1, 6)
        batch, records = records[:size], records[size:]
        if rng.random() < 0.3:  # at-least-once: a record twice in one batch
            batch = [*batch, *copy.deepcopy(rng.sample(batch, 1))]
        s.invoke_indexer(copy.deepcopy(batch))
        delivered.append(batch)
        if delivered and rng.random() < 0.3:  # an old batch redelivered later
            s.invoke_indexer(copy.deepcopy(rng.choice(delivered)))


@pytest.mark.long
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(operations=st.lists(OPERATION, min_size=1, max_size=25), seed=st.integers(0, 2**16))
def test_random_operations_and_redeliveries_verify_clean(dynamodb_endpoint: str, operations: list[tuple], seed: int) -> None:
    rng = random.Random(seed)
    clock = s.Clock()
    with s.private_table(dynamodb_endpoint) as stream:
        for experiment_id in EXPERIMENTS:  # the partitions exist (as create_experiment makes them)
            s.put_experiment(experiment_id, f"exp{experiment_id}", clock.tick())
        for experiment_id in EXPERIMENTS:  # declared before any run: every run's items come from the indexer
            pair_index.add(experiment_id, "p", "m")
        delivered: list[list[dict]] = []
        for op in operations:
            if op[0] == "deliver":
                deliver_randomly(stream, rng, delivered)
            else:
                apply(op, clock)
                if rng.random() < 0.5:  # the indexer often sees intermediate versions, not only the last
                    deliver_randomly(stream, rng, delivered)
        deliver_randomly(stream, rng, delivered)
        s.drain(stream)
        # The whole stream again from the start, in random batch sizes.
        history = list(stream.history)
        while history:
            size = rng.randint(1, 20)
            s.invoke_indexer(copy.deepcopy(history[:size]))
            history = history[size:]
        s.drain(stream)
        report = admin.verify()
        assert report.differences == 0, report.summary()
        assert report.pending == 0, report.summary()


def test_verify_detects_and_reindex_repairs(dynamodb_endpoint: str) -> None:
    from serverless_mlflow.storage import table

    clock = s.Clock()
    with s.private_table(dynamodb_endpoint) as stream:
        s.put_experiment("1", "repair me", clock.tick())
        s.put_run("1", RUNS[0], "run name", clock.tick())
        s.log_metric("1", RUNS[0], "m", 1.0, clock.tick())
        s.drain(stream)
        assert admin.verify().differences == 0
        from serverless_mlflow.index import rank_items

        rank = table.query(**rank_items.METRIC_RANK.query("by_value", experiment_id="1", key="m"))[0]
        posting = table.query("EXP#1", "FTS#")[0]
        table.delete({"pk": rank["pk"], "sk": rank["sk"]})
        table.put({**posting, "sk": posting["sk"] + "zz"})  # a stray posting
        report = admin.verify()
        assert (report.summary()["missing"], report.summary()["unexpected"], report.pending) == (1, 1, 0)
        assert admin.main(["verify"]) == 1
        # Written while the indexer is paused (stream not delivered): the source is flagged pending.
        s.log_metric("1", RUNS[0], "m", 3.0, clock.tick())
        report = admin.verify()
        assert (report.summary()["missing"], report.summary()["unexpected"], report.pending) == (1, 1, 1)
        admin.reindex()
        report = admin.verify()
        assert report.differences == 0 and report.pending == 0
        assert admin.main(["verify"]) == 0
