"""Metric writes and the indexer (issue 23): the marker handshake under its races, and the indexer's coalescing.

* A run's latest metrics live in its own partition; readers trust its digest, summary and RANK items only while
  it carries no ``run_metrics_marker``. The interleavings below put an indexer pass between a writer's steps and
  check what a reader gets (``run_summaries.read``, the RANK walk) against the values written.
* A training loop's records (one per point) delivered in one indexer batch cost the experiment partition a few
  write units per run, not per point (counted with DynamoDB's rules by ``tools.heat_meter``).
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import pytest

from serverless_mlflow.index import metric_marks, ranks, run_summaries
from serverless_mlflow.index.rank_filters import Flagged
from serverless_mlflow.storage import table
from serverless_mlflow.storage.schema import ENTITY
from serverless_mlflow.store import run_metrics
from tools import admin
from tools.heat_meter import HeatMeter

from . import support as s

RUN = "a" * 32


@pytest.fixture
def stream(dynamodb_endpoint: str) -> Iterator[s.Stream]:
    with s.private_table(dynamodb_endpoint) as st:
        yield st


def _seen(run_id: str = RUN, key: str = "loss") -> tuple[float | None, float | None]:
    """What a search reads for the run's metric: (its summary or range, its place in the RANK walk)."""
    flagged = run_summaries.flagged_runs(Flagged(["1"]).items("1"))
    view = run_summaries.read([("1", run_id)], flagged)[run_id]
    from_view = float(view.metrics[key]["value"]) if key in view.metrics else None
    walked = [r.value for group in ranks.iter_metric_groups(["1"], key, True) for r in group if r.run_id == run_id]
    return from_view, (walked[0] if walked else None)


def _write(value: float, at: int, before_put: object = None, between: object = None) -> None:
    """A metric writer's steps (functions/runs/data.py), with hooks to run an indexer pass in between."""
    ensured = metric_marks.before_write("1", RUN, *metric_marks.read("1", RUN))
    if callable(before_put):
        before_put()
    table.put(run_metrics.latest_item("1", RUN, {"key": "loss", "value": value, "timestamp": at, "step": at}))
    if callable(between):
        between()
    metric_marks.after_write("1", RUN, ensured)


def _setup(stream: s.Stream) -> s.Clock:
    clock = s.Clock()
    s.put_experiment("1", "marks", clock.tick())
    s.put_run("1", RUN, "run", clock.tick())
    s.log_metric("1", RUN, "loss", 1.0, clock.tick())
    s.drain(stream)
    assert _seen() == (1.0, 1.0)
    return clock


def test_a_pass_between_the_writers_mark_and_its_write_leaves_the_run_marked(stream: s.Stream) -> None:
    _setup(stream)
    # The writer's marker goes in, then an indexer pass runs to its end (it reads the metrics before the write,
    # and removes the marker), then the value is written: the writer's count sees the pass and marks the run again.
    _write(2.0, 10, before_put=lambda: s.drain(stream))
    assert table.get(metric_marks.MARKER.key(experiment_id="1", run_id=RUN)) is not None
    assert _seen() == (2.0, 2.0)  # exact while the digest, summary and RANK item still say 1.0
    s.drain(stream)
    assert _seen() == (2.0, 2.0) and table.get(metric_marks.MARKER.key(experiment_id="1", run_id=RUN)) is None
    report = admin.verify()
    assert (report.differences, report.pending) == (0, 0), report.summary()


def test_a_pass_between_the_write_and_its_count_is_covered(stream: s.Stream) -> None:
    _setup(stream)
    # The pass begins after the write: it indexes it (and its marker may go) before the writer has answered.
    _write(3.0, 10, between=lambda: s.drain(stream))
    assert _seen() == (3.0, 3.0)
    s.drain(stream)
    assert _seen() == (3.0, 3.0)
    assert (admin.verify().differences, admin.verify().pending) == (0, 0)


def test_without_the_recount_the_race_would_show_a_stale_value(stream: s.Stream) -> None:
    """The race the recount closes is real: skip ``after_write`` and a search trusts a stale summary."""
    _setup(stream)
    metric_marks.before_write("1", RUN, *metric_marks.read("1", RUN))
    s.drain(stream)  # a pass that read the metrics before the write below, and removed the marker
    table.put(run_metrics.latest_item("1", RUN, {"key": "loss", "value": 4.0, "timestamp": 10, "step": 10}))
    assert _seen() == (1.0, 1.0)
    s.drain(stream)  # the write's own record: indexed later
    assert _seen() == (4.0, 4.0)


def test_a_marked_run_costs_writers_no_experiment_partition_write(stream: s.Stream) -> None:
    _setup(stream)
    meter = HeatMeter()
    meter.install()
    table.reset_client()
    try:
        for step in range(20):
            _write(float(step), 100 + step)
        usage = meter.snapshot()
    finally:
        meter.uninstall()
        table.reset_client()
    experiment = usage.get(ENTITY["experiment"].pk.render({"experiment_id": "1"}))
    # One marker (table item + its LSI5 entry) for 20 writes; the rest is in the run's partition.
    assert experiment is not None and experiment.units == 2 and experiment.writes == 1, usage
    assert _seen() == (19.0, 19.0)


def test_a_training_loops_records_cost_the_experiment_partition_per_key_not_per_point(stream: s.Stream) -> None:
    """Every key at each step, single-point writes, one indexer batch per window: the experiment partition's write
    units per batch stay at most one per key, whatever the number of steps in the batch."""
    clock = s.Clock()
    s.put_experiment("1", "loop", clock.tick())
    s.put_run("1", RUN, "run", clock.tick())
    s.drain(stream)
    keys = [f"m{k}" for k in range(10)]
    meter = HeatMeter()
    meter.install()
    table.reset_client()
    experiment_pk = ENTITY["experiment"].pk.render({"experiment_id": "1"})
    per_batch = []
    try:
        step = 0
        # A first batch registers the keys (once per key and experiment); then batches of 3 and of 12 steps.
        for steps in (1, 3, 12):
            meter.reset()
            for _ in range(steps):
                for key in keys:
                    s.log_metric("1", RUN, key, math.exp(-step / 10) + len(key), clock.tick())
                step += 1
            records = stream.read_new()
            assert len(records) >= steps * len(keys)  # a record per point
            assert not s.invoke_indexer(records).get("batchItemFailures")
            per_batch.append(meter.snapshot().get(experiment_pk))
            s.drain(stream)
        per_batch = per_batch[1:]
    finally:
        meter.uninstall()
        table.reset_client()
    for usage in per_batch:
        assert usage is not None and usage.units <= len(keys), per_batch
    # The same work for 12 steps as for 3: nothing grows with the points of a batch.
    assert per_batch[0].units == per_batch[1].units, per_batch
    assert _seen(key="m0") == (pytest.approx(math.exp(-15 / 10) + 2), pytest.approx(math.exp(-15 / 10) + 2))
    report = admin.verify()
    assert (report.differences, report.pending) == (0, 0), report.summary()
