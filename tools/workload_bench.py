"""The client workload of issue 11, timed on ``make serve``'s runtime and on stock ``mlflow server`` (sqlite)
in the same run: 20 runs x 500 metric points through the real mlflow client.

Per run: ``create_run``, two params, a tag, 500 metric points (5 keys x 100 steps) sent with ``log_batch``
in batches of 100 (as ``mlflow.log_metrics`` and autologging send them), ``set_terminated``; then one
``get_metric_history`` and one ``search_runs`` over the experiment. After a 2-run warm-up, the same workload
runs twice on each server (on the same store): a store that slows as it grows shows in the second pass.
The two servers run side by side and take turns, so that other load on the machine falls on both alike.

    python -m tools.workload_bench
"""

from __future__ import annotations

import os
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tools.server_process import local_runtime_process, mlflow_server_process  # noqa: E402

RUNS = int(os.environ.get("BENCH_WORKLOAD_RUNS", "20"))
POINTS = int(os.environ.get("BENCH_WORKLOAD_POINTS", "500"))
KEYS = 5
BATCH = 100
PASSES = 2


def client_workload(url: str, runs: int = RUNS, points: int = POINTS) -> float:
    """Run the workload against ``url``; returns its wall time in seconds."""
    from mlflow import MlflowClient
    from mlflow.entities import Metric

    client = MlflowClient(url)
    started = time.perf_counter()
    experiment_id = client.create_experiment(f"workload-{uuid.uuid4().hex[:8]}")
    for r in range(runs):
        run_id = client.create_run(experiment_id, run_name=f"run-{r}").info.run_id
        client.log_param(run_id, "lr", str(0.001 * (r + 1)))
        client.log_param(run_id, "layers", str(r % 4))
        client.set_tag(run_id, "team", "bench")
        timestamp = int(time.time() * 1000)
        metrics = [Metric(f"m{i % KEYS}", float(i), timestamp + i, i // KEYS) for i in range(points)]
        for start in range(0, points, BATCH):
            client.log_batch(run_id, metrics=metrics[start : start + BATCH])
        client.set_terminated(run_id)
        last_run = run_id
    history = client.get_metric_history(last_run, "m0")
    found = client.search_runs([experiment_id], max_results=runs)
    elapsed = time.perf_counter() - started
    if len(history) != points // KEYS or len(found) != runs:
        raise RuntimeError(f"{url}: workload read back {len(history)} points and {len(found)} runs")
    return elapsed


def measure() -> list[tuple[str, str]]:
    """Both servers run side by side and take turns, pass by pass: load from elsewhere on the machine falls on
    both alike."""
    label = f"{RUNS} runs x {POINTS} metric points"
    ours_name = "make serve (DynamoDB Local + moto S3, sync indexer)"
    reference_name = "mlflow server (sqlite, 1 worker)"
    times: dict[str, list[float]] = {ours_name: [], reference_name: []}
    with local_runtime_process() as ours, mlflow_server_process() as reference:
        for server in (ours, reference):  # first requests: handler imports, JIT, lazy imports of mlflow server
            client_workload(server.url, runs=2, points=BATCH)
        for _ in range(PASSES):
            for name, server in ((ours_name, ours), (reference_name, reference)):
                times[name].append(client_workload(server.url))
    # Wall times mean little on a loaded machine: say how loaded it was.
    rows: list[tuple[str, str]] = [
        ("load average of the machine (1 / 5 / 15 min) after the runs", " / ".join(f"{x:.1f}" for x in os.getloadavg()))
    ]
    for name, passes in times.items():
        rows.append((f"{name}: {label}, pass 1 (after a 2-run warm-up)", f"{passes[0]:.1f} s"))
        rows.extend((f"{name}: {label}, pass {i + 1} on the same store", f"{t:.1f} s") for i, t in enumerate(passes[1:], start=1))
    return rows


def scenario_workload(bench: object, _: int) -> None:
    rows = measure()
    bench.extra.setdefault("Client workload (issue 11): wall time against stock mlflow server", []).extend(rows)  # type: ignore[attr-defined]


if __name__ == "__main__":
    for measure_name, value in measure():
        print(f"{measure_name}: {value}")
