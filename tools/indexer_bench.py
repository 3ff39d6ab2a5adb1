"""Indexer figures for ``make bench``: write amplification, index-backed search reads, indexer lag.

``scenario_indexer(bench, n_runs)`` plugs into ``tools/bench.py``'s SCENARIOS; ``python -m
tools.indexer_bench`` runs it alone on a fresh embedded table and prints the rows.

* Write amplification: a write is sent over HTTP with the indexer paused, then the stream is
  drained through the real indexer handler and its DynamoDB work is counted (``table.STATS``).
* Search reads: ``n`` experiments (``BENCH_EXPERIMENTS``, default 2000; 10000 takes > 20 min in moto: every name costs ~35 derived
  items in moto) and ``n_runs`` runs are written directly in their indexed state (source items plus
  the derived items ``derived.derive`` computes, exactly what the indexer writes), then the
  index-backed reads are counted against the exhaustive ones.
"""

from __future__ import annotations

import os
import random
import sys
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
for extra in (ROOT / "layers" / "shared" / "python", ROOT / "functions", ROOT):
    if str(extra) not in sys.path:
        sys.path.insert(0, str(extra))

from serverless_mlflow.index import derived, fts, ranks  # noqa: E402
from serverless_mlflow.storage import table  # noqa: E402
from serverless_mlflow.storage.schema import ENTITY  # noqa: E402
from serverless_mlflow.storage.table import STATS  # noqa: E402
from serverless_mlflow.store import run_metrics  # noqa: E402

API = "/api/2.0/mlflow"
WORDS = ["churn", "fraud", "forecast", "ranking", "vision", "speech", "pricing", "search", "ads", "risk", "demand", "nlp"]


def _counted(fn: Any) -> tuple[Any, dict[str, Any]]:
    STATS.reset()
    result = fn()
    return result, STATS.snapshot()


def _fmt(snap: dict[str, Any]) -> str:
    by_type = ", ".join(f"{k} {v}" for k, v in sorted(snap["requests"].items()))
    return f"{snap['items_written']} items written, {snap['items_read']} read ({by_type})"


def _drain(runtime: Any) -> dict[str, Any]:
    mode = runtime.indexer_mode
    runtime.indexer_mode = "sync"
    try:
        _, snap = _counted(runtime.drain_stream)
    finally:
        runtime.indexer_mode = mode
    return snap


def write_amplification(bench: Any) -> list[tuple[str, str]]:
    rows: list[tuple[str, str]] = []
    runtime = bench.runtime
    _drain(runtime)  # start from a quiet stream
    name = f"indexer bench {uuid.uuid4().hex[:6]}"
    exp_id = bench.call("POST", f"{API}/experiments/create", {"name": name})["experiment_id"]
    rows.append((f"create experiment ({len(name)}-char name): indexer work", _fmt(_drain(runtime))))
    run_name = "resnet50-baseline"
    run = bench.call("POST", f"{API}/runs/create", {"experiment_id": exp_id, "run_name": run_name, "start_time": 1})["run"]
    run_id = run["info"]["run_id"]
    rows.append((f"create run ({len(run_name)}-char name): indexer work", _fmt(_drain(runtime))))
    bench.call("POST", f"{API}/runs/log-metric", {"run_id": run_id, "key": "loss", "value": 1.0, "timestamp": 1, "step": 0})
    rows.append(("log_metric, new key: indexer work", _fmt(_drain(runtime))))
    bench.call("POST", f"{API}/runs/log-metric", {"run_id": run_id, "key": "loss", "value": 0.5, "timestamp": 2, "step": 1})
    rows.append(("log_metric, new latest value: indexer work", _fmt(_drain(runtime))))
    bench.call("POST", f"{API}/runs/log-metric", {"run_id": run_id, "key": "loss", "value": 0.7, "timestamp": 3, "step": 0})
    rows.append(("log_metric, older step (latest unchanged): indexer work", _fmt(_drain(runtime))))
    metrics = [{"key": f"m{i % 5}", "value": float(i), "timestamp": 1000 + i, "step": i // 5} for i in range(1000)]
    bench.call("POST", f"{API}/runs/log-batch", {"run_id": run_id, "metrics": metrics})
    rows.append(("log_batch 1000 points / 5 keys: indexer work", _fmt(_drain(runtime))))
    bench.call("POST", f"{API}/runs/log-parameter", {"run_id": run_id, "key": "lr", "value": "0.001"})
    rows.append(("log_param: indexer work", _fmt(_drain(runtime))))
    bench.call("POST", f"{API}/runs/update", {"run_id": run_id, "run_name": "resnet50-tuned"})
    rows.append(("rename run (resnet50-baseline -> resnet50-tuned): indexer work", _fmt(_drain(runtime))))
    bench.call("POST", f"{API}/runs/set-tag", {"run_id": run_id, "key": "stage", "value": "dev"})
    rows.append(("set_tag: indexer work", _fmt(_drain(runtime))))
    bench.call("POST", f"{API}/runs/delete-tag", {"run_id": run_id, "key": "stage"})
    rows.append(("delete_tag (flags the run item): indexer work", _fmt(_drain(runtime))))
    dataset = {"name": "train", "digest": "d1", "source_type": "local", "source": "file:///train"}
    bench.call("POST", f"{API}/runs/log-inputs", {"run_id": run_id, "datasets": [{"dataset": dataset, "tags": []}]})
    rows.append(("log_inputs, one dataset (flags the run item): indexer work", _fmt(_drain(runtime))))
    bench.call("POST", f"{API}/runs/update", {"run_id": run_id, "status": "FINISHED", "end_time": 5})
    rows.append(("update run status (name unchanged): indexer work", _fmt(_drain(runtime))))
    # With a pair index declared (tools.pair_index), the run's pair item moves with the summary, in one transaction.
    from tools import pair_index

    pair_index.add(exp_id, "lr", "loss")
    bench.call("POST", f"{API}/runs/log-metric", {"run_id": run_id, "key": "loss", "value": 0.25, "timestamp": 4, "step": 2})
    rows.append(("log_metric, new latest value, one pair index (lr x loss) declared: indexer work", _fmt(_drain(runtime))))
    model = f"bench model {uuid.uuid4().hex[:6]}"
    bench.call("POST", f"{API}/registered-models/create", {"name": model})
    rows.append((f"create registered model ({len(model)}-char name): indexer work", _fmt(_drain(runtime))))
    # Lag: local sync delivery of 100 metric writes (async mode adds up to its batching window, as deployed).
    for i in range(100):
        bench.call("POST", f"{API}/runs/log-metric", {"run_id": run_id, "key": f"lag{i}", "value": float(i), "timestamp": 10, "step": 0})
    started = time.monotonic()
    _drain(runtime)
    elapsed = time.monotonic() - started
    rows.append(
        (
            "indexer lag, local runtime: 100 pending metric writes drained",
            f"{elapsed:.2f} s ({elapsed * 10:.0f} ms per write, DynamoDB Local; + up to the 1 s batching window in async mode, as deployed)",
        )
    )
    return rows


def _put_indexed(sources: list[dict[str, Any]]) -> None:
    """Source items in their indexed state: no pending flag, plus their derived items."""
    items: list[dict[str, Any]] = []
    for source in sources:
        source = {k: v for k, v in source.items() if k != derived.FLAG_ATTRIBUTE}
        items.append(source)
        items.extend(derived.derive(source).values())
    table.batch_write(puts=items)


def search_reads(n_experiments: int, n_runs: int) -> list[tuple[str, str]]:
    rows: list[tuple[str, str]] = []
    rng = random.Random(1)
    workspace = f"bench{uuid.uuid4().hex[:6]}"
    entries = []
    for i in range(n_experiments):
        name = f"{rng.choice(WORDS)}-{rng.choice(WORDS)}-{i:05d}"
        attrs = {
            "experiment_id": str(900_000 + i),
            "name": name,
            "artifact_location": "s3://b",
            "lifecycle_stage": "active",
            "creation_time": 1,
            "last_update_time": 1,
            "workspace": workspace,
        }
        entries.append(ENTITY["experiment_entry"].item(attrs, **attrs, experiment_num=900_000 + i))
    started = time.monotonic()
    _put_indexed(entries)
    setup_s = time.monotonic() - started
    scope = fts.experiments_scope(workspace)
    for pattern in ["%forecast-pricing%", "%00042%", "%ICIN%"]:
        candidates, snap = _counted(lambda p=pattern: fts.experiment_candidates(workspace, p))
        rows.append(
            (
                f"name ILIKE '{pattern}' over {n_experiments} experiments: FTS candidates",
                f"{len(candidates or ())} candidates, {snap['items_read']} items read, {sum(snap['requests'].values())} requests",
            )
        )
    _, full = _counted(lambda: table.query(scope, "E#"))
    rows.append((f"same search without the index (read the {n_experiments}-experiment collection)", f"{full['items_read']} items read"))
    rows.append((f"setup: {n_experiments} experiments + postings written", f"{setup_s:.0f} s (moto)"))

    experiment_id = str(800_000 + rng.randint(0, 99_999))
    sources = []
    for i in range(n_runs):
        run_id = uuid.UUID(int=rng.getrandbits(128)).hex
        attrs = {"run_id": run_id, "experiment_id": experiment_id, "start_time": i, "lifecycle_stage": "active", "status": "FINISHED"}
        sources.append(ENTITY["run"].item(attrs, **attrs))
        value = rng.random()
        sources.append(run_metrics.latest_item(experiment_id, run_id, {"key": "acc", "value": value, "timestamp": 1, "step": 0}))
    started = time.monotonic()
    _put_indexed(sources)
    setup_s = time.monotonic() - started
    for ascending in (False, True):

        def top10(asc: bool = ascending) -> list[str]:
            out = []
            for run_id in ranks.iter_run_ids_by_metric([experiment_id], "acc", asc):
                out.append(run_id)
                if len(out) == 10:
                    break
            return out

        top, snap = _counted(top10)
        assert len(top) == 10, top  # a figure for a wrong answer would be worthless
        rows.append(
            (
                f"top 10 by metrics.acc {'ASC' if ascending else 'DESC'} over {n_runs} runs (RANK items + run items)",
                f"{snap['items_read']} items read, {sum(snap['requests'].values())} requests",
            )
        )
    rows.append((f"setup: {n_runs} runs + latest metrics + RANK items written", f"{setup_s:.0f} s (moto)"))
    return rows


def scenario_indexer(bench: Any, n_runs: int) -> None:
    bench.extra.setdefault("Indexer: write amplification and lag (derived work per source write)", []).extend(write_amplification(bench))
    n_experiments = int(os.environ.get("BENCH_EXPERIMENTS", "2000"))
    bench.extra.setdefault("Indexer: index-backed search reads", []).extend(search_reads(n_experiments, n_runs))


def main() -> None:
    import tools.bench as base
    from local.runtime import LocalRuntime

    os.environ["TABLE_NAME"] = f"bench-{uuid.uuid4().hex[:8]}"
    runtime = LocalRuntime(port=0, indexer_mode="paused").start()
    bench = base.Bench(runtime.url, runtime)
    try:
        scenario_indexer(bench, int(os.environ.get("BENCH_RUNS", "10000")))
    finally:
        runtime.stop()
    for title, rows in bench.extra.items():
        print(f"\n## {title}\n\n| measure | value |\n|---|---|")
        for key, value in rows:
            print(f"| {key} | {value} |")


if __name__ == "__main__":
    main()
