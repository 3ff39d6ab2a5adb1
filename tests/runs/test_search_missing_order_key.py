"""Regression (issue 11): ordering by a metric none of the runs has, then by start_time, with a filter,
paged. Every matching run comes back exactly once, in MLflow's order (SqlAlchemyStore on sqlite)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from mlflow.entities import Metric, Param, RunTag, ViewType

from tests.conftest import runtime_process, unique
from tests.runs.test_search_differential import REF, World, _compare_search

# One world (a fresh runtime and its reference store) serves every ordering: searches change nothing, and building
# it is most of the time. Its tests run on one worker.
pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("missing-order-key")]

N_RUNS = 48


def _world(url: str, tmp: Path) -> World:
    world = World(url, tmp)
    world.ours_exps.append(world.client.create_experiment("missing-key"))
    world.ref_exps.append(world.store.create_experiment("missing-key"))
    for i in range(N_RUNS):
        # Ties on start_time (every third run shares one) exercise the run_id tie-breaker too.
        start = 1000 + (i // 3) * 7 if i % 2 else 5000 - i * 3
        tags = [RunTag(REF, str(i)), RunTag("mlflow.user", "u")]
        params = [Param("p", "a" if i % 5 else "b")]
        metrics = [Metric("m", float(i % 4), 1, 0)] if i % 3 == 0 else []
        ours = world.client.create_run(world.ours_exps[0], start_time=start, tags={t.key: t.value for t in tags})
        ref = world.store.create_run(world.ref_exps[0], "u", start, tags, None)
        world.ours_ids.append(ours.info.run_id)
        world.ref_ids.append(ref.info.run_id)
        world.client.log_batch(ours.info.run_id, metrics, params, [])
        world.store.log_batch(ref.info.run_id, metrics, params, [])
    return world


@pytest.fixture(scope="module")
def world(server: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    with runtime_process({"TABLE_NAME": unique("fresh"), "BUCKET_NAME": unique("fresh")}) as url:
        yield _world(url, tmp_path_factory.mktemp("missing-key"))


@pytest.mark.parametrize(
    "order_by",
    [
        ["metrics.absent", "start_time ASC"],
        ["metrics.absent DESC", "start_time ASC"],
        ["metrics.absent", "start_time DESC"],
        ["metrics.m", "start_time ASC"],
        ["metrics.m DESC", "attributes.start_time ASC"],
    ],
)
def test_ordering_by_a_key_runs_lack_keeps_every_run_once(world: World, order_by: list[str]) -> None:
    for filter_string in ("params.p = 'a'", "attributes.start_time > 0", ""):
        for size in (5, 7, 40):
            assert _compare_search(world, filter_string, order_by, ViewType.ACTIVE_ONLY, size, f"{filter_string} {order_by} {size}")
