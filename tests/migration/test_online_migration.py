"""``make migrate`` on a table written by the previous release, while clients keep logging (issue 23).

The previous release's code (``V1_RELEASE``, taken from git) serves a table first: the stock client logs runs,
metric histories, params, tags, a pair index and logged-model metrics through it, and its indexer writes the
layout-1 derived items. Then this code serves the same table (its stream continued from the same checkpoint, as a
deployed event source mapping would), and the migration runs in slices of a small item budget (each slice stops
with ``Paused`` and resumes from its checkpoint) while writer threads log new points and new runs, and a reader
thread checks that every answer is exact: histories (paged through page tokens), latest values, metric-ordered
searches and logged-model metrics equal what was logged, for runs nobody writes during the move. Afterwards every
point logged before or during the move is there exactly once, the layout version is 2, no layout-1 item is left,
and ``admin verify`` finds no difference. Traces the previous release wrote (infos and spans in the experiment
partition) are searched and read exactly once each, with their spans, during the move (the named ``traces_v2``
step), and none is left in layout 1 afterwards.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
import tarfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import requests

from tests.conftest import unique
from tools.server_process import free_port, stop_process, wait_healthy

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
# The release before layout 2 (main when issue 23 started): its code writes layout 1.
V1_RELEASE = "3e61dfbe01f1e9705fdb6c74618fd802126c10d9"
API = "/api/2.0/mlflow"
KEYS = ("m0", "m1", "m2")

Point = tuple[int, int, float]  # (timestamp, step, value)


@pytest.fixture(scope="module")
def v1_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The previous release's source tree (git archive of ``V1_RELEASE``)."""
    root = tmp_path_factory.mktemp("v1-release")
    archive = root / "v1.tar"
    with archive.open("wb") as out:
        subprocess.run(["git", "-C", str(ROOT), "archive", "--format=tar", V1_RELEASE], stdout=out, check=True)
    with tarfile.open(archive) as tar:
        tar.extractall(root / "tree", filter="data")
    return root / "tree"


@contextmanager
def serving(tree: Path, table: str, bucket: str, **env: str) -> Iterator[str]:
    """``python -m local`` from ``tree`` on the session's DynamoDB Local and S3, serving ``table``."""
    port = free_port()
    full = {**os.environ, "TABLE_NAME": table, "BUCKET_NAME": bucket, "PORT": str(port), "LOG_LEVEL": "ERROR", **env}
    log = tree.parent / f"server-{port}.log"
    with log.open("wb") as sink:
        process = subprocess.Popen([sys.executable, "-m", "local"], cwd=tree, env=full, stdout=sink, stderr=sink)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(url, process, timeout=120, log=log)
        yield url
    finally:
        stop_process(process)


class Logged:
    """What the clients logged and had acknowledged: points per (run, key), model metrics."""

    def __init__(self) -> None:
        self.points: dict[tuple[str, str], set[Point]] = {}
        self.lock = threading.Lock()

    def add(self, run_id: str, key: str, points: list[Point]) -> None:
        with self.lock:
            self.points.setdefault((run_id, key), set()).update(points)

    def history(self, run_id: str, key: str) -> list[Point]:
        with self.lock:
            return sorted(self.points.get((run_id, key), set()))

    def keys(self, run_id: str) -> set[str]:
        with self.lock:
            return {key for run, key in self.points if run == run_id}

    def latest_metrics(self, run_id: str) -> dict[str, float]:
        return {key: self.latest(run_id, key) for key in self.keys(run_id)}

    def latest(self, run_id: str, key: str) -> float:
        # MLflow's rule: max step, then timestamp, then value.
        return max(self.history(run_id, key), key=lambda p: (p[1], p[0], p[2]))[2]


def _log_history(client: Any, logged: Logged, run_id: str, seed: int, steps: int, single: int = 0) -> None:
    from mlflow.entities import Metric

    for key in KEYS:
        points = [(1_000_000 + seed * 1000 + step, step, round(math.sin(seed + step) + KEYS.index(key), 6)) for step in range(steps)]
        client.log_batch(run_id, metrics=[Metric(key, value, ts, step) for ts, step, value in points[single:]])
        for ts, step, value in points[:single]:
            client.log_metric(run_id, key, value, timestamp=ts, step=step)
        logged.add(run_id, key, points)


def _history_pages(url: str, run_id: str, key: str, size: int) -> list[Point]:
    """get-history page by page through its page tokens."""
    out: list[Point] = []
    token = None
    while True:
        params = {"run_id": run_id, "metric_key": key, "max_results": size, **({"page_token": token} if token else {})}
        body = requests.get(f"{url}{API}/metrics/get-history", params=params, timeout=60).json()
        out += [(m["timestamp"], m["step"], float(m["value"])) for m in body.get("metrics", [])]
        token = body.get("next_page_token")
        if not token:
            return out


def _check_stable(
    url: str, client: Any, logged: Logged, experiment_id: str, runs: list[str], model_id: str, model_points: list[Point]
) -> None:
    for run_id in runs:
        for key in KEYS:
            assert _history_pages(url, run_id, key, 7) == logged.history(run_id, key), (run_id, key)
        assert client.get_run(run_id).data.metrics == logged.latest_metrics(run_id), run_id
    ordered = client.search_runs([experiment_id], order_by=["metrics.m0 DESC"], max_results=100)
    expected = sorted(runs, key=lambda run_id: (-logged.latest(run_id, "m0"), run_id))
    assert [r.info.run_id for r in ordered] == expected
    ranged = client.search_runs([experiment_id], filter_string="metrics.m1 > 1.0", order_by=["metrics.m1 ASC"])
    assert [r.info.run_id for r in ranged] == sorted(
        (r for r in runs if logged.latest(r, "m1") > 1.0), key=lambda run_id: (logged.latest(run_id, "m1"), run_id)
    )
    model = client.get_logged_model(model_id)
    assert sorted((m.timestamp, m.step, m.value) for m in model.metrics) == model_points


@contextmanager
def table_selected(name: str) -> Iterator[None]:
    """This process's layer (admin, migrate) on ``name`` for the block."""
    from serverless_mlflow.storage import layout, table

    saved = os.environ["TABLE_NAME"]
    os.environ["TABLE_NAME"] = name
    table.reset_client()
    layout.forget()
    try:
        yield
    finally:
        os.environ["TABLE_NAME"] = saved
        table.reset_client()
        layout.forget()


def _log_traces(url: str, experiment_id: str, prefix: str, count: int) -> dict[str, tuple[str, int]]:
    """``count`` traces of two spans each through the stock client: trace id -> (name, span count)."""
    import mlflow

    mlflow.set_tracking_uri(url)
    mlflow.set_experiment(experiment_id=experiment_id)
    out = {}
    for i in range(count):
        with mlflow.start_span(name=f"{prefix}-{i}") as root:
            root.set_inputs({"i": i})
            with mlflow.start_span(name="child"):
                pass
        out[root.trace_id] = (f"{prefix}-{i}", 2)
    return out


def _traces(url: str, experiment_id: str) -> dict[str, tuple[str, int]]:
    """Every trace of the experiment as searched (paged by 2) and fetched with its spans: trace id -> (name, spans)."""
    import mlflow

    client = mlflow.MlflowClient(url)
    found: list[Any] = []
    token = None
    while True:
        page = client.search_traces(locations=[experiment_id], max_results=2, page_token=token)
        found += list(page)
        token = page.token
        if not token:
            break
    ids = [trace.info.trace_id for trace in found]
    assert len(ids) == len(set(ids)), ids
    return {t: (client.get_trace(t).info.tags.get("mlflow.traceName", ""), len(client.get_trace(t).data.spans)) for t in ids}


@pytest.mark.long
def test_online_migration_of_a_previous_release_table(server: str, v1_tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import mlflow

    monkeypatch.setenv("MLFLOW_ENABLE_ASYNC_TRACE_LOGGING", "false")  # a trace is stored when its function returns

    from serverless_mlflow.storage import layout
    from tools import admin, migrate, trace_migration
    from tools.migrate.steps import metrics_outside_experiment as metrics_step

    name, bucket = unique("migrate"), unique("migrate")
    logged = Logged()
    # --- the previous release writes layout 1 -------------------------------------------------------------
    with serving(v1_tree, name, bucket) as v1:
        client = mlflow.MlflowClient(v1)
        stable_experiment = client.create_experiment(unique("stable"))
        active_experiment = client.create_experiment(unique("active"))
        stable = []
        for i in range(5):
            run_id = client.create_run(stable_experiment, run_name=f"stable-{i}").info.run_id
            client.log_param(run_id, "lr", str(10 ** -(i % 3)))
            client.set_tag(run_id, "team", "a")
            _log_history(client, logged, run_id, seed=i, steps=12, single=2)
            stable.append(run_id)
        active = []
        for i in range(3):
            run_id = client.create_run(active_experiment, run_name=f"active-{i}").info.run_id
            _log_history(client, logged, run_id, seed=10 + i, steps=6)
            active.append(run_id)
        model = client.create_logged_model(stable_experiment, name="model")
        model_points = [(2_000 + i, i, 0.5 + i / 10) for i in range(4)]
        for ts, step, value in model_points:
            client.log_metric(stable[0], "acc", value, timestamp=ts, step=step, model_id=model.model_id)
            logged.add(stable[0], "acc", [(ts, step, value)])
        traced = _log_traces(v1, stable_experiment, "before", 4)
        env = {**os.environ, "TABLE_NAME": name}
        subprocess.run(
            [sys.executable, "-m", "tools.pair_index", "add", "--experiment", stable_experiment, "--param", "lr", "--metric", "m0"],
            cwd=v1_tree,
            env=env,
            check=True,
            capture_output=True,
        )
    with table_selected(name):
        assert layout.version() == layout.UNRECORDED
        assert metrics_step.has_layout_1_items(stable_experiment) and metrics_step.has_layout_1_items(active_experiment)
        assert len(list(trace_migration.layout1_infos(stable_experiment))) == 4 and layout.layout1_traces_possible()

    # --- this release serves the table; the migration runs while clients log and read -------------------
    with serving(ROOT, name, bucket, INDEXER_MODE="async") as v2:
        client = mlflow.MlflowClient(v2)
        _check_stable(v2, client, logged, stable_experiment, stable, model.model_id, model_points)  # layout 1, read by this code
        stop = threading.Event()
        failures: list[BaseException] = []
        counts = {"reads": 0, "writes": 0}

        def guarded(loop: Any) -> Any:
            def run() -> None:
                try:
                    while not stop.is_set():
                        loop()
                except BaseException as error:  # reported by the test thread
                    failures.append(error)
                    stop.set()

            return run

        step_counter = iter(range(100, 100_000))

        def write() -> None:
            from mlflow.entities import Metric

            run_id = active[counts["writes"] % len(active)] if counts["writes"] % 4 else client.create_run(active_experiment).info.run_id
            if run_id not in active:
                active.append(run_id)
            step_number = next(step_counter)
            points = {key: (3_000_000 + step_number, step_number, round(math.cos(step_number) + KEYS.index(key), 6)) for key in KEYS}
            if counts["writes"] % 2:
                client.log_batch(run_id, metrics=[Metric(key, p[2], p[0], p[1]) for key, p in points.items()])
            else:
                for key, p in points.items():
                    client.log_metric(run_id, key, p[2], timestamp=p[0], step=p[1])
            for key, point in points.items():
                logged.add(run_id, key, [point])
            counts["writes"] += 1

        def read() -> None:
            _check_stable(v2, client, logged, stable_experiment, stable, model.model_id, model_points)
            assert _traces(v2, stable_experiment) == traced, "a trace missing or twice during the move"
            for run_id in list(active):
                for key in KEYS:
                    acknowledged = set(logged.history(run_id, key))
                    history = _history_pages(v2, run_id, key, 5)
                    assert len(history) == len(set(history)), (run_id, key, "a point twice")
                    assert acknowledged <= set(history), (run_id, key, "a point missing")
            counts["reads"] += 1

        threads = [threading.Thread(target=guarded(write)), threading.Thread(target=guarded(read))]
        for thread in threads:
            thread.start()
        slices = 0
        try:
            with table_selected(name):
                while not stop.is_set():
                    slices += 1
                    try:
                        assert migrate.run(max_items=40, log=lambda _: None) == layout.CURRENT
                        break
                    except migrate.Paused:
                        continue
                reads_during_move = counts["reads"]
                time.sleep(2)  # a little more logging on the moved table
        finally:
            stop.set()
            for thread in threads:
                thread.join(timeout=120)
        if failures:
            raise failures[0]
        assert slices >= 2 and reads_during_move > 0 and counts["writes"] > 0

        # --- afterwards: everything exactly once, nothing left of layout 1, the derived items exact ---------
        with table_selected(name):
            assert layout.version() == layout.CURRENT
            for experiment_id in (stable_experiment, active_experiment):
                assert not metrics_step.has_layout_1_items(experiment_id)
            assert trace_migration.remaining([stable_experiment, active_experiment]) == 0
            layout.forget()
            assert layout.TRACES_V2 in layout.steps_done()
            deadline = time.monotonic() + 180
            while True:
                report = admin.verify()
                if (report.differences, report.pending) == (0, 0) or time.monotonic() > deadline:
                    break
                time.sleep(2)  # the asynchronous indexer of the serving process is still at work
            assert (report.differences, report.pending) == (0, 0), report.summary()
        _check_stable(v2, client, logged, stable_experiment, stable, model.model_id, model_points)
        assert _traces(v2, stable_experiment) == traced
        after = _log_traces(v2, stable_experiment, "after", 1)  # the moved experiment takes new traces
        assert _traces(v2, stable_experiment) == {**traced, **after}
        for run_id in active:
            for key in KEYS:
                assert _history_pages(v2, run_id, key, 9) == logged.history(run_id, key), (run_id, key)
            assert client.get_run(run_id).data.metrics == logged.latest_metrics(run_id)
        ordered = client.search_runs([active_experiment], order_by=["metrics.m2 ASC"], max_results=1000)
        assert [r.info.run_id for r in ordered] == sorted(active, key=lambda run_id: (logged.latest(run_id, "m2"), run_id))
