"""``traces/metrics`` at scale: items read per chart query as one experiment grows, and the indexer's extra write
units per trace (``make bench-trace-metrics``, or the ``trace_metrics`` section of ``make bench``).

Traces go through the real write path. The first ``TRACE_METRICS_METERED`` go through the stock client with
synchronous export (two spans over OTLP, then ``start_trace``) against the in-process runtime (~0.4 s a trace);
the rest through the traces function's own write code called in-process (``traces.ingest.log_spans`` with the
same two OTLP spans, then ``traces.ingest.start_trace`` with the info the client sends), with the function's role,
on ``TRACE_METRICS_THREADS`` threads: the same items, without HTTP and the client. Meanwhile one thread drains the
stream through the runtime's stream follower into the real indexer handler (which keeps the rollup items,
``trace_aggregates``), in invocations of up to ``TRACE_METRICS_DRAIN_BATCH`` records: what the deployed mapping
delivers under a backlog with its BatchSize raised. DynamoDB Local runs with the C2 compiler (``LOAD_JAVA_OPTS``). Request times are spread evenly
over a fixed 7-day window (168 hours); ``TRACE_METRICS_NAMES`` trace names (default 50), 1 in 10 an error. The
experiment grows to each size of ``TRACE_METRICS_SIZES`` (default ``1000,10000``) in turn, and at each size the
Overview's queries are sent over HTTP and their DynamoDB reads counted (``table.STATS``):

* aligned: a range of whole hours, answered from rollups alone (ungrouped charts: one item per hour);
* the UI's "last 7 days" at an arbitrary time: hourly items for the whole hours, per-minute items for the whole
  minutes of the two partial hours, raw trace rows for the two partial minutes (status-grouped: raw edge hours);
* grouped by trace name: the full level, an item per hour and name.

Write units are counted with ``tools.heat_meter`` (DynamoDB's capacity rules) on the first
``TRACE_METRICS_METERED`` traces (default 100; each alone in its hour's items) and on as many more once the
window is loaded (every item full): the write path's requests and the indexer's drain separately.
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
from serverless_mlflow.storage.schema import TRACE_BUCKET_MS  # noqa: E402
from serverless_mlflow.storage.table import STATS  # noqa: E402

SECTION = "Trace metrics: items read per chart as an experiment grows, indexer write units per trace"
WINDOW_HOURS = 168
# Traces logged between progress lines.
PROGRESS_EVERY = 1000
# Records per indexer invocation while loading: a backlog fills the mapping's batches up to its BatchSize (up to
# 10,000), as far as Lambda's 6 MB invocation payload allows: these records are ~1.5 KB of event JSON each (4 a
# trace), so 3,500 make ~5.3 MB. The indexer coalesces each invocation's writes (rollup items shared by its traces).
DRAIN_BATCH = int(os.environ.get("TRACE_METRICS_DRAIN_BATCH", "3500"))
# The in-process runtime's default JVM flags favour a test session's start-up (C1 only); a long load runs faster
# with the C2 compiler (tools/search_bench.py).
from tools.search_bench import LOAD_JAVA_OPTS  # noqa: E402

NAME_COUNT = int(os.environ.get("TRACE_METRICS_NAMES", "50"))
NAMES = tuple(f"agent-{i:02d}" for i in range(NAME_COUNT))
# Two writers keep ahead of the indexer; more only take the interpreter lock from its drain (both are Python).
LOAD_THREADS = int(os.environ.get("TRACE_METRICS_THREADS", "2"))
METRICS = "/api/3.0/mlflow/traces/metrics"


def _sizes() -> list[int]:
    return sorted(int(size) for size in os.environ.get("TRACE_METRICS_SIZES", "1000,10000").split(",") if size)


def _window() -> tuple[int, int]:
    """[start, end) of the 168 whole hours ending at the last whole hour before now."""
    end = int(time.time() * 1000) // TRACE_BUCKET_MS * TRACE_BUCKET_MS
    return end - WINDOW_HOURS * TRACE_BUCKET_MS, end


def _name(start_ms: int) -> str:
    """A trace's name: spread evenly and independently of time (every hour sees every name, given the traces)."""
    import zlib

    return NAMES[zlib.crc32(str(start_ms).encode()) % len(NAMES)]


def _log_trace(mlflow: Any, experiment_id: str, index: int, start_ms: int) -> None:
    from mlflow.entities import SpanStatusCode
    from mlflow.tracing.constant import SpanAttributeKey

    start_ns = start_ms * 1_000_000
    root = mlflow.start_span_no_context(
        _name(start_ms), inputs={"question": f"question {index}"}, experiment_id=experiment_id, start_time_ns=start_ns
    )
    child = mlflow.start_span_no_context("llm", span_type="CHAT_MODEL", parent_span=root, start_time_ns=start_ns + 1_000_000)
    child.set_attribute(SpanAttributeKey.CHAT_USAGE, {"input_tokens": 10 + index % 90, "output_tokens": 5, "total_tokens": 15 + index % 90})
    child.end(outputs={"text": "an answer"}, end_time_ns=start_ns + (20 + index % 400) * 1_000_000)
    root.end(
        outputs={"answer": "an answer"},
        status=SpanStatusCode.ERROR if index % 10 == 0 else SpanStatusCode.OK,
        end_time_ns=start_ns + (30 + index % 400) * 1_000_000,
    )


def _otlp_and_info(experiment_id: str, index: int, start_ms: int) -> tuple[Any, dict[str, Any]]:
    """The two spans and the trace info the client sends for ``_log_trace``'s trace (same names, times, status,
    token usage), as the OTLP export and ``start_trace`` body carry them."""
    import json

    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
    from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

    def attributes(**values: Any) -> list[Any]:
        # MLflow's span attributes: JSON text in OTLP string values.
        return [KeyValue(key=k, value=AnyValue(string_value=json.dumps(v))) for k, v in values.items()]

    trace_bytes = uuid.uuid4().bytes
    root_id, child_id = os.urandom(8), os.urandom(8)
    start_ns = start_ms * 1_000_000
    trace_id = "tr-" + trace_bytes.hex()
    error = index % 10 == 0
    usage = {"input_tokens": 10 + index % 90, "output_tokens": 5, "total_tokens": 15 + index % 90}
    request = ExportTraceServiceRequest()
    spans = request.resource_spans.add().scope_spans.add().spans
    child = spans.add(trace_id=trace_bytes, span_id=child_id, parent_span_id=root_id, name="llm")
    child.start_time_unix_nano, child.end_time_unix_nano = start_ns + 1_000_000, start_ns + (20 + index % 400) * 1_000_000
    child.attributes.extend(
        attributes(**{"mlflow.traceRequestId": trace_id, "mlflow.spanType": "CHAT_MODEL", "mlflow.chat.tokenUsage": usage})
    )
    child.attributes.extend(attributes(**{"mlflow.spanOutputs": {"text": "an answer"}}))
    child.status.code = 1
    root = spans.add(trace_id=trace_bytes, span_id=root_id, name=_name(start_ms))
    root.start_time_unix_nano, root.end_time_unix_nano = start_ns, start_ns + (30 + index % 400) * 1_000_000
    root.attributes.extend(
        attributes(
            **{
                "mlflow.traceRequestId": trace_id,
                "mlflow.spanType": "UNKNOWN",
                "mlflow.spanInputs": {"question": f"question {index}"},
                "mlflow.spanOutputs": {"answer": "an answer"},
            }
        )
    )
    root.status.code = 2 if error else 1
    info = {
        "trace_id": trace_id,
        "trace_location": {"type": "MLFLOW_EXPERIMENT", "mlflow_experiment": {"experiment_id": experiment_id}},
        "request_time": start_ms,
        "execution_duration": 30 + index % 400,
        "state": "ERROR" if error else "OK",
        "request_preview": json.dumps({"question": f"question {index}"}),
        "response_preview": json.dumps({"answer": "an answer"}),
        "trace_metadata": {
            "mlflow.trace_schema.version": "3",
            "mlflow.trace.tokenUsage": json.dumps(usage),
            "mlflow.trace.sizeStats": json.dumps({"total_size_bytes": 2000, "num_spans": 2}),
        },
        "tags": {"mlflow.traceName": _name(start_ms)},
    }
    return request, info


def _drain(runtime: Any, batch_size: int | None = None) -> int:
    """Every pending stream record through the runtime's stream follower into the real indexer handler, in
    invocations of ``batch_size`` records (default: the deployed mapping's); returns how many were delivered."""
    follower = runtime.follower
    mode, size = runtime.indexer_mode, follower.batch_size
    runtime.indexer_mode = "sync"
    follower.batch_size = batch_size or size
    try:
        return runtime.drain_stream()
    finally:
        runtime.indexer_mode, follower.batch_size = mode, size


class Loader:
    """Logs traces into one experiment through the client and drains the indexer after every batch."""

    def __init__(self, bench: Any, experiment_id: str, final: int) -> None:
        import mlflow

        self.mlflow = mlflow
        self.bench = bench
        self.experiment_id = experiment_id
        self.count = 0
        self.window = _window()
        # The same spread at every size: the first n traces cover the whole window, later ones fill the gaps.
        self.spacing = (self.window[1] - self.window[0]) // final
        self.slots = _slots(final)
        self.seconds = self.load_seconds = self.drain_seconds = 0.0

    def log(self, index: int, start_ms: int | None = None) -> None:
        """One trace through the stock client (its slot's time unless ``start_ms``)."""
        at = start_ms if start_ms is not None else self.window[0] + self.slots[index] * self.spacing + 7
        _log_trace(self.mlflow, self.experiment_id, index, at)

    def log_in_process(self, index: int) -> None:
        """One trace through the traces function's write code, in-process, with that function's role."""
        import importlib

        from local import iam

        ingest = importlib.import_module("traces.ingest")
        request, info = _otlp_and_info(self.experiment_id, index, self.window[0] + self.slots[index] * self.spacing + 7)
        with iam.acting_as("traces"):
            ingest.log_spans(self.experiment_id, request)
            ingest.start_trace(info)

    def load_to(self, size: int) -> None:
        """Log traces up to ``size`` on LOAD_THREADS threads while one thread drains the stream into the indexer
        in big invocations (DRAIN_BATCH records), as the deployed mapping does under a backlog; then drain the rest."""
        import threading
        from concurrent.futures import ThreadPoolExecutor

        started = time.monotonic()
        loading = threading.Event()
        loading.set()
        errors: list[BaseException] = []

        def drainer() -> None:
            try:
                while True:
                    still_loading = loading.is_set()  # read before the drain: a drain after the last write follows
                    began = time.monotonic()
                    delivered = _drain(self.bench.runtime, DRAIN_BATCH)
                    if delivered:
                        self.drain_seconds += time.monotonic() - began
                    elif not still_loading:
                        return
                    else:
                        time.sleep(0.2)
            except BaseException as error:  # reported by load_to
                errors.append(error)

        thread = threading.Thread(target=drainer, name="trace-metrics-drain", daemon=True)
        thread.start()
        try:
            with ThreadPoolExecutor(LOAD_THREADS) as pool:
                while self.count < size:
                    batch_end = min(size, self.count + PROGRESS_EVERY)
                    list(pool.map(self.log_in_process, range(self.count, batch_end)))
                    self.count = batch_end
                    print(
                        f"trace_metrics bench: {self.count} traces written ({time.monotonic() - started:.0f} s; "
                        f"indexer busy {self.drain_seconds:.0f} s)",
                        file=sys.stderr,
                        flush=True,
                    )
        finally:
            self.load_seconds += time.monotonic() - started
            loading.clear()
            thread.join()
        if errors:
            raise errors[0]
        self.seconds += time.monotonic() - started
        print(f"trace_metrics bench: {self.count} traces indexed ({time.monotonic() - started:.0f} s)", file=sys.stderr, flush=True)


def _slots(final: int) -> list[int]:
    """A permutation of range(final) whose every prefix is spread over the whole range (bit-reversal order)."""
    bits = max(1, (final - 1).bit_length())
    return [slot for slot in (int(f"{i:0{bits}b}"[::-1], 2) for i in range(1 << bits)) if slot < final]


def _queries(experiment_id: str, window: tuple[int, int]) -> list[tuple[str, dict[str, Any]]]:
    start, end = window
    day = 24 * TRACE_BUCKET_MS
    aligned = {"start_time_ms": start, "end_time_ms": end - 1, "time_interval_seconds": 3600}
    # "Last 7 days" as the UI sends it: now minus 7 days, at an arbitrary minute (partial hours at both edges).
    now = end - 17 * 60 * 1000 + 21_517  # :43:21.517
    ui = {"start_time_ms": now - 7 * day, "end_time_ms": now, "time_interval_seconds": 3600}
    base = {"experiment_ids": [experiment_id], "view_type": "TRACES"}
    count = {**base, "metric_name": "trace_count", "aggregations": [{"aggregation_type": "COUNT"}]}
    latency = {
        **base,
        "metric_name": "latency",
        "aggregations": [{"aggregation_type": "AVG"}, {"aggregation_type": "PERCENTILE", "percentile_value": 95}],
    }
    tokens = {**base, "metric_name": "total_tokens", "aggregations": [{"aggregation_type": "SUM"}]}
    errors = {**count, "dimensions": ["trace_status"]}
    return [
        ("trace_count per hour, 168 whole hours", {**count, **aligned}),
        ("latency AVG + P95 per hour, 168 whole hours", {**latency, **aligned}),
        ("total_tokens SUM per hour, 168 whole hours", {**tokens, **aligned}),
        ("trace_count by status per hour, 168 whole hours", {**errors, **aligned}),
        ("trace_count per hour, last 7 days at :43:21.517 (edges: minute items, partial minutes raw)", {**count, **ui}),
        ("latency AVG + P95 per hour, last 7 days at :43:21.517", {**latency, **ui}),
        (
            "trace_count by status per hour, last 7 days at :43:21.517 (edges: per-status minute items, partial minutes raw)",
            {**errors, **ui},
        ),
        ("latency AVG by trace_name per hour, 168 whole hours (per-name slices)", {**latency, **aligned, "dimensions": ["trace_name"]}),
    ]


def _read(bench: Any, body: dict[str, Any]) -> tuple[int, int, int]:
    """(items read, requests, data points) of one traces/metrics call, every page."""
    STATS.reset()
    points, token = 0, None
    while True:
        answer = bench.call("POST", METRICS, {**body, **({"page_token": token} if token else {})})
        points += len(answer.get("data_points") or [])
        token = answer.get("next_page_token")
        if not token:
            break
    snap = STATS.snapshot()
    return snap["items_read"], sum(snap["requests"].values()), points


def metered_units(bench: Any, loader: Loader, n: int, late: bool = False) -> list[tuple[str, str]]:
    """Write units of the write path and of the indexer for the first ``n`` traces (each alone in its hour's
    rollup items), or, ``late``, for ``n`` more spread over the window once it is loaded (rollup items full:
    an item's write units grow with its summaries' size)."""
    from tools.heat_meter import HeatMeter

    meter = HeatMeter()
    meter.install()
    table.reset_client()
    _drain(bench.runtime)
    meter.reset()
    try:
        for index in range(n):
            if late:
                span = (loader.window[1] - loader.window[0]) // n
                loader.log(loader.count + index, loader.window[0] + index * span + 11 + index % 60 * 60_000)
            else:
                loader.log(index)
        write_path = sum(u.units for u in meter.reset().values())
        _drain(bench.runtime)
        indexer_usage = meter.reset()
    finally:
        meter.uninstall()
        table.reset_client()
    loader.count = loader.count + n if late else n
    indexer = sum(u.units for u in indexer_usage.values())
    rollup_units = sum(u.units for pk, u in indexer_usage.items() if "ROLLUP" in pk.upper())
    which = f"{n} more traces after {loader.count - n:,}" if late else f"first {n} traces"
    return [
        (f"write path (OTLP spans + start_trace), {which}", f"{write_path / n:.1f} write units per trace"),
        (
            f"indexer (aggregates, span-content index, rollups), {which}",
            f"{indexer / n:.1f} write units per trace ({indexer / write_path:.0%} of the write path's); "
            f"rollup items {rollup_units / n:.1f} of them",
        ),
    ]


def scenario_trace_metrics(bench: Any, _: int) -> None:
    import mlflow

    os.environ["MLFLOW_ENABLE_ASYNC_TRACE_LOGGING"] = "false"
    mlflow.set_tracking_uri(bench.url)
    experiment_id = mlflow.create_experiment(f"bench-trace-metrics-{uuid.uuid4().hex[:8]}")
    sizes = _sizes()
    final = sizes[-1]
    loader = Loader(bench, experiment_id, final)
    rows = bench.extra.setdefault(SECTION, [])
    metered = int(os.environ.get("TRACE_METRICS_METERED", "100"))
    rows += metered_units(bench, loader, min(metered, sizes[0]))
    for size in sizes:
        loader.load_to(size)
        rows.append(
            (
                f"setup: {size:,} traces logged and indexed (cumulative)",
                f"{loader.seconds:.0f} s ({LOAD_THREADS} write threads done after {loader.load_seconds:.0f} s, the indexer "
                f"draining meanwhile in invocations of up to {DRAIN_BATCH:,} records, busy {loader.drain_seconds:.0f} s)",
            )
        )
        for label, body in _queries(experiment_id, loader.window):
            items, requests, points = _read(bench, body)
            rows.append(
                (f"{size:,} traces: {label}", f"{items} items read, {requests} request{'' if requests == 1 else 's'}, {points} data points")
            )
        # Partial figures survive a run stopped at a later size.
        print("\n".join(f"| {key} | {value} |" for key, value in rows), file=sys.stderr, flush=True)
    rows += metered_units(bench, loader, metered, late=True)


if __name__ == "__main__":
    from tools.bench import run_standalone

    os.environ.setdefault("DYNAMODB_LOCAL_JAVA_OPTS", LOAD_JAVA_OPTS)
    run_standalone(scenario_trace_metrics)
