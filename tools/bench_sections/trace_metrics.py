"""traces/metrics reads as one experiment grows, and the indexer's write units per trace
(``tools/trace_metrics_bench.py``; sizes in ``TRACE_METRICS_SIZES``)."""

from __future__ import annotations

from typing import Any

from tools.bench_sections import titled_tables

TITLE = "Trace metrics"


def section(context: Any) -> str:
    from tools import bench
    from tools.trace_metrics_bench import scenario_trace_metrics

    return titled_tables(bench.run_scenarios([("trace_metrics", scenario_trace_metrics)], context.n_runs).extra)
