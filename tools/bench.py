"""``make bench``: docs/performance.md, regenerated whole in one run from its sections.

Each section is a module of ``tools/bench_sections`` with ``section(context) -> str`` (its markdown), listed in
``SECTIONS`` in page order: start-up, W1 against ``mlflow server``, handler import times, DynamoDB work per
API operation (raw HTTP requests on an in-process runtime, every DynamoDB call counted through
``table.STATS``), the indexer, search filters, the soak, the AI gateway's overhead per call, jobs throughput,
notes. ``BENCH_SECTIONS=workload,imports`` runs only
those: on a whole page the other sections keep their recorded figures, else the page holds those sections alone
(``BENCH_OUT=/tmp/perf.md`` writes elsewhere). Sizes: ``BENCH_RUNS`` (default 10000).
"""

from __future__ import annotations

import importlib
import os
import sys
import time
import traceback
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import requests

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "layers" / "shared" / "python"))
sys.path.insert(0, str(ROOT / "functions"))
sys.path.insert(0, str(ROOT))

from serverless_mlflow.storage.table import STATS  # noqa: E402

API = "/api/2.0/mlflow"


@dataclass
class Measurement:
    operation: str
    requests: int
    by_type: dict[str, int]
    items_read: int
    items_written: int
    note: str = ""
    budget: str = ""


class Bench:
    def __init__(self, url: str, runtime: Any) -> None:
        self.url = url
        self.runtime = runtime
        self.session = requests.Session()
        self.results: list[Measurement] = []
        self.extra: dict[str, list[tuple[str, str]]] = {}
        # Whole markdown sections (``## ...``) of scenarios that render their own tables, appended in order.
        self.sections: list[str] = []

    def call(self, method: str, path: str, body: dict[str, Any] | None = None, params: dict[str, Any] | None = None) -> dict[str, Any]:
        response = self.session.request(method, self.url + path, json=body, params=params, timeout=600)
        if response.status_code != 200:
            raise RuntimeError(f"{method} {path} -> {response.status_code} {response.text[:300]}")
        return response.json() if response.content else {}

    def measure(self, operation: str, fn: Callable[[], Any], note: str = "", budget: str = "") -> Any:
        STATS.reset()
        result = fn()
        snap = STATS.snapshot()
        self.results.append(
            Measurement(
                operation, sum(snap["requests"].values()), snap["requests"], snap["items_read"], snap["items_written"], note, budget
            )
        )
        return result


def scenario_tracking(bench: Bench, n_runs: int) -> None:
    exp_name = f"bench-{uuid.uuid4().hex[:8]}"
    exp_id = bench.measure("experiments/create", lambda: bench.call("POST", f"{API}/experiments/create", {"name": exp_name}))[
        "experiment_id"
    ]
    bench.measure("experiments/get", lambda: bench.call("GET", f"{API}/experiments/get", params={"experiment_id": exp_id}))
    bench.measure(
        "experiments/get-by-name", lambda: bench.call("GET", f"{API}/experiments/get-by-name", params={"experiment_name": exp_name})
    )
    run = bench.measure(
        "runs/create",
        lambda: bench.call("POST", f"{API}/runs/create", {"experiment_id": exp_id, "start_time": 1, "tags": [{"key": "t", "value": "v"}]}),
    )["run"]
    run_id = run["info"]["run_id"]
    bench.measure(
        "runs/log-parameter", lambda: bench.call("POST", f"{API}/runs/log-parameter", {"run_id": run_id, "key": "p", "value": "1"})
    )
    bench.measure("runs/set-tag", lambda: bench.call("POST", f"{API}/runs/set-tag", {"run_id": run_id, "key": "k", "value": "v"}))
    bench.measure(
        "runs/log-metric",
        lambda: bench.call("POST", f"{API}/runs/log-metric", {"run_id": run_id, "key": "m", "value": 1.0, "timestamp": 1, "step": 0}),
    )
    metrics = [{"key": f"m{i % 5}", "value": float(i), "timestamp": 1000 + i, "step": i // 5} for i in range(1000)]
    m = bench.measure(
        "runs/log-batch (1000 metrics, 5 keys)",
        lambda: bench.call("POST", f"{API}/runs/log-batch", {"run_id": run_id, "metrics": metrics}),
        budget="5 requests, <= 12 items written (one history pack per key; tests/runs/test_costs.py)",
    )
    del m
    last = bench.results[-1]
    last.note = f"{last.items_written / 1000:.3f} items written per metric point (points packed per key and request)"
    _clear_run_cache()
    bench.measure("runs/get (cold Lambda)", lambda: bench.call("GET", f"{API}/runs/get", params={"run_id": run_id}), budget="<= 2 requests")
    bench.measure("runs/get (warm Lambda)", lambda: bench.call("GET", f"{API}/runs/get", params={"run_id": run_id}), budget="1 request")
    bench.measure(
        "metrics/get-history (200 points)",
        lambda: bench.call("GET", f"{API}/metrics/get-history", params={"run_id": run_id, "metric_key": "m0"}),
    )

    # search_runs: 100 of n_runs, no filter
    search_exp = bench.call("POST", f"{API}/experiments/create", {"name": f"{exp_name}-search"})["experiment_id"]

    bulk_load_runs(search_exp, n_runs)
    bench.measure(
        f"runs/search (100 of {n_runs}, no filter)",
        lambda: bench.call("POST", f"{API}/runs/search", {"experiment_ids": [search_exp], "max_results": 100}),
        budget="<= 2 items per run returned + 2",
    )
    last = bench.results[-1]
    last.note = f"{last.items_read / 100:.2f} items read per run returned"


def bulk_load_runs(experiment_id: str, n_runs: int) -> None:
    """Write ``n_runs`` runs in their indexed state (run item, locator, run-name tag, one param, one metric, its digest, the run
    summary).

    The items come from the same schema builders the API uses; the API's create_run is a transaction,
    and moto copies the whole table for every transaction, which would take hours at this size.
    """
    from serverless_mlflow.storage import table
    from tools.indexed_state import run_items

    items: list[dict[str, Any]] = []
    for i in range(n_runs):
        run_id = uuid.uuid4().hex
        info = {
            "run_id": run_id,
            "experiment_id": experiment_id,
            "run_name": f"r{i}",
            "user_id": "bench",
            "status": "FINISHED",
            "start_time": 10_000 + i,
            "end_time": 20_000 + i,
            "artifact_uri": f"mlflow-artifacts:/{experiment_id}/{run_id}/artifacts",
            "lifecycle_stage": "active",
            "last_update_time": 1,
        }
        items += run_items(info, {"acc": i / n_runs}, {"lr": str(i % 7)}, {"mlflow.runName": f"r{i}"}, ranked=())
    table.batch_write(items)


def _clear_run_cache() -> None:
    """Forget warm-Lambda caches so the next call is measured as a cold start."""
    try:
        from serverless_mlflow.store import runs as runs_store

        for name in dir(runs_store):
            value = getattr(runs_store, name)
            if hasattr(value, "cache_clear"):
                value.cache_clear()
            elif isinstance(value, dict) and name.isupper() and "CACHE" in name:
                value.clear()
    except ImportError:
        pass


def scenario_artifacts(bench: Bench, _: int) -> None:
    """Upload and download a 100 MB model with the real client: Lambda invocations and bytes through Lambda."""
    from tools.artifact_bench import measure_model_transfer

    size_mb = int(os.environ.get("BENCH_MODEL_MB", "100"))
    result = measure_model_transfer(size_mb, runtime=bench.runtime)
    rows = bench.extra.setdefault(f"Artifacts: a {size_mb} MB model with the stock client", [])
    for phase in ("upload", "download"):
        figures = result[phase]
        rows.append((f"{phase}: Lambda invocations", str(figures["invocations"])))
        rows.append((f"{phase}: request + response bytes through Lambda", str(figures["request_bytes"] + figures["response_bytes"])))
        rows.append((f"{phase}: artifact bytes through Lambda", str(figures["artifact_bytes_through_lambda"])))
        rows.append((f"{phase}: invocations by route", ", ".join(f"{k} {v}" for k, v in figures["by_operation"].items())))


def scenario_registry(bench: Bench, _: int) -> None:
    name = f"bench-model-{uuid.uuid4().hex[:8]}"
    bench.measure("registered-models/create", lambda: bench.call("POST", f"{API}/registered-models/create", {"name": name}))
    for i in range(3):
        bench.measure(
            f"model-versions/create (version {i + 1})",
            lambda i=i: bench.call("POST", f"{API}/model-versions/create", {"name": name, "source": f"s3://bucket/model{i}"}),
        )
    bench.measure(
        "registered-models/alias (set)",
        lambda: bench.call("POST", f"{API}/registered-models/alias", {"name": name, "alias": "champion", "version": "2"}),
    )
    bench.measure(
        "registered-models/alias (get by alias)",
        lambda: bench.call("GET", f"{API}/registered-models/alias", params={"name": name, "alias": "champion"}),
    )
    bench.measure(
        "model-versions/get-download-uri",
        lambda: bench.call("GET", f"{API}/model-versions/get-download-uri", params={"name": name, "version": "2"}),
    )
    bench.measure("registered-models/get", lambda: bench.call("GET", f"{API}/registered-models/get", params={"name": name}))


def scenario_indexer(bench: Bench, n_runs: int) -> None:
    from tools.indexer_bench import scenario_indexer as run

    run(bench, n_runs)


def scenario_traces(bench: Bench, n_runs: int) -> None:
    from tools.trace_bench import scenario_traces as run

    run(bench, n_runs)


# Share one runtime (the per-operation table).
SCENARIOS: list[tuple[str, Callable[..., None]]] = [
    ("tracking", scenario_tracking),
    ("traces", scenario_traces),
    ("registry", scenario_registry),
    ("artifacts", scenario_artifacts),
]

# The page, in order: module names under tools.bench_sections (see tools/bench_sections/__init__.py).
SECTIONS: list[str] = [
    "operations",
    "imports",
    "otlp_parse",
    "indexer",
    "trace_metrics",
    "soak",
    "workload",
    "search_filters",
    "partition_heat",
    "trace_load",
    "gateway",
    "jobs",
    "startup",
    "notes",
]


@dataclass
class Context:
    """What every section may use."""

    n_runs: int


def fresh_runtime(indexer_mode: str = "paused") -> Any:
    """A local runtime with its own embedded DynamoDB Local, moto S3 (and KMS) and an empty table."""
    from local.runtime import LocalRuntime
    from serverless_mlflow.storage import table

    # A runtime started earlier in this process left its (stopped) engines' endpoints in the environment.
    for name in ("DYNAMODB_ENDPOINT_URL", "S3_ENDPOINT_URL", "KMS_ENDPOINT_URL", "GATEWAY_KMS_KEY_ID"):
        os.environ.pop(name, None)
    os.environ["TABLE_NAME"] = f"bench-{uuid.uuid4().hex[:8]}"
    table.reset_client()
    return LocalRuntime(port=0, indexer_mode=indexer_mode).start()


def run_standalone(scenario: Callable[..., None]) -> None:
    """One scenario on its own fresh runtime (``python -m tools.<name>_bench``), its sections printed as tables."""
    runtime = fresh_runtime()
    try:
        bench = Bench(runtime.url, runtime)
        scenario(bench, 0)
        for title, rows in bench.extra.items():
            print(f"\n## {title}\n\n| measure | value |\n|---|---|")
            for key, value in rows:
                print(f"| {key} | {value} |")
    finally:
        runtime.stop()


def run_scenarios(scenarios: list[tuple[str, Callable[..., None]]], n_runs: int) -> Bench:
    """Scenarios on one fresh in-process runtime (indexer paused); their measurements and extra tables."""
    runtime = fresh_runtime()
    bench = Bench(runtime.url, runtime)
    try:
        for name, scenario in scenarios:
            try:
                scenario(bench, n_runs)
            except Exception as error:  # a missing feature must not hide the other figures
                bench.extra.setdefault("Scenario failures", []).append((name, str(error)[:200]))
    finally:
        runtime.stop()
    return bench


def render_section(name: str, context: Context) -> str:
    """The section's template (tools/bench_sections/<name>.md) filled with what its module measures now."""
    from tools.bench_sections import render

    return render(name, _measured(name, context)).strip()


def _measured(name: str, context: Context) -> Any:
    """What the section's module measures now (its failure, in its place, if it fails)."""
    from tools.bench_sections import Figures

    module = importlib.import_module(f"tools.bench_sections.{name}")
    started = time.monotonic()
    try:
        figures = module.section(context)
    except Exception:
        figures = Figures([f"This section failed in this run:\n\n```\n{traceback.format_exc()[-3000:]}```"])
    print(f"bench: {name} took {time.monotonic() - started:.0f} s", file=sys.stderr, flush=True)
    return figures


def main() -> None:
    n_runs = int(os.environ.get("BENCH_RUNS", "10000"))
    # moto walks the whole table per Query: the 10,000-run search takes minutes locally, not on DynamoDB.
    os.environ.setdefault("DYNAMODB_READ_TIMEOUT_SECONDS", "900")
    wanted = [name for name in os.environ.get("BENCH_SECTIONS", "").split(",") if name]
    context = Context(n_runs)
    from tools.bench_sections import render_page, template

    out = Path(os.environ.get("BENCH_OUT") or ROOT / "docs" / "performance.md")
    kept = _recorded_figures(out, wanted) if wanted else None
    if wanted and kept is None and out.exists() and out.read_text().startswith("<!-- Generated by `make bench`"):
        # Writing only the sections asked for would drop every other section's figures.
        raise SystemExit(
            f"{out} does not match the section templates outside {wanted} (a template changed since it was written): "
            "add those sections to BENCH_SECTIONS, or run make bench whole"
        )
    if kept is not None:
        # A partial run on a page of every section: the sections run are measured anew, the others keep their figures.
        out.write_text(render_page(SECTIONS, {**kept, **{name: _measured(name, context) for name in SECTIONS if name in wanted}}))
    else:
        parts = [template("header")] + [render_section(name, context) for name in SECTIONS if not wanted or name in wanted]
        out.write_text("\n\n".join(parts) + "\n")
    print(out.read_text())


def _recorded_figures(page: Path, wanted: list[str]) -> dict[str, Any] | None:
    """The figures of every section of an existing whole page, or None (no page, or not the templates filled).
    A section new to the page that this run measures may be missing from it: it joins the page in its place."""
    from tools.bench_sections import recorded

    # The sections this run measures may be on the page with an older template, or not on it yet.
    for names in (SECTIONS, [name for name in SECTIONS if name not in wanted]):
        try:
            return recorded(page.read_text(), names, remeasured=wanted)
        except (OSError, ValueError):
            continue
    return None


if __name__ == "__main__":
    main()
