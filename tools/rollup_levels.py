"""Migration steps ``rollup_levels`` and ``rollup_status_minutes``: every trace's metric rollups at the coarse
levels (issue 24).

The indexer keeps, per trace, a contribution record of what the trace adds to its experiment's rollup items
(``trace_aggregates``). Code before the coarse levels (``trace_metrics.rollups.LEVELS``: ungrouped and
per-status slices per hour, ungrouped and per-status slices per minute) wrote records without those parts, so the coarse items
lack every trace aggregated before the upgrade. Re-aggregating a trace finds the parts its record lacks and
adds them, in the indexer's own replay-safe transaction (conditioned on the record's and the items' revisions):
running this while clients trace, or twice, or after a stop, converges to the same items. When every trace of
every experiment has been re-aggregated, the steps are recorded in ``CONFIG / CFG#layout``; queries read the
coarse levels from then on (``layout.rollup_levels_complete``, ``layout.status_minutes_complete``), the full level
(or raw edges) until then.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
for extra in (ROOT / "layers" / "shared" / "python", ROOT / "functions"):
    if str(extra) not in sys.path:
        sys.path.insert(0, str(extra))

from serverless_mlflow.index import trace_aggregate_writes  # noqa: E402
from serverless_mlflow.storage import layout  # noqa: E402

CHUNK = 200


def trace_ids(experiment_id: str) -> Iterator[str]:
    """Every trace of the experiment, through the request path's own trace search (either trace layout)."""
    from traces import search

    from serverless_mlflow.search import trace_order

    terms = trace_order.full_order([("attribute", "timestamp_ms", True)])
    for info in search.matching(search.Search([experiment_id], [], terms, 10**12)):
        yield info["trace_id"]


def run(experiment_ids: Iterable[str], record: bool = True) -> int:
    """Re-aggregate every trace of these experiments (every experiment of the table); record the step. Returns
    how many traces were re-aggregated."""
    total = 0
    for experiment_id in experiment_ids:
        chunk: list[str] = []
        for trace_id in trace_ids(experiment_id):
            chunk.append(trace_id)
            if len(chunk) >= CHUNK:
                trace_aggregate_writes.refresh_or_raise(chunk)
                total, chunk = total + len(chunk), []
        if chunk:
            trace_aggregate_writes.refresh_or_raise(chunk)
            total += len(chunk)
    if record:
        layout.record_steps(layout.ROLLUP_STEPS)
    return total
