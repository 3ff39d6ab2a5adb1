"""``make bench`` scenario "partition heat": write units and bytes per partition key under real client workloads.

Every partition key of the table is an LSI item collection: capped at 10 GB and served by one partition (about
1,000 write units per second). This scenario drives the local runtime over HTTP with the stock ``mlflow`` client,
with the stream indexer running as deployed (asynchronous, batches of up to 1,000 records after a batching window),
and counts every DynamoDB write of the process with ``tools.heat_meter.HeatMeter`` (DynamoDB's capacity rules:
table arm, LSI and GSI entries, transactions):

* (a) a sweep of ``HEAT_RUNS`` (100) runs logging ``HEAT_POINTS`` (1,000) points each in 200-point ``log_batch``
  calls over ``HEAT_KEYS`` (10) metric keys, by ``HEAT_WRITERS`` (8) concurrent writers;
* (b) the same sweep with single-point ``log_metric`` calls, a training loop's pattern (every key at each step),
  ``HEAT_SINGLE_POINTS`` (100) points per run;
* (c) ``HEAT_TRACES`` (1,000) traces of 10 spans each, logged concurrently with synchronous export.

Each scenario runs on its own fresh table. ``partition_heat_section()`` returns the markdown section
(self-contained: ``tools/bench.py`` appends it, or a whole-document generator can place it);
``python -m tools.partition_heat [a b c]`` prints it.
"""

from __future__ import annotations

import math
import os
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
for extra in (ROOT / "layers" / "shared" / "python", ROOT / "functions", ROOT):
    if str(extra) not in sys.path:
        sys.path.insert(0, str(extra))

from serverless_mlflow.storage import schema  # noqa: E402
from tools.heat_meter import HeatMeter, Usage  # noqa: E402

SECTION = "Partition heat: write units and bytes per partition key"
PARTITION_UNITS_PER_SECOND = 1000  # what one partition (so one LSI item collection) serves
COLLECTION_CAP_BYTES = 10 * 1024**3
BATCH_POINTS = 200


def _env(name: str, default: int) -> int:
    return int(os.environ.get(name, str(default)))


@dataclass
class Sizes:
    runs: int = field(default_factory=lambda: _env("HEAT_RUNS", 100))
    points: int = field(default_factory=lambda: _env("HEAT_POINTS", 1000))
    single_points: int = field(default_factory=lambda: _env("HEAT_SINGLE_POINTS", 100))
    keys: int = field(default_factory=lambda: _env("HEAT_KEYS", 10))
    traces: int = field(default_factory=lambda: _env("HEAT_TRACES", 1000))
    spans: int = 10
    writers: int = field(default_factory=lambda: _env("HEAT_WRITERS", 8))


# --- the indexer's batches --------------------------------------------------------------------------------


@dataclass
class Batches:
    """Indexer invocations seen, and how many (run, metric key) groups of latest-metric records each held."""

    invocations: int = 0
    records: int = 0
    key_groups: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def wrap(self, deliver: Callable[[list[dict[str, Any]]], Any]) -> Callable[[list[dict[str, Any]]], Any]:
        def counted(records: list[dict[str, Any]]) -> Any:
            groups = {group for group in map(_metric_group, records) if group is not None}
            with self._lock:
                self.invocations += 1
                self.records += len(records)
                self.key_groups += len(groups)
            return deliver(records)

        return counted


def _metric_group(record: dict[str, Any]) -> tuple[str, str] | None:
    """(run id, key) of a latest-metric stream record (whichever layout the code writes), else None."""
    from serverless_mlflow.storage import table

    ddb = record.get("dynamodb") or {}
    image = table.from_item(ddb.get("NewImage") or ddb.get("OldImage") or {})
    if image.get(schema.ENTITY_TYPE) != "latest_metric":
        return None
    entity = schema.ENTITY["latest_metric"]
    fields: dict[str, Any] = {}
    for parse, value in ((entity.parse_pk, image[schema.PK]), (entity.parse, image[schema.SK])):
        try:
            fields.update(parse(value))
        except ValueError:
            continue
    return (str(fields.get("run_id")), str(image.get("key")))


# --- a metered runtime ------------------------------------------------------------------------------------


@dataclass
class Metered:
    runtime: Any
    meter: HeatMeter
    batches: Batches

    @property
    def url(self) -> str:
        return self.runtime.url

    def settle(self) -> None:
        """Let the indexer finish what the writes left in the stream (as the deployed mapping would)."""
        self.runtime.drain_stream()


@contextmanager
def metered_runtime(window_seconds: float) -> Iterator[Metered]:
    """A local runtime on a fresh embedded table, indexer asynchronous with a ``window_seconds`` batching window,
    every DynamoDB write of this process metered. The environment it sets is restored after: a caller that goes on
    to spawn processes (``trace_load_bench``'s clients) must not inherit its ``MLFLOW_HTTP_REQUEST_MAX_RETRIES=0``,
    which made every 429 a give-up (a trace lost by the bench's client, not by the store)."""
    from local import engine
    from local import runtime as runtime_module
    from serverless_mlflow.storage import table

    saved = dict(os.environ)
    for name in ("DYNAMODB_ENDPOINT_URL", "S3_ENDPOINT_URL", "KMS_ENDPOINT_URL", "GATEWAY_KMS_KEY_ID"):
        os.environ.pop(name, None)
    os.environ["TABLE_NAME"] = f"heat-{uuid.uuid4().hex[:8]}"
    os.environ["BUCKET_NAME"] = f"heat-{uuid.uuid4().hex[:8]}"
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
    # A long run: the JIT's warm-up pays (as for ``python -m local``).
    os.environ.setdefault("DYNAMODB_LOCAL_JAVA_OPTS", engine.SERVER_JAVA_OPTS)
    meter = HeatMeter()
    meter.install()
    table.reset_client()
    runtime_module.POLL_SECONDS = window_seconds
    try:
        runtime = runtime_module.LocalRuntime(port=0, indexer_mode="async").start()
        batches = Batches()
        assert runtime.follower is not None
        runtime.follower.deliver = batches.wrap(runtime.follower.deliver)
        try:
            yield Metered(runtime, meter, batches)
        finally:
            runtime.stop()
    finally:
        meter.uninstall()
        table.reset_client()
        os.environ.clear()
        os.environ.update(saved)


def _window_seconds() -> float:
    """The deployed mapping's batching window (``infra/constructs/indexer.py``), else the runtime's poll interval."""
    if "HEAT_WINDOW_SECONDS" in os.environ:
        return float(os.environ["HEAT_WINDOW_SECONDS"])
    from infra.constructs import indexer

    window = getattr(indexer, "BATCHING_WINDOW_SECONDS", None)
    return float(window) if window else 1.0


# --- workloads ---------------------------------------------------------------------------------------------


def _parallel(fn: Callable[[Any], Any], items: list[Any], writers: int) -> list[Any]:
    with ThreadPoolExecutor(max_workers=writers) as pool:
        return list(pool.map(fn, items))


def _create_runs(client: Any, experiment_id: str, sizes: Sizes) -> list[str]:
    def create(i: int) -> str:
        from mlflow.entities import Param

        run = client.create_run(experiment_id, run_name=f"sweep-{i}")
        client.log_batch(
            run.info.run_id, params=[Param("lr", str(10 ** -(i % 5))), Param("batch", str(32 * (1 + i % 4))), Param("seed", str(i))]
        )
        return run.info.run_id

    return _parallel(create, list(range(sizes.runs)), sizes.writers)


def _points(run_index: int, n: int, keys: int) -> Iterator[tuple[str, float, int, int]]:
    """A training loop's points: every key at each step, in step order."""
    base = 1_700_000_000_000 + run_index * 10_000_000
    for i in range(n):
        step, key = divmod(i, keys)
        yield f"m{key}", math.exp(-step / 50) + run_index / 1000 + key / 100, base + i, step


def _sweep(metered: Metered, sizes: Sizes, single: bool) -> dict[str, Any]:
    import mlflow
    from mlflow.entities import Metric

    client = mlflow.MlflowClient(metered.url)
    experiment_id = client.create_experiment(f"heat-{uuid.uuid4().hex[:8]}")
    run_ids = _create_runs(client, experiment_id, sizes)
    metered.settle()
    setup = metered.meter.reset()
    invocations_before, groups_before = metered.batches.invocations, metered.batches.key_groups
    points_per_run = sizes.single_points if single else sizes.points
    started = time.monotonic()

    def log(index_and_run: tuple[int, str]) -> None:
        index, run_id = index_and_run
        points = list(_points(index, points_per_run, sizes.keys))
        if single:
            for key, value, timestamp, step in points:
                client.log_metric(run_id, key, value, timestamp=timestamp, step=step)
            return
        for start in range(0, len(points), BATCH_POINTS):
            chunk = points[start : start + BATCH_POINTS]
            client.log_batch(run_id, metrics=[Metric(key, value, timestamp, step) for key, value, timestamp, step in chunk])

    _parallel(log, list(enumerate(run_ids)), sizes.writers)
    metered.settle()
    seconds = time.monotonic() - started
    logging = metered.meter.reset()
    batches = metered.batches.invocations - invocations_before
    key_groups = metered.batches.key_groups - groups_before
    _parallel(lambda run_id: client.set_terminated(run_id), run_ids, sizes.writers)
    metered.settle()
    teardown = metered.meter.reset()
    experiment_pk = schema.ENTITY["experiment"].pk.render({"experiment_id": experiment_id})
    return {
        "experiment_pk": experiment_pk,
        "points": sizes.runs * points_per_run,
        "runs": sizes.runs,
        "phases": {"setup": setup, "logging": logging, "teardown": teardown},
        "batches": batches,
        "key_groups": key_groups,
        "seconds": seconds,
    }


def _traces(metered: Metered, sizes: Sizes) -> dict[str, Any]:
    import mlflow

    os.environ["MLFLOW_ENABLE_ASYNC_TRACE_LOGGING"] = "false"
    mlflow.set_tracking_uri(metered.url)
    experiment_id = mlflow.create_experiment(f"heat-traces-{uuid.uuid4().hex[:8]}")
    mlflow.set_experiment(experiment_id=experiment_id)
    metered.settle()
    setup = metered.meter.reset()
    metered.meter.reset_entities()
    started = time.monotonic()

    def one(i: int) -> None:
        with mlflow.start_span(name=f"agent-{i % 20}") as root:
            root.set_inputs({"question": f"q{i}"})
            for j in range(sizes.spans - 1):
                with mlflow.start_span(name=f"step-{j}") as span:
                    span.set_inputs({"i": i, "j": j})
                    span.set_outputs({"ok": True})
            root.set_outputs({"answer": f"a{i}"})

    _parallel(one, list(range(sizes.traces)), sizes.writers)
    metered.settle()
    seconds = time.monotonic() - started
    logging = metered.meter.reset()
    entities = metered.meter.reset_entities()
    experiment_pk = schema.ENTITY["experiment"].pk.render({"experiment_id": experiment_id})
    return {
        "experiment_pk": experiment_pk,
        "traces": sizes.traces,
        "phases": {"setup": setup, "logging": logging},
        "entities": entities,
        "seconds": seconds,
    }


# --- figures ---------------------------------------------------------------------------------------------


def partition_label(pk: str) -> str:
    """The partition key's shape from the schema (the most specific template that parses it), e.g. ``EXP#{experiment_id}``."""
    index = ""
    if ":" in pk and pk.split(":", 1)[0] in schema.INDEX_BY_NAME:
        index, pk = pk.split(":", 1)
    best: tuple[int, str] | None = None
    for entity in schema.ENTITIES:
        templates = [(entity.pk, "")] if not index else [(t, index) for name, (t, _) in entity.indexes.items() if name == index and t]
        for template, _ in templates:
            try:
                template.parse(pk)
            except ValueError:
                continue
            literal = len(template.template.split("{", 1)[0])
            if best is None or literal > best[0]:
                best = (literal, template.template)
    shape = best[1] if best else "?"
    return f"{index} {shape}".strip()


def _total(usage: dict[str, Usage]) -> Usage:
    out = Usage()
    for one in usage.values():
        out.add(one)
    return out


def _merge(*phases: dict[str, Usage]) -> dict[str, Usage]:
    out: dict[str, Usage] = {}
    for phase in phases:
        for pk, usage in phase.items():
            out.setdefault(pk, Usage()).add(usage)
    return out


def _collections(usage: dict[str, Usage]) -> dict[str, Usage]:
    """Item collections only (table partition keys): GSI partitions are other partitions, not capped."""
    return {pk: u for pk, u in usage.items() if not (":" in pk and pk.split(":", 1)[0] in schema.INDEX_BY_NAME)}


@dataclass
class Figures:
    name: str
    unit: str  # "point" or "trace"
    count: int
    usage: dict[str, Usage]
    experiment_pk: str
    extra: list[tuple[str, str]] = field(default_factory=list)
    entities: dict[str, Usage] = field(default_factory=dict)  # while logging, by the written item's entity

    @property
    def total(self) -> Usage:
        return _total(self.usage)

    def hottest(self) -> tuple[str, Usage]:
        return max(self.usage.items(), key=lambda pair: pair[1].units)

    def largest_growth(self) -> tuple[str, Usage]:
        return max(_collections(self.usage).items(), key=lambda pair: pair[1].bytes)

    def rows(self) -> list[tuple[str, str]]:
        total = self.total
        hot_pk, hot = self.hottest()
        grown = [u.bytes for u in _collections(self.usage).values() if u.bytes > 0]
        growth_total = sum(grown) or 1
        big_pk, big = self.largest_growth()
        experiment = self.usage.get(self.experiment_pk, Usage())
        per = self.unit
        rows = [
            (f"{per}s logged", f"{self.count:,}"),
            ("write units (all partitions)", f"{total.units:,.0f} ({total.units / self.count:.2f} per {per})"),
            ("partition keys written", f"{len(self.usage):,}"),
            (
                "hottest partition key",
                f"`{partition_label(hot_pk)}`: {hot.units / total.units:.1%} of write units, {max(hot.bytes, 0) / growth_total:.1%} of bytes stored",
            ),
            (
                "experiment partition (`EXP#<id>`)",
                f"{experiment.units / total.units:.1%} of write units ({experiment.units / self.count:.3f} per {per}), "
                f"{experiment.bytes / self.count:,.1f} bytes per {per}",
            ),
            (
                f"largest item collection gain per {per}",
                f"`{partition_label(big_pk)}`: {big.bytes / self.count:,.1f} bytes per {per} of the scenario",
            ),
            (
                f"projected ceiling: {per}s per second per experiment",
                f"{PARTITION_UNITS_PER_SECOND * self.count / hot.units:,.0f} (the hottest key at {PARTITION_UNITS_PER_SECOND:,} write units/s)",
            ),
            (
                "projected ceiling: size",
                _size_ceiling(self, big_pk, big, experiment),
            ),
        ]
        return rows + self.extra

    def by_shape(self, n: int = 8) -> list[tuple[str, int, Usage, float, int]]:
        """(shape, keys, their total, the hottest key's units, the largest bytes one key gained), hottest shapes first."""
        shapes: dict[str, tuple[int, Usage, float, int]] = {}
        for pk, usage in self.usage.items():
            shape = partition_label(pk)
            keys, total, hottest, largest = shapes.get(shape, (0, Usage(), 0.0, 0))
            total.add(usage)
            shapes[shape] = (keys + 1, total, max(hottest, usage.units), max(largest, usage.bytes))
        ordered = sorted(shapes.items(), key=lambda pair: -pair[1][1].units)[:n]
        return [(shape, keys, total, hottest, largest) for shape, (keys, total, hottest, largest) in ordered]


def _size_ceiling(figures: Figures, big_pk: str, big: Usage, experiment: Usage) -> str:
    per = figures.unit
    if big.bytes <= 0:
        return "no item collection grows"
    if big_pk == figures.experiment_pk:
        count = COLLECTION_CAP_BYTES * figures.count / big.bytes
        return f"the experiment partition fills 10 GB after {count:,.0f} {per}s"
    share = COLLECTION_CAP_BYTES * figures.count / big.bytes
    tail = (
        f"; the experiment partition gains {experiment.bytes / figures.count:,.2f} bytes per {per}"
        if experiment.bytes > 0
        else "; the experiment partition does not grow with them"
    )
    return (
        f"`{partition_label(big_pk)}` (one of {_count_shaped(figures, big_pk):,}) fills 10 GB after {share:,.0f} {per}s of this mix{tail}"
    )


def _count_shaped(figures: Figures, pk: str) -> int:
    shape = partition_label(pk)
    return sum(1 for key in _collections(figures.usage) if partition_label(key) == shape)


def render(figures: list[Figures], sizes: Sizes, window: float, notes: list[str] | None = None) -> str:
    lines = [
        f"## {SECTION}\n",
        "`python -m tools.partition_heat` (`make bench`, scenario `partition_heat`): the stock client against the local runtime,",
        f"{sizes.writers} concurrent writers, the stream indexer asynchronous with a {window:g} s batching window (as deployed). Every",
        "DynamoDB write is charged with DynamoDB's rules (`tools/heat_meter.py`): 1 unit per started KB of the larger image,",
        "twice inside a transaction (table arm), LSI entries on the item's own partition key, GSI entries on their index's",
        "partition key (another partition). *Bytes* are what an item collection (table items + LSI entries: what the 10 GB",
        f"cap counts) gains. Ceilings assume {PARTITION_UNITS_PER_SECOND:,} write units/s and 10 GB per partition key.\n",
    ]
    for one in figures:
        lines += [f"### {one.name}\n", "\n\n".join(tables(one)), ""]
    lines += notes or []
    return "\n".join(lines) + "\n"


def tables(one: Figures) -> tuple[str, ...]:
    """A scenario's tables: its measures, write units and bytes by partition key shape, and (when counted) write
    units by the entity written."""
    lines = ["| measure | value |", "|---|---|"] + [f"| {k} | {v} |" for k, v in one.rows()]
    shapes = [
        "| partition key shape | keys | write units | share | hottest key's share | bytes gained | largest gain on one key |",
        "|---|---|---|---|---|---|---|",
    ]
    total = one.total.units
    for shape, keys, usage, hottest, largest in one.by_shape():
        shapes.append(
            f"| `{shape}` | {keys:,} | {usage.units:,.0f} | {usage.units / total:.1%} | {hottest / total:.1%} | {usage.bytes:,} | {largest:,} |"
        )
    if not one.entities:
        return "\n".join(lines), "\n".join(shapes)
    per = one.unit
    entities = [f"| entity written | writes per {per} | write units per {per} | share |", "|---|---|---|---|"]
    counted = sum(usage.units for usage in one.entities.values()) or 1
    for kind, usage in sorted(one.entities.items(), key=lambda pair: -pair[1].units):
        entities.append(f"| {kind} | {usage.writes / one.count:.2f} | {usage.units / one.count:.2f} | {usage.units / counted:.1%} |")
    return "\n".join(lines), "\n".join(shapes), "\n".join(entities)


def scenario_a(metered: Metered, sizes: Sizes) -> Figures:
    result = _sweep(metered, sizes, single=False)
    usage = _merge(*result["phases"].values())
    logging = result["phases"]["logging"]
    experiment = logging.get(result["experiment_pk"], Usage())
    figures = Figures(
        f"(a) {sizes.runs}-run sweep, {BATCH_POINTS}-point log_batch calls ({sizes.points:,} points per run, {sizes.keys} keys)",
        "point",
        result["points"],
        usage,
        result["experiment_pk"],
        entities=result["entities"],
    )
    figures.extra = [
        _per_run(usage, result),
        (
            "while logging: experiment partition write units per log_batch call",
            f"{experiment.units / (result['points'] / BATCH_POINTS):.2f}",
        ),
        ("indexer batches while logging", f"{result['batches']:,} ({result['key_groups']:,} (run, key) groups)"),
        ("logging wall time (local)", f"{result['seconds']:.0f} s"),
    ]
    return figures


def _per_run(usage: dict[str, Usage], result: dict[str, Any]) -> tuple[str, str]:
    """What one run of the sweep (created, 3 params, its metrics, terminated) leaves in the experiment partition."""
    per_run = usage.get(result["experiment_pk"], Usage()).bytes / result["runs"]
    return (
        "experiment partition: bytes per run (created, 3 params, its metrics, terminated)",
        f"{per_run:,.0f} ({COLLECTION_CAP_BYTES / per_run:,.0f} such runs fill 10 GB)" if per_run > 0 else "0",
    )


def scenario_b(metered: Metered, sizes: Sizes) -> Figures:
    result = _sweep(metered, sizes, single=True)
    usage = _merge(*result["phases"].values())
    logging = result["phases"]["logging"]
    experiment = logging.get(result["experiment_pk"], Usage())
    groups = max(1, result["key_groups"])
    figures = Figures(
        f"(b) the same sweep with single-point log_metric calls ({sizes.single_points} points per run, {sizes.keys} keys, every key at each step)",
        "point",
        result["points"],
        usage,
        result["experiment_pk"],
        entities=result["entities"],
    )
    figures.extra = [
        _per_run(usage, result),
        (
            "indexer batches while logging",
            f"{result['batches']:,}, holding {result['key_groups']:,} (run, key) groups of latest-metric records",
        ),
        (
            "while logging: experiment partition write units per (run, key) group per indexer batch",
            f"{experiment.units / groups:.2f} ({experiment.units:,.0f} units / {groups:,} groups; {experiment.units / result['points']:.2f} per point)",
        ),
        ("logging wall time (local)", f"{result['seconds']:.0f} s"),
    ]
    return figures


def scenario_c(metered: Metered, sizes: Sizes) -> Figures:
    result = _traces(metered, sizes)
    usage = _merge(*result["phases"].values())
    figures = Figures(
        f"(c) {sizes.traces:,} traces of {sizes.spans} spans, logged concurrently",
        "trace",
        result["traces"],
        usage,
        result["experiment_pk"],
        entities=result["entities"],
    )
    figures.extra = [("logging wall time (local)", f"{result['seconds']:.0f} s")]
    return figures


SCENARIOS: dict[str, Callable[[Metered, Sizes], Figures]] = {"a": scenario_a, "b": scenario_b, "c": scenario_c}


def measure(which: list[str] | None = None, sizes: Sizes | None = None) -> tuple[list[Figures], Sizes, float]:
    sizes = sizes or Sizes()
    window = _window_seconds()
    out = []
    for name in which or list(SCENARIOS):
        with metered_runtime(window) as metered:
            figures = SCENARIOS[name](metered, sizes)
            if metered.meter.failures:
                figures.extra.append(("writes the meter could not size (not counted)", str(metered.meter.failures)))
            out.append(figures)
    return out, sizes, window


def partition_heat_section(which: list[str] | None = None, sizes: Sizes | None = None) -> str:
    """The scenario's markdown section (``## Partition heat ...``), measured now."""
    figures, sizes, window = measure(which, sizes)
    return render(figures, sizes, window)


def scenario_partition_heat(bench: Any, _: int) -> None:
    """``tools/bench.py`` hook: the section is appended to docs/performance.md as it stands."""
    bench.sections.append(partition_heat_section())


if __name__ == "__main__":
    wanted = [arg for arg in sys.argv[1:] if arg in SCENARIOS] or None
    section = partition_heat_section(wanted)
    if os.environ.get("HEAT_OUT"):  # the clients and the indexer print to stdout too
        Path(os.environ["HEAT_OUT"]).write_text(section)
    print(section)
