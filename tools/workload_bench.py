"""W1, the client workload of issues 11 and 25, through the real mlflow client: wall time on ``make serve``'s
runtime against stock ``mlflow server`` (sqlite) in the same run, and the DynamoDB requests it costs.

W1: an experiment; 20 runs, each with ``create_run``, two params, a tag, 500 metric points (5 keys x 100
steps) sent with ``log_batch`` in batches of 100 (as ``mlflow.log_metrics`` and autologging send them),
``set_terminated`` and ``get_run``; then the history of every key of the last run, three ``search_runs``
(no filter; a metric filter ordered by it; a param filter), and the registry: a registered model, two
versions from the runs, an alias set and resolved, ``search_model_versions``.

* Wall time: after a warm-up (one whole W1 on each server, not counted), W1 runs ``PASSES`` times on each server (on the same store: a store
  that slows as it grows shows in the later passes); the two servers run side by side and take turns, so
  that other load on the machine falls on both alike.
* Requests: W1 once more on an in-process runtime (sync indexer, fresh engines), every DynamoDB and
  DynamoDB Streams request counted by who made it (the functions, the indexer, the stream follower), and
  the runtime's time split between the functions, the sync drain and the engine.

    python -m tools.workload_bench
"""

from __future__ import annotations

import os
import statistics
import sys
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tools.server_process import local_runtime_process, mlflow_server_process  # noqa: E402

RUNS = int(os.environ.get("BENCH_WORKLOAD_RUNS", "20"))
POINTS = int(os.environ.get("BENCH_WORKLOAD_POINTS", "500"))
PASSES = int(os.environ.get("BENCH_WORKLOAD_PASSES", "3"))
KEYS = 5
BATCH = 100
LABEL = f"W1 ({RUNS} runs x {POINTS} metric points, gets, history, searches, registry)"


def client_workload(url: str, runs: int = RUNS, points: int = POINTS) -> float:
    """Run W1 against ``url``; returns its wall time in seconds (checks what it reads back)."""
    from mlflow import MlflowClient
    from mlflow.entities import Metric

    client = MlflowClient(url, registry_uri=url)
    started = time.perf_counter()
    experiment_id = client.create_experiment(f"workload-{uuid.uuid4().hex[:8]}")
    run_ids = []
    for r in range(runs):
        run_id = client.create_run(experiment_id, run_name=f"run-{r}").info.run_id
        client.log_param(run_id, "lr", str(0.001 * (r + 1)))
        client.log_param(run_id, "layers", str(r % 4))
        client.set_tag(run_id, "team", "bench")
        timestamp = int(time.time() * 1000)
        metrics = [Metric(f"m{i % KEYS}", float(i + r), timestamp + i, i // KEYS) for i in range(points)]
        for start in range(0, points, BATCH):
            client.log_batch(run_id, metrics=metrics[start : start + BATCH])
        client.set_terminated(run_id)
        if len(client.get_run(run_id).data.metrics) != min(KEYS, points):
            raise RuntimeError(f"{url}: get_run after logging")
        run_ids.append(run_id)
    histories = [client.get_metric_history(run_ids[-1], f"m{k}") for k in range(KEYS)]
    everything = client.search_runs([experiment_id], max_results=runs)
    best = client.search_runs([experiment_id], "metrics.m0 > 5", order_by=["metrics.m0 DESC"], max_results=5)
    layers = client.search_runs([experiment_id], "params.layers = '1'")
    model = f"workload-{uuid.uuid4().hex[:8]}"
    client.create_registered_model(model)
    for run_id in run_ids[-2:]:
        client.create_model_version(model, f"runs:/{run_id}/model", run_id)
    client.set_registered_model_alias(model, "champion", "2")
    champion = client.get_model_version_by_alias(model, "champion")
    versions = client.search_model_versions(f"name = '{model}'")
    elapsed = time.perf_counter() - started
    read_back = ([len(h) for h in histories], len(everything), len(best), len(layers), champion.version, len(versions))
    expected = ([points // KEYS] * KEYS, runs, min(5, runs), len([r for r in range(runs) if r % 4 == 1]), "2", 2)
    if read_back != expected:
        raise RuntimeError(f"{url}: W1 read back {read_back}, expected {expected}")
    return elapsed


# --- wall time, both servers in the same run --------------------------------------------------------------------


@dataclass
class Walls:
    ours: list[float]
    reference: list[float]
    load: tuple[float, float, float]

    @property
    def ratios(self) -> list[float]:
        return [o / r for o, r in zip(self.ours, self.reference, strict=True)]


def measure_walls(passes: int = PASSES) -> Walls:
    ours: list[float] = []
    reference: list[float] = []
    with local_runtime_process() as local, mlflow_server_process() as stock:
        # One whole W1 each first, not counted: handler imports, lazy imports of mlflow server, and DynamoDB Local's
        # JIT, which needs a few thousand requests (after a 2-run warm-up the first pass still took 3x the others).
        for server in (local, stock):
            client_workload(server.url)
        for _ in range(passes):
            ours.append(client_workload(local.url))
            reference.append(client_workload(stock.url))
    return Walls(ours, reference, os.getloadavg())


# --- requests and where the runtime's time goes --------------------------------------------------------------------


@dataclass
class Profile:
    requests: Counter[str] = field(default_factory=Counter)  # "<caller> <service>:<operation>"
    seconds: Counter[str] = field(default_factory=Counter)
    http_requests: int = 0
    wall: float = 0.0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _started: threading.local = field(default_factory=threading.local, repr=False)

    def add(self, key: str, seconds: float = 0.0, count: int = 1) -> None:
        with self._lock:
            self.requests[key] += count
            self.seconds[key] += seconds

    def by_caller(self) -> dict[str, tuple[int, float]]:
        out: dict[str, list[float]] = {}
        for key, count in self.requests.items():
            if key.startswith("engine "):
                caller = key.split()[1]
                entry = out.setdefault(caller, [0, 0.0])
                entry[0] += count
                entry[1] += self.seconds[key]
        return {caller: (int(n), s) for caller, (n, s) in out.items()}


def _caller() -> str:
    from local import iam

    function = iam._current.get()
    return "indexer" if function == "indexer" else ("stream-follower" if function is None else "functions")


@contextmanager
def _profiled(profile: Profile) -> Iterator[None]:
    """Count and time every DynamoDB / Streams request of the boto3 clients made from now on."""
    import boto3

    events = boto3._get_default_session().events

    def before(model: Any, **_: Any) -> None:
        profile._started.t = time.perf_counter()

    def after(model: Any, **_: Any) -> None:
        elapsed = time.perf_counter() - getattr(profile._started, "t", time.perf_counter())
        profile.add(f"engine {_caller()} {model.service_model.service_name}:{model.name}", elapsed)

    for service in ("dynamodb", "dynamodbstreams"):
        events.register(f"before-call.{service}", before, unique_id=f"workload-before-{service}")
        events.register(f"after-call.{service}", after, unique_id=f"workload-after-{service}")
    try:
        yield
    finally:
        for service in ("dynamodb", "dynamodbstreams"):
            events.unregister(f"before-call.{service}", unique_id=f"workload-before-{service}")
            events.unregister(f"after-call.{service}", unique_id=f"workload-after-{service}")


def measure_requests() -> Profile:
    """W1 on an in-process runtime (sync indexer, its own engines and table), counted after a warm-up."""
    from local import runtime as runtime_module
    from local.engine import SERVER_JAVA_OPTS
    from tools.bench import fresh_runtime

    profile = Profile()
    # As python -m local runs DynamoDB Local (the C2 compiler: W1 runs long enough for it to pay).
    java_opts = os.environ.get("DYNAMODB_LOCAL_JAVA_OPTS")
    os.environ["DYNAMODB_LOCAL_JAVA_OPTS"] = SERVER_JAVA_OPTS
    with _profiled(profile):
        runtime = fresh_runtime("sync")
        invoke_function = runtime_module.invoke_api_function
        try:
            client_workload(runtime.url)  # warm, as the wall-time passes are
            function_time, drain_time = _time_phases(runtime, runtime_module, profile)
            profile.requests.clear()
            profile.seconds.clear()
            started = time.perf_counter()
            client_workload(runtime.url)
            profile.wall = time.perf_counter() - started
            profile.seconds["function"], profile.seconds["drain"] = function_time[0], drain_time[0]
        finally:
            runtime_module.invoke_api_function = invoke_function
            runtime.stop()
            if java_opts is None:
                os.environ.pop("DYNAMODB_LOCAL_JAVA_OPTS", None)
            else:
                os.environ["DYNAMODB_LOCAL_JAVA_OPTS"] = java_opts
    return profile


def _time_phases(runtime: Any, runtime_module: Any, profile: Profile) -> tuple[list[float], list[float]]:
    """Wrap the runtime's function call and sync drain with timers (totals in the returned one-item lists)."""
    function_time, drain_time = [0.0], [0.0]
    invoke_function = runtime_module.invoke_api_function
    catch_up = runtime._catch_up_quietly

    def timed_function(*args: Any) -> Any:
        started = time.perf_counter()
        try:
            return invoke_function(*args)
        finally:
            function_time[0] += time.perf_counter() - started
            profile.http_requests += 1

    def timed_drain() -> None:
        started = time.perf_counter()
        try:
            catch_up()
        finally:
            drain_time[0] += time.perf_counter() - started

    runtime_module.invoke_api_function = timed_function
    runtime._catch_up_quietly = timed_drain
    return function_time, drain_time


def median(values: list[float]) -> float:
    return statistics.median(values) if values else 0.0


if __name__ == "__main__":
    walls = measure_walls()
    print(f"{LABEL}: make serve {walls.ours}, mlflow server {walls.reference}, ratios {walls.ratios}, load {walls.load}")
    profile = measure_requests()
    print(profile.by_caller(), profile.http_requests, profile.wall)
