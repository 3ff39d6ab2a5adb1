"""Sustained trace load (issue 39 item 3): the local runtime takes traces at the highest rate the box allows.

A ``python -m local`` subprocess (embedded DynamoDB Local and moto S3, the indexer asynchronous as deployed: it
polls the stream after the mapping's batching window) takes traces from the stock ``mlflow`` client: each trace a
root span and ``TRACE_LOAD_SPANS - 1`` children, exported synchronously over OTLP as each span ends, then the
trace info (``start_trace``). ``TRACE_LOAD_PROCESSES`` client processes of ``TRACE_LOAD_THREADS`` threads each
send traces back to back for ``TRACE_LOAD_SECONDS`` (default 300) into one experiment. Every
``TRACE_LOAD_SAMPLE_SECONDS`` the Overview's trace count (``traces/metrics`` trace_count COUNT, as the UI asks it)
is read: the indexer's lag is how long ago the client had sent as many traces as the Overview counts now.

Then a storm (``TRACE_LOAD_STORM_SECONDS``, default 60): the same load while ``TRACE_LOAD_THROTTLE`` (default 5 %)
of the DynamoDB calls on request threads fail as DynamoDB throttling (``tools/throttle_hook``): the handlers answer
429, the client retries. After each phase the bench waits until the indexer's backlog is empty, as the runtime
reports it (``LOCAL_INDEXER_STATUS_FILE``: a drain that started after the phase's last write found nothing left to
deliver), not for a fixed time; then every trace sent is found by ``search_traces``, a sample reads whole (every
span), the Overview counts exactly the traces sent, and no stream record was dead-lettered: a shortfall then is a
loss, not lag.

The runtime runs the assets we ship by default (``TRACE_LOAD_BUILT``, default 1: ``python -m local --built``, the
layer and functions built from the lock files for this machine, ``local/built.py``; built before the runtime starts,
cached under build/assets); ``TRACE_LOAD_BUILT=0`` runs the source tree.

The projection to 1,000 traces/s is computed from write units metered here (``TRACE_LOAD_METERED`` 10-span traces,
default 200, through ``make bench``'s partition-heat scenario (c), ``tools/heat_meter.py``): whatever the write
path costs when the bench runs.

    python -m tools.trace_load_bench        (make bench-trace-load; the trace_load section of make bench)
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import requests  # noqa: E402

from tools.server_process import local_runtime_process  # noqa: E402

SECONDS = float(os.environ.get("TRACE_LOAD_SECONDS", "300"))
STORM_SECONDS = float(os.environ.get("TRACE_LOAD_STORM_SECONDS", "60"))
THROTTLE = float(os.environ.get("TRACE_LOAD_THROTTLE", "0.05"))
PROCESSES = int(os.environ.get("TRACE_LOAD_PROCESSES", "2"))
THREADS = int(os.environ.get("TRACE_LOAD_THREADS", "4"))
SPANS = int(os.environ.get("TRACE_LOAD_SPANS", "10"))
BUILT = os.environ.get("TRACE_LOAD_BUILT", "1") != "0"
SAMPLE_SECONDS = float(os.environ.get("TRACE_LOAD_SAMPLE_SECONDS", "10"))
# 10-span traces metered for the projection (partition heat (c) on an in-process runtime; 0: no projection).
METERED = int(os.environ.get("TRACE_LOAD_METERED", "200"))
TARGET_RATE = 1000  # traces/s the projection is for
PARTITION_UNITS_PER_SECOND = 1000
WRITE_PRICE = 1.25  # $ per million write request units, on-demand, us-east-1
READ_PRICE = 0.25  # $ per million read request units
# A bound on the wait for the backlog to empty (never reached unless the indexer stalls).
CATCH_UP_SECONDS = float(os.environ.get("TRACE_LOAD_CATCH_UP_SECONDS", "3600"))
READ_SAMPLE = 20
PRINTED_GIVE_UPS = 10  # per client process
METRICS = "/api/3.0/mlflow/traces/metrics"
HOOK = ROOT / "tools" / "throttle_hook"


class _GaveUp(logging.Handler):
    """Counts the client's messages that it dropped a trace's info (a warning) or a span batch (logged at debug
    level only) after its retries (429s)."""

    def __init__(self, infos: Any, spans: Any) -> None:
        super().__init__(logging.DEBUG)
        self.infos, self.spans = infos, spans
        self.printed = 0

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        counter = self.spans if "Failed to log span" in message else self.infos if "Failed to " in message else None
        if counter is not None:
            with counter.get_lock():
                counter.value += 1
            if self.printed < PRINTED_GIVE_UPS:  # what the client gave up on, and the answer it had
                self.printed += 1
                print(f"trace_load: the client gave up: {message[:600]}", file=sys.stderr, flush=True)


def _client_process(url: str, experiment_id: str, shared_deadline: Any, ready: Any, sent: Any, out: Any, gave_up: Any) -> None:
    """One client process: ``THREADS`` threads sending traces until the deadline the parent sets once every
    client is ready (mlflow imported); their trace ids to ``out``; the exports it gave up on to ``gave_up``."""
    os.environ["MLFLOW_ENABLE_ASYNC_TRACE_LOGGING"] = "false"
    import mlflow

    for name in ("mlflow.tracing.export", "opentelemetry.exporter"):
        logger = logging.getLogger(name)
        logger.addHandler(_GaveUp(*gave_up))
        logger.setLevel(logging.DEBUG)  # a span batch given up is a debug message
        logger.propagate = False  # counted here, not printed

    mlflow.set_tracking_uri(url)
    mlflow.set_experiment(experiment_id=experiment_id)
    with ready.get_lock():
        ready.value += 1
    while shared_deadline.value == 0:
        time.sleep(0.05)
    deadline = shared_deadline.value
    ids: list[str] = []
    lock = threading.Lock()

    def sender(worker: int) -> None:
        i = 0
        while time.time() < deadline:
            with mlflow.start_span(name=f"agent-{worker % 8}") as root:
                root.set_inputs({"question": f"q{worker}-{i}"})
                for j in range(SPANS - 1):
                    with mlflow.start_span(name=f"step-{j}") as span:
                        span.set_inputs({"i": i, "j": j})
                        span.set_outputs({"ok": True})
                root.set_outputs({"answer": f"a{i}"})
            with lock:
                ids.append(root.trace_id)
            with sent.get_lock():
                sent.value += 1
            i += 1

    threads = [threading.Thread(target=sender, args=(w,)) for w in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    out.put(ids)


def overview_count(url: str, experiment_id: str, since_ms: int) -> int:
    """The Overview's trace count of the experiment since ``since_ms`` (hourly points summed)."""
    now = int(time.time() * 1000)
    body = {
        "experiment_ids": [experiment_id],
        "view_type": "TRACES",
        "metric_name": "trace_count",
        "aggregations": [{"aggregation_type": "COUNT"}],
        "start_time_ms": since_ms - 3_600_000,
        "end_time_ms": now + 3_600_000,
        "time_interval_seconds": 3600,
    }
    total, token = 0, None
    while True:
        for _ in range(60):  # throttled (the storm): retried as MLflow's client retries a 429
            answer = requests.post(url + METRICS, json={**body, **({"page_token": token} if token else {})}, timeout=120)
            if answer.status_code != 429:
                break
            time.sleep(0.5)
        answer.raise_for_status()
        parsed = answer.json()
        total += sum(int(float(v)) for point in parsed.get("data_points") or [] for v in (point.get("values") or {}).values())
        token = parsed.get("next_page_token")
        if not token:
            return total


def _lag(history: list[tuple[float, int]], counted: int, now: float) -> float:
    """Seconds since the client had sent ``counted`` traces (0 when the Overview counts every trace sent)."""
    if not history or counted >= history[-1][1]:
        return 0.0
    reached = next((t for t, n in history if n >= counted), history[-1][0])
    return max(0.0, now - reached)


def _phase(url: str, experiment_id: str, seconds: float, since_ms: int, base: int, label: str) -> dict[str, Any]:
    """Send for ``seconds``; sample the Overview along the way. The phase's trace ids, rate and lag samples."""
    context = multiprocessing.get_context("spawn")
    sent, ready, shared_deadline, gave_up = (
        context.Value("i", 0),
        context.Value("i", 0),
        context.Value("d", 0.0),
        (context.Value("i", 0), context.Value("i", 0)),
    )
    out = context.Queue()
    args = (url, experiment_id, shared_deadline, ready, sent, out, gave_up)
    workers = [context.Process(target=_client_process, args=args) for _ in range(PROCESSES)]
    for worker in workers:
        worker.start()
    while ready.value < PROCESSES:
        time.sleep(0.1)
    started = time.time()
    deadline = started + seconds
    shared_deadline.value = deadline
    history: list[tuple[float, int]] = [(started, base)]
    samples: list[tuple[float, int, int, float]] = []  # (elapsed s, sent, counted, lag s)
    loads: list[float] = []  # the box's 1-minute load average (it is shared: what the rate was measured under)
    while time.time() < deadline:
        time.sleep(min(SAMPLE_SECONDS, max(0.0, deadline - time.time())))
        now = time.time()
        history.append((now, base + sent.value))
        counted = overview_count(url, experiment_id, since_ms)
        loads.append(os.getloadavg()[0])
        samples.append((now - started, base + sent.value, counted, _lag(history, counted, time.time())))
        print(
            f"trace_load {label}: {samples[-1][0]:.0f} s, {samples[-1][1]} sent, {counted} counted, lag {samples[-1][3]:.0f} s",
            file=sys.stderr,
            flush=True,
        )
    ids: list[str] = []
    for _ in workers:
        ids.extend(out.get())
    for worker in workers:
        worker.join()
    elapsed = time.time() - started
    return {
        "ids": ids,
        "rate": len(ids) / elapsed,
        "samples": samples,
        "seconds": elapsed,
        "load": sum(loads) / max(1, len(loads)),
        "gave_up": gave_up[0].value,
        "gave_up_spans": gave_up[1].value,
    }


def _status(path: Path) -> dict[str, Any]:
    import json

    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


def _drained(status_file: Path, after: float) -> tuple[dict[str, Any], float]:
    """(the runtime's indexer status, seconds waited) once a drain that started after ``after`` (the phase's last
    write answered) found nothing left to deliver and no trace deferred by the indexer is left in its queue: the
    backlog is empty, whatever the Overview says."""
    started = time.time()
    while time.time() - started < CATCH_UP_SECONDS:
        status = _status(status_file)
        if (status.get("idle_since") or 0) > after and not status.get("deferred_pending"):
            return status, time.time() - started
        time.sleep(1)
    return {**_status(status_file), "timed_out": True}, time.time() - started


def _readable(url: str, experiment_id: str, ids: list[str]) -> tuple[int, int, int, int]:
    """(traces sent that search_traces lists, traces it lists in all, sampled traces read whole with every span,
    sampled traces the client cannot read at all)."""
    import mlflow
    from mlflow import MlflowClient
    from mlflow.exceptions import MlflowException

    mlflow.set_tracking_uri(url)  # a trace whose spans went to traces.json (the fallback) is read from artifacts
    client = MlflowClient(url)
    listed: set[str] = set()
    token = None
    while True:
        page = client.search_traces(locations=[experiment_id], max_results=500, page_token=token, include_spans=False)
        listed.update(trace.info.trace_id for trace in page)
        token = page.token
        if not token:
            break
    whole = unreadable = 0
    for trace_id in ids[:: max(1, len(ids) // READ_SAMPLE)]:
        try:
            whole += len(client.get_trace(trace_id).data.spans) == SPANS
        except MlflowException as error:
            unreadable += 1
            print(f"trace_load: {trace_id} unreadable: {error}", file=sys.stderr, flush=True)
    missing = [trace_id for trace_id in ids if trace_id not in listed]
    for trace_id in missing[:READ_SAMPLE]:  # what the store holds of a trace it does not list
        try:
            held = f"{len(client.get_trace(trace_id).data.spans)} spans readable"
        except MlflowException as error:
            held = f"not readable: {error}"
        print(f"trace_load: {trace_id} sent, not listed: {held}", file=sys.stderr, flush=True)
    return len(listed & set(ids)), len(listed), whole, unreadable


def run() -> dict[str, list[tuple[str, str]]]:
    metered = _metered_units() if METERED else None
    assets = _built_assets() if BUILT else {}
    with tempfile.TemporaryDirectory(prefix="trace-load-") as directory:
        throttle_file = Path(directory) / "throttle"
        status_file = Path(directory) / "indexer-status.json"
        pythonpath = os.pathsep.join(p for p in (str(HOOK), os.environ.get("PYTHONPATH", "")) if p)
        with local_runtime_process(
            INDEXER_MODE="async",
            PYTHONPATH=pythonpath,
            TRACE_LOAD_THROTTLE_FILE=str(throttle_file),
            LOCAL_INDEXER_STATUS_FILE=str(status_file),
            **assets,
        ) as server:
            url = server.url
            since_ms = int(time.time() * 1000)
            answer = requests.post(
                f"{url}/api/2.0/mlflow/experiments/create", json={"name": f"trace-load-{uuid.uuid4().hex[:8]}"}, timeout=60
            )
            experiment_id = answer.json()["experiment_id"]
            steady = _phase(url, experiment_id, SECONDS, since_ms, 0, "sustained")
            status, waited = _drained(status_file, time.time())
            counted = overview_count(url, experiment_id, since_ms)
            found, listed, whole, _ = _readable(url, experiment_id, steady["ids"])
            throttle_file.write_text(str(THROTTLE))
            storm = _phase(url, experiment_id, STORM_SECONDS, since_ms, len(steady["ids"]), "storm")
            throttle_file.write_text("0")
            injected = len((Path(f"{throttle_file}.count").read_text() if Path(f"{throttle_file}.count").exists() else "").split())
            sent_all = steady["ids"] + storm["ids"]
            storm_status, storm_waited = _drained(status_file, time.time())
            storm_counted = overview_count(url, experiment_id, since_ms)
            storm_found, storm_listed, storm_whole, storm_unreadable = _readable(url, experiment_id, sent_all)
    lags = [s[3] for s in steady["samples"]]
    half = len(lags) // 2
    sustained = [
        (
            "runtime",
            "`python -m local --built` (layer and functions built from the lock files)" if BUILT else "`python -m local` (source tree)",
        ),
        ("client", f"{PROCESSES} processes x {THREADS} threads, mlflow {_mlflow_version()}, synchronous export, {_client_retries()}"),
        (f"traces sent (each 1 root + {SPANS - 1} child spans)", f"{len(steady['ids']):,} in {steady['seconds']:.0f} s"),
        ("traces/s achieved", f"{steady['rate']:.2f}"),
        ("the box's load average meanwhile (2 cores, shared)", f"{steady['load']:.1f}"),
        ("OTLP + start_trace requests/s", f"{steady['rate'] * (SPANS + 1):.1f}"),
        ("indexer lag, max (first half / second half)", f"{max(lags[:half] or [0]):.0f} s / {max(lags[half:] or [0]):.0f} s"),
        ("indexer lag at the end of the load", f"{lags[-1] if lags else 0:.0f} s"),
        ("indexer backlog empty after the load", _drain_row(status, waited)),
        ("Overview trace count = traces sent", f"{counted:,} = {len(steady['ids']):,}: {'yes' if counted == len(steady['ids']) else 'NO'}"),
        ("traces sent that search_traces lists", f"{found:,} of {len(steady['ids']):,} ({listed:,} listed)"),
        (f"sampled traces read whole ({SPANS} spans)", f"{whole} of {len(steady['ids'][:: max(1, len(steady['ids']) // READ_SAMPLE)])}"),
    ]
    timeline = [
        (f"{elapsed:.0f} s", f"{sent:,} sent, {counted:,} counted, lag {lag:.0f} s") for elapsed, sent, counted, lag in steady["samples"]
    ]
    intact = len(sent_all) == storm_found == storm_counted == storm_listed and not storm_status.get("dead_lettered")
    storm_rows = [
        ("throttled DynamoDB calls on request threads", f"{THROTTLE:.0%} ({injected:,} injected in {storm['seconds']:.0f} s)"),
        ("traces/s during the storm (finished while throttled)", f"{_window_rate(storm, len(steady['ids'])):.2f}"),
        (
            "the storm's last traces finished (the client's 429 back-off)",
            f"{storm['seconds']:.0f} s after it began ({storm['rate']:.2f} traces/s over that time)",
        ),
        ("indexer backlog empty after the storm", _drain_row(storm_status, storm_waited)),
        ("traces in (both phases)", f"{len(sent_all):,}"),
        ("traces stored (search_traces lists)", f"{storm_found:,} ({storm_listed:,} listed)"),
        ("traces counted by the Overview (backlog empty)", f"{storm_counted:,}"),
        ("stream records dead-lettered (both phases)", f"{storm_status.get('dead_lettered', '?')}"),
        (
            "exports the client gave up on after its retries (429s): start_trace / OTLP span batches",
            f"{storm['gave_up']:,} / {storm['gave_up_spans']:,}",
        ),
        (f"sampled traces read whole ({SPANS} spans) / not readable", f"{storm_whole} / {storm_unreadable}"),
        ("nothing lost", "yes" if intact else "NO"),
    ]
    return {
        f"Projected to {TARGET_RATE:,} traces/s into one experiment (DynamoDB on-demand)": projection(metered),
        f"Sustained load: {SECONDS:.0f} s of traces into one experiment": sustained,
        "Indexer lag over time (Overview trace count vs traces sent)": timeline,
        f"Throttling storm: {STORM_SECONDS:.0f} s at {THROTTLE:.0%} throttled calls": storm_rows,
    }


def _window_rate(phase: dict[str, Any], base: int) -> float:
    """Traces finished within the phase's time (its last sample), per second: the client threads' last traces
    finish later, once their retries (MLflow's back-off doubles up to 2 minutes) are answered."""
    if not phase["samples"]:
        return phase["rate"]
    elapsed, sent, _, _ = phase["samples"][-1]
    return (sent - base) / elapsed


def _built_assets() -> dict[str, str]:
    """The runtime's environment for the built assets, built here first (cached): a first build takes minutes,
    longer than a server's start is waited for."""
    from local import built

    built.build()
    return {built.ENVIRONMENT: "built"}


def _drain_row(status: dict[str, Any], waited: float) -> str:
    if status.get("timed_out"):
        return f"NO: still busy after {waited:.0f} s"
    return (
        f"{waited:.0f} s ({status.get('delivered', 0):,} stream records delivered in all, {status.get('dead_lettered', 0)} dead-lettered)"
    )


def _metered_units() -> tuple[float, float, str]:
    """(write units per trace in all, on the hottest partition key, that key's shape): ``METERED`` 10-span traces
    through partition heat's scenario (c), every write metered (``tools/heat_meter.py``)."""
    from tools import partition_heat

    figures, _, _ = partition_heat.measure(["c"], partition_heat.Sizes(traces=METERED, spans=SPANS))
    one = figures[0]
    hot_pk, hot = one.hottest()
    return one.total.units / one.count, hot.units / one.count, partition_heat.partition_label(hot_pk)


def projection(metered: tuple[float, float, str] | None) -> list[tuple[str, str]]:
    """Write units/s on the hottest key and $ per million traces at ``TARGET_RATE``, from the metered units."""
    if metered is None:
        return [("write units per trace", "not metered (TRACE_LOAD_METERED=0)")]
    units, hot_units, hot_key = metered
    hot = hot_units * TARGET_RATE
    return [
        (f"write units per {SPANS}-span trace (metered on {METERED} traces)", f"{units:.1f} in all, {hot_units:.2f} on `{hot_key}`"),
        (
            f"write units/s at {TARGET_RATE:,} traces/s",
            f"{units * TARGET_RATE:,.0f} in all; {hot:,.0f} on the hottest key "
            f"({hot / PARTITION_UNITS_PER_SECOND:.1f}x one partition's {PARTITION_UNITS_PER_SECOND:,})",
        ),
        ("traces/s one experiment takes (hottest key at 1,000 units/s)", f"{PARTITION_UNITS_PER_SECOND / hot_units:,.0f}"),
        ("$ per million traces, writes", f"${units * WRITE_PRICE:,.2f} (${WRITE_PRICE} per million write request units, us-east-1)"),
        (f"$ per hour at {TARGET_RATE:,} traces/s, writes", f"${units * WRITE_PRICE * TARGET_RATE * 3600 / 1e6:,.2f}"),
    ]


def _client_retries() -> str:
    """MLflow's HTTP retry settings the client processes inherit (a 429 is retried this many times)."""
    from mlflow.environment_variables import MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR, MLFLOW_HTTP_REQUEST_MAX_RETRIES

    return f"{MLFLOW_HTTP_REQUEST_MAX_RETRIES.get()} retries (backoff factor {MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR.get()})"


def _mlflow_version() -> str:
    import mlflow

    return mlflow.__version__


def main() -> None:
    from tools.bench_sections import titled_tables

    print(titled_tables(run()))


if __name__ == "__main__":
    main()
