"""search_runs with metric, param and tag filters over 100,000 runs in one experiment, for ``make bench``.

``scenario_search_filters(bench, _)`` plugs into ``tools/bench.py``; ``python -m tools.search_bench`` runs
it alone on a fresh embedded table. ``BENCH_FILTER_RUNS`` (default 100000) runs are bulk-loaded in their
indexed state: each run item, 5 latest metrics, 5 params and 3 tags, plus the RANK items the stream
indexer derives from them (``derived.derive``) for the keys the searches read, with BatchWriteItem. Each filter is then searched with
ORDER BY a metric and max_results 100, page after page through the returned tokens, counting every
DynamoDB call of each page: items read (``ScannedCount`` for queries, items returned by batch gets) and
read capacity units (``ReturnConsumedCapacity``, through a botocore event hook).

The data: m0, m1 uniform in [0, 1); p0 one of n/1000 values; t0 'a' for half the runs, 'b' or 'c' else.
Each filter selects about 1,000 runs (1% of 100,000; thresholds scale with the run count so a smaller
load keeps the same 10 pages): ``metrics.m0 > X``, ``params.p0 = 'v0'``, and ``tags.t0 = 'a' AND
metrics.m1 < Y`` (half of a 2,000-run metric range).
"""

from __future__ import annotations

import os
import random
import sys
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
for extra in (ROOT / "layers" / "shared" / "python", ROOT / "functions", ROOT):
    if str(extra) not in sys.path:
        sys.path.insert(0, str(extra))

from serverless_mlflow.index import pair_ranks  # noqa: E402
from serverless_mlflow.storage import table  # noqa: E402
from serverless_mlflow.storage.table import STATS  # noqa: E402
from tools import indexed_state  # noqa: E402

API = "/api/2.0/mlflow"
MATCHING = 1000  # runs each filter selects: 1% of 100,000 (thresholds scale with BENCH_FILTER_RUNS)


def searches(n_runs: int) -> list[tuple[str, list[str]]]:
    share = MATCHING / n_runs
    return [
        (f"metrics.m0 > {1 - share:.6f}", ["metrics.m0 DESC"]),
        ("params.p0 = 'v0'", ["metrics.m1 DESC"]),  # the declared pair index (PAIR)
        (f"tags.t0 = 'a' AND metrics.m1 < {2 * share:.6f}", ["metrics.m1 ASC"]),
        ("params.p0 = 'v0'", ["metrics.m2 DESC"]),  # no pair index for (p0, m2): ordered candidates
    ]


# The experiment declares one pair index, as `python -m tools.pair_index add` leaves it (backfilled).
PAIR = pair_ranks.Pair("p0", "m1", pair_ranks.READY)


def param_values(n_runs: int) -> int:
    return max(1, n_runs // MATCHING)


PLANS_TITLE = "search_runs: which filters are index-served"
PLANS = [
    (
        "no filter, or attribute filters only; default order or start_time ASC/DESC",
        "start-time plan: LSI1 (lifecycle) / LSI2 (start time) / LSI3 (`attributes.status = 'X'`); pages seek by start time",
    ),
    (
        "ORDER BY metrics.k / params.k, attribute filters only",
        "rank plan: RANK items in value order; pages seek to the token's value (runs lacking the key: by start time)",
    ),
    ("`metrics.k <, <=, >, >=, = x`", "RANK-served: a key range of metric_rank items"),
    (
        "`params.k = 'v'`, `tags.k = 'v'`, `LIKE 'prefix%'` (case-sensitive, literal prefix)",
        "RANK-served: a key range of param_rank / tag_rank items",
    ),
    (
        "an AND of RANK-served terms (plus any other terms)",
        "the smallest range drives (ranges read side by side until one ends); MLflow's exact filter and order run on its "
        "candidates only; every page reads them again (page N costs page 1)",
    ),
    (
        "... ORDER BY a metric, param or tag (another key)",
        "ordered candidates: only the order key is read for every candidate (the driving key's RANK value, else one "
        "BatchGetItem of its source items); candidates before the token's value are dropped unread, the rest verified "
        "on their run summaries a few whole groups of equal value at a time until the page is full",
    ),
    (
        "... ORDER BY the metric a range term bounds",
        "ordered range: that metric's RANK items walked in order from the range start or the token, each run verified "
        "on its summary, reads sized by the share of walked runs that matched; pages seek. Other terms are raced only "
        "when fewer than a quarter of a page's worth of walked runs match (one of them may name fewer runs than a page)",
    ),
    (
        "`params.k = 'v'` ORDER BY metrics.m, where (k, m) is a declared pair index (`python -m tools.pair_index add`)",
        "pair walk: the pair's items for value v, in m's order (NaN, then runs lacking m, last), each run verified on "
        "its summary; pages seek. Without the pair index: ordered candidates (every run having v, then a page)",
    ),
    (
        "every plan but the full one: the returned runs",
        "one run summary per run (one item: the run and all its data), a BatchGetItem per page; a run with an item "
        "not indexed yet is read from its range",
    ),
    ("`attributes.run_name` =, LIKE, ILIKE", "FTS candidates (trigram postings), then the exact filter"),
    (
        "no RANK-served term: only `!=`, ILIKE, IS NULL / IS NOT NULL, LIKE without a literal prefix, datasets.*, "
        "or attribute filters with ORDER BY a tag or another attribute",
        "full plan: every run of the experiments is read (the fallback)",
    ),
    (
        "any of the above while the indexer lags",
        "exact: sources flagged on LSI5 (not indexed yet) are read instead of their RANK items; a run all of whose items are still flagged is assembled from them, not read again; a page whose run items are all flagged reads the rest of their ranges, not the LSI5 items, and a rank plan that finds every run it considers flagged reads each once, whole. On the 200 runs of a sweep logged a moment ago every shape of tests/runs/test_lagging_search_cost.py (first and second pages) reads at most 1,601 items, reading them all 1,600: walks of the run items by start time and ORDER BY a metric or param read 1,801 before (second pages up to 1,702), a metric filter ORDER BY another metric 2,001. The price is Queries: one per run for the rest of its range (about 400 for 200 runs, 200 before)",
    ),
]
PAGE_SIZE = 100
# The keys whose RANK items a measured search reads (its filter and order keys). The others' RANK items
# (m3, m4, p1-p4, t1, t2: 8 of the 27 items of a run) sit in key ranges no measured Query touches, so they
# change no figure: the load leaves them out (a third less to write).
RANKED_KEYS = frozenset({"m0", "m1", "m2", "p0", "t0"})
# DynamoDB Local is the bottleneck of the load (its JVM takes one core; this process about 15%): more
# writers than cores keep its request queue full while each thread waits on HTTP.
_LOAD_WORKERS = int(os.environ.get("BENCH_LOAD_WORKERS", "8"))
# The in-process runtime's default JVM flags (test sessions) favour start-up (C1 only, 512 MB heap); a 2.7-million-item load runs
# about a third faster with the C2 compiler (measured: 2,000 runs in 35 s instead of 54 s).
LOAD_JAVA_OPTS = "-Xms256m -Xmx1g -XX:+UseParallelGC"
_LOAD_CHUNK = 500


class Capacity:
    """Read capacity units of every DynamoDB call of this process's client (botocore event hooks)."""

    READS = ("Query", "GetItem", "BatchGetItem")

    def __init__(self) -> None:
        self.units = 0.0

    def install(self, client: Any) -> None:
        client.meta.events.register("provide-client-params.dynamodb.*", self._ask)
        client.meta.events.register("after-call.dynamodb.*", self._count)

    def _ask(self, params: dict[str, Any], model: Any, **_: Any) -> None:
        if model.name in self.READS:
            params.setdefault("ReturnConsumedCapacity", "TOTAL")

    def _count(self, parsed: dict[str, Any], model: Any, **_: Any) -> None:
        consumed = parsed.get("ConsumedCapacity")
        for entry in consumed if isinstance(consumed, list) else [consumed] if consumed else []:
            self.units += float(entry.get("CapacityUnits") or 0)


def run_items(experiment_id: str, index: int, rng: random.Random, p0_values: int) -> list[dict[str, Any]]:
    """A run, its data and the derived items the indexer writes for them (no LSI5 flag: indexed); RANK items
    only for ``RANKED_KEYS``."""
    run_id = uuid.UUID(int=rng.getrandbits(128)).hex
    info = {
        "run_id": run_id,
        "experiment_id": experiment_id,
        "run_name": None,
        "user_id": "bench",
        "status": "FINISHED",
        "start_time": 1_000_000 + index,
        "end_time": 2_000_000 + index,
        "artifact_uri": f"mlflow-artifacts:/{experiment_id}/{run_id}/artifacts",
        "lifecycle_stage": "active",
        "last_update_time": 1,
    }
    metrics = {f"m{k}": rng.random() for k in range(5)}
    params = {f"p{k}": f"v{rng.randrange(p0_values)}" if k == 0 else f"lr-{rng.randrange(1000)}" for k in range(5)}
    tags = {f"t{k}": ("a" if rng.random() < 0.5 else rng.choice("bc")) if k == 0 else f"team-{rng.randrange(10)}" for k in range(3)}
    return indexed_state.run_items(info, metrics, params, tags, [PAIR], ranked=RANKED_KEYS)


def bulk_load(experiment_id: str, n_runs: int, seed: int = 12) -> int:
    """Write the runs in their indexed state; returns the number of items written."""
    rng = random.Random(seed)
    chunks: list[list[dict[str, Any]]] = []
    for start in range(0, n_runs, _LOAD_CHUNK):
        chunk: list[dict[str, Any]] = []
        for index in range(start, min(start + _LOAD_CHUNK, n_runs)):
            chunk.extend(run_items(experiment_id, index, rng, param_values(n_runs)))
        chunks.append(chunk)
    with ThreadPoolExecutor(max_workers=_LOAD_WORKERS) as pool:
        list(pool.map(lambda items: table.batch_write(items), chunks))
    return sum(map(len, chunks))


def _measured(capacity: Capacity, fn: Callable[[], Any]) -> tuple[Any, dict[str, Any]]:
    STATS.reset()
    capacity.units = 0.0
    result = fn()
    snap = STATS.snapshot()
    snap["rcu"] = capacity.units
    return result, snap


def _walk(bench: Any, capacity: Capacity, body: dict[str, Any], max_pages: int | None) -> tuple[list[str], list[dict[str, Any]]]:
    """Follow the page tokens (at most ``max_pages``): every run id returned and each page's figures."""
    seen: list[str] = []
    pages: list[dict[str, Any]] = []
    token = None
    while max_pages is None or len(pages) < max_pages:
        request = {**body, **({"page_token": token} if token else {})}
        answer, snap = _measured(capacity, lambda request=request: bench.call("POST", f"{API}/runs/search", request))
        seen += [run["info"]["run_id"] for run in answer.get("runs", [])]
        snap["returned"] = len(answer.get("runs", []))
        pages.append(snap)
        # Progress on stderr: a large load makes each page slow on DynamoDB Local (see docs/performance.md).
        print(f"{body['filter'] or '(no filter)'} page {len(pages)}: {_figures(snap)}", file=sys.stderr, flush=True)
        token = answer.get("next_page_token")
        if not token:
            break
    if len(set(seen)) != len(seen):
        raise RuntimeError(f"{body}: a run was returned twice across pages")
    return seen, pages


def _figures(snap: dict[str, Any]) -> str:
    return f"{snap['items_read']:,} items / {snap['rcu']:.0f} RCU / {sum(snap['requests'].values())} requests"


def scenario_search_filters(bench: Any, _: int) -> None:
    n_runs = int(os.environ.get("BENCH_FILTER_RUNS", "100000"))
    capacity = Capacity()
    capacity.install(table.client())
    bench.extra.setdefault(PLANS_TITLE, list(PLANS))
    experiment_id = bench.call("POST", f"{API}/experiments/create", {"name": f"filters-{uuid.uuid4().hex[:8]}"})["experiment_id"]
    started = time.monotonic()
    table.put(pair_ranks.PAIR_INDEX.item({"pairs": [PAIR.as_attribute()], "rev": 1}, experiment_id=experiment_id))
    written = bulk_load(experiment_id, n_runs)
    seconds = time.monotonic() - started
    print(f"loaded {written:,} items in {seconds:,.0f} s", file=sys.stderr, flush=True)
    rows = bench.extra.setdefault(f"search_runs filters over {n_runs:,} runs in one experiment (max_results {PAGE_SIZE})", [])
    rows.append(
        (
            "bulk load (BatchWriteItem, DynamoDB Local in memory)",
            f"{written:,} items in {seconds:,.0f} s ({written / seconds:,.0f} items/s)",
        )
    )
    # The three filters, every page; then the rank plan (no filter, ORDER BY a metric): its first 10 pages.
    for filter_string, order_by, max_pages in [*((f, o, None) for f, o in searches(n_runs)), ("", ["metrics.m2 DESC"], 10)]:
        body = {"experiment_ids": [experiment_id], "filter": filter_string, "order_by": order_by, "max_results": PAGE_SIZE}
        seen, pages = _walk(bench, capacity, body, max_pages)
        first, tenth = pages[0], pages[min(9, len(pages) - 1)]
        label = f"`{filter_string or '(no filter)'}` ORDER BY {', '.join(order_by)}"
        matching = f"{len(seen):,} runs in {len(pages)} pages" + (" (first 10 pages walked)" if max_pages else "")
        rows.append((f"{label}: runs returned", matching))
        data = first["returned"]  # each returned run's summary (its run item, 5 metrics, 5 params, 3 tags in one item)
        rows.append(
            (
                "  page 1",
                f"{_figures(first)} ({data:,} items are the returned runs' summaries; "
                f"{(first['items_read'] - data) / max(1, first['returned']):.1f} other items per run returned)",
            )
        )
        rows.append((f"  page {len(pages[:10])}", _figures(tenth)))
        ratio = tenth["items_read"] / first["items_read"] if first["items_read"] else 0.0
        rows.append((f"  page {len(pages[:10])} / page 1, items read (budget <= 1.2)", f"{ratio:.2f}"))
        for name, snap in (("page 1", first), (f"page {len(pages[:10])}", tenth)):
            strict = 5 * snap["returned"] + 50
            rows.append((f"  {name}: items read vs 5 x returned + 50 = {strict:,} (strict reading)", _verdict(snap["items_read"], strict)))
        if max_pages is None:
            budget = 5 * len(seen) + 50
            verdict = _verdict(max(first["items_read"], tenth["items_read"]), budget)
            rows.append((f"  pages 1 and {len(pages[:10])}: items read vs 5 x matching runs + 50 = {budget:,}", verdict))


def _verdict(items_read: int, budget: int) -> str:
    return f"within ({items_read / budget:.2f} x)" if items_read <= budget else f"OVER ({items_read / budget:.2f} x)"


if __name__ == "__main__":
    from tools.bench import run_standalone

    os.environ.setdefault("DYNAMODB_LOCAL_JAVA_OPTS", LOAD_JAVA_OPTS)
    run_standalone(scenario_search_filters)
