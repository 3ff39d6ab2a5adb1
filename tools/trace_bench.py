"""Trace figures for ``make bench``: requests and items per logged trace and per search_traces page.

``scenario_traces(bench, _)`` plugs into ``tools/bench.py``'s SCENARIOS; ``python -m tools.trace_bench`` runs it
alone on a fresh embedded table and prints the rows.

* A logged trace: the stock client with synchronous export logs a trace of 3 spans (one OTLP request per span,
  then start_trace); Lambda invocations by route and DynamoDB work are counted.
* A search page: ``BENCH_TRACES`` (default 5000) trace infos are bulk-written in one experiment, then one
  ``search_traces`` page of 100 (MLflow's default order, a later page, a time range, a name filter) is counted.
"""

from __future__ import annotations

import os
import sys
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
for extra in (ROOT / "layers" / "shared" / "python", ROOT / "functions", ROOT):
    if str(extra) not in sys.path:
        sys.path.insert(0, str(extra))

from serverless_mlflow.storage import table  # noqa: E402
from serverless_mlflow.storage.schema import ENTITY  # noqa: E402
from serverless_mlflow.storage.table import STATS  # noqa: E402

SECTION = "Traces: requests and items per logged trace and per search_traces page"


def _fmt(snap: dict[str, Any]) -> str:
    by_type = ", ".join(f"{k} {v}" for k, v in sorted(snap["requests"].items()))
    return f"{sum(snap['requests'].values())} requests ({by_type}); {snap['items_read']} items read, {snap['items_written']} written"


def _counted(fn: Any) -> tuple[Any, dict[str, Any]]:
    STATS.reset()
    result = fn()
    return result, STATS.snapshot()


def log_one_trace(bench: Any) -> list[tuple[str, str]]:
    import mlflow

    from tools.artifact_bench import LambdaMeter

    os.environ["MLFLOW_ENABLE_ASYNC_TRACE_LOGGING"] = "false"
    mlflow.set_tracking_uri(bench.url)
    experiment_id = mlflow.create_experiment(f"bench-traces-{uuid.uuid4().hex[:8]}")
    mlflow.set_experiment(experiment_id=experiment_id)

    @mlflow.trace
    def leaf(x: int) -> int:
        return x + 1

    @mlflow.trace
    def middle(x: int) -> int:
        return leaf(x) * 2

    @mlflow.trace
    def root(x: int) -> int:
        return middle(x)

    root(0)  # warm: experiment lookups, version check
    meter = LambdaMeter()
    original_invoke = bench.runtime.invoke
    meter.attach(bench.runtime)
    try:
        _, snap = _counted(lambda: root(1))
    finally:
        bench.runtime.invoke = original_invoke
    summary = meter.summary()
    trace_id = mlflow.get_last_active_trace_id()
    client = mlflow.MlflowClient(bench.url)
    _, get_snap = _counted(lambda: client.get_trace(trace_id))
    return [
        (
            "log a 3-span trace: Lambda invocations",
            f"{summary['invocations']} ({', '.join(f'{k} {v}' for k, v in summary['by_operation'].items())})",
        ),
        ("log a 3-span trace: DynamoDB", _fmt(snap)),
        (
            "log a 3-span trace: per span (OTLP request)",
            "PutItem (span, if new) + UpdateItem (locator count) + GetItem (experiment) + GetItem (retention tag, cached 60 s)",
        ),
        ("get_trace (info, then spans): DynamoDB", _fmt(get_snap)),
    ]


def _bulk_traces(experiment_id: str, n: int) -> list[str]:
    trace_entity, locator = ENTITY["trace"], ENTITY["trace_locator"]
    base = int(time.time() * 1000) - n * 1000
    items, ids = [], []
    for i in range(n):
        trace_id = f"tr-{uuid.uuid4().hex}"
        ids.append(trace_id)
        name = f"agent-{i % 50}"
        attributes = {
            "trace_id": trace_id,
            "experiment_id": experiment_id,
            "request_time": base + i * 1000,
            "execution_duration": 5,
            "state": "OK" if i % 10 else "ERROR",
            "trace_name": name,
            "trace_metadata": {"mlflow.trace.infoFinalized": "true"},
            "tags": {"mlflow.artifactLocation": f"s3://b/{trace_id}", "team": f"t{i % 7}"},
        }
        items.append(
            trace_entity.item(
                attributes,
                experiment_id=experiment_id,
                trace_id=trace_id,
                request_time=base + i * 1000,
                trace_name=name,
                state=attributes["state"],
            )
        )
        items.append(locator.item({"experiment_id": experiment_id}, trace_id=trace_id))
    table.batch_write(puts=items)
    return ids


def search_pages(bench: Any) -> list[tuple[str, str]]:
    n = int(os.environ.get("BENCH_TRACES", "5000"))
    experiment_id = bench.call("POST", "/api/2.0/mlflow/experiments/create", {"name": f"bench-search-traces-{uuid.uuid4().hex[:8]}"})[
        "experiment_id"
    ]
    started = time.monotonic()
    _bulk_traces(experiment_id, n)
    setup = time.monotonic() - started
    location = [{"type": "MLFLOW_EXPERIMENT", "mlflow_experiment": {"experiment_id": experiment_id}}]

    def search(**body: Any) -> dict[str, Any]:
        return bench.call("POST", "/api/3.0/mlflow/traces/search", {"locations": location, "max_results": 100, **body})

    rows = [(f"setup: {n} trace infos in one experiment (bulk-written)", f"{setup:.0f} s")]
    first, snap = _counted(lambda: search())
    rows.append((f"search_traces page 1 of {n} (100, default order)", _fmt(snap)))
    token, page = first.get("next_page_token"), 2
    while token and page < 5 and (following := search(page_token=token).get("next_page_token")):
        token, page = following, page + 1
    if token:
        _, snap = _counted(lambda: search(page_token=token))
        rows.append((f"search_traces page {page} (page token)", _fmt(snap)))
    now = int(time.time() * 1000)
    _, snap = _counted(lambda: search(filter=f"timestamp_ms > {now - 200 * 1000}"))
    rows.append(("search_traces last 200 s (timestamp_ms range on lsi2)", _fmt(snap)))
    _, snap = _counted(lambda: search(filter="trace.name = 'agent-7'"))
    rows.append((f"search_traces name = (lsi4, {n // 50} traces of that name)", _fmt(snap)))
    _, snap = _counted(lambda: search(filter="trace.status = 'ERROR'"))
    rows.append((f"search_traces status = 'ERROR' (lsi3, {n // 10} such traces)", _fmt(snap)))
    _, snap = _counted(lambda: search(filter="tag.team = 't3'"))
    rows.append(("search_traces tag filter (no index: reads until the page fills)", _fmt(snap)))
    _, snap = _counted(lambda: search(order_by=["execution_time_ms DESC"]))
    rows.append(("search_traces other order_by (reads all, sorts in memory)", _fmt(snap)))
    ids = [t["trace_id"] for t in first["traces"][:10]]
    _, snap = _counted(lambda: bench.call("GET", "/api/3.0/mlflow/traces/batchGet", params={"trace_ids": ids}))
    rows.append(("traces/batchGet of 10 (the client's span fetch per 10 traces)", _fmt(snap)))
    return rows


def scenario_traces(bench: Any, _: int) -> None:
    rows = bench.extra.setdefault(SECTION, [])
    rows += log_one_trace(bench)
    rows += search_pages(bench)


if __name__ == "__main__":
    from tools.bench import run_standalone

    run_standalone(scenario_traces)
