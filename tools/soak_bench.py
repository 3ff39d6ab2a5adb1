"""Soak (issue 15): does ``make serve``'s memory stay flat under long use?

A runtime subprocess (``python -m local`` on its embedded engines: DynamoDB Local and moto S3, sync
indexer) takes, through the real mlflow client, 1,000 experiment create/rename/delete cycles and then 200
runs with 100 metric points each (one ``log_batch`` per run). The resident memory of the runtime process and,
separately, of the DynamoDB Local JVM it started is sampled along the way. Growth is counted from a baseline
taken after a short warm-up (every handler imported, first caches filled), so that it measures what long
use adds, not start-up. Budget: the runtime process grows less than 300 MB.

    python -m tools.soak_bench
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

from tools.server_process import ServerProcess, children, local_runtime_process, rss_mb  # noqa: E402

CYCLES = int(os.environ.get("BENCH_SOAK_CYCLES", "1000"))
RUNS = int(os.environ.get("BENCH_SOAK_RUNS", "200"))
POINTS = 100
WARMUP_CYCLES = 20
WARMUP_RUNS = 5
SAMPLES = 5
BUDGET_MB = 300


def _memory(server: ServerProcess) -> tuple[float, float]:
    """(runtime process RSS, DynamoDB Local JVM RSS) in MiB."""
    jvm = sum(rss_mb(child) for child in children(server.pid))
    return rss_mb(server.pid), jvm


def _experiment_cycles(client: object, count: int) -> None:
    for _ in range(count):
        name = f"soak-{uuid.uuid4().hex[:10]}"
        experiment_id = client.create_experiment(name)  # type: ignore[attr-defined]
        client.rename_experiment(experiment_id, f"{name}-renamed")  # type: ignore[attr-defined]
        client.delete_experiment(experiment_id)  # type: ignore[attr-defined]


def _runs(client: object, experiment_id: str, count: int) -> None:
    from mlflow.entities import Metric

    for r in range(count):
        run_id = client.create_run(experiment_id, run_name=f"soak-run-{r}").info.run_id  # type: ignore[attr-defined]
        timestamp = int(time.time() * 1000)
        metrics = [Metric(f"m{i % 5}", float(i), timestamp + i, i // 5) for i in range(POINTS)]
        client.log_batch(run_id, metrics=metrics)  # type: ignore[attr-defined]
        client.set_terminated(run_id)  # type: ignore[attr-defined]


def soak() -> dict[str, object]:
    from mlflow import MlflowClient

    with local_runtime_process() as server:
        client = MlflowClient(server.url)
        started_rss, started_jvm = _memory(server)
        runs_experiment = client.create_experiment(f"soak-runs-{uuid.uuid4().hex[:8]}")
        _experiment_cycles(client, WARMUP_CYCLES)
        _runs(client, runs_experiment, WARMUP_RUNS)
        base_rss, base_jvm = _memory(server)
        samples: list[tuple[str, float, float]] = [("after warm-up", base_rss, base_jvm)]
        started = time.perf_counter()
        step = max(1, CYCLES // SAMPLES)
        for done in range(0, CYCLES, step):
            _experiment_cycles(client, min(step, CYCLES - done))
            samples.append((f"{min(done + step, CYCLES)} experiment cycles", *_memory(server)))
        step = max(1, RUNS // SAMPLES)
        for done in range(0, RUNS, step):
            _runs(client, runs_experiment, min(step, RUNS - done))
            samples.append((f"+ {min(done + step, RUNS)} runs x {POINTS} points", *_memory(server)))
        elapsed = time.perf_counter() - started
        end_rss, end_jvm = _memory(server)
    return {
        "started": (started_rss, started_jvm),
        "samples": samples,
        "growth_rss": end_rss - base_rss,
        "growth_jvm": end_jvm - base_jvm,
        "seconds": elapsed,
    }


def rows(result: dict[str, object]) -> list[tuple[str, str]]:
    started_rss, started_jvm = result["started"]  # type: ignore[misc]
    out = [("runtime process / DynamoDB Local JVM RSS at start", f"{started_rss:.0f} MB / {started_jvm:.0f} MB")]
    for label, rss, jvm in result["samples"]:  # type: ignore[attr-defined]
        out.append((f"RSS {label}", f"{rss:.0f} MB / {jvm:.0f} MB"))
    growth = result["growth_rss"]
    verdict = "within" if growth < BUDGET_MB else "OVER"  # type: ignore[operator]
    out.append(("runtime process RSS growth after warm-up", f"{growth:+.0f} MB ({verdict} the {BUDGET_MB} MB budget)"))
    out.append(("DynamoDB Local JVM RSS growth after warm-up (holds the table in memory)", f"{result['growth_jvm']:+.0f} MB"))
    out.append(("wall time of the soak (after warm-up)", f"{result['seconds']:.0f} s"))
    return out


def scenario_soak(bench: object, _: int) -> None:
    title = f"Soak: {CYCLES} experiment create/rename/delete cycles + {RUNS} runs x {POINTS} metric points (runtime / JVM)"
    bench.extra.setdefault(title, []).extend(rows(soak()))  # type: ignore[attr-defined]


if __name__ == "__main__":
    for label, value in rows(soak()):
        print(f"{label}: {value}")
