"""traces/metrics reads as one experiment grows, and the indexer's write units per trace
(``tools/trace_metrics_bench.py``; sizes in ``TRACE_METRICS_SIZES``)."""

from __future__ import annotations

from typing import Any

from tools.bench_sections import Figures, tables

TITLE = "Trace metrics"


def section(context: Any) -> Figures:
    import os

    from tools import bench
    from tools.trace_metrics_bench import LOAD_JAVA_OPTS, scenario_trace_metrics

    # The section's own runtime loads up to 100,000 traces: the load's JVM flags, for this section only.
    saved = os.environ.get("DYNAMODB_LOCAL_JAVA_OPTS")
    os.environ["DYNAMODB_LOCAL_JAVA_OPTS"] = saved or LOAD_JAVA_OPTS
    try:
        return Figures(tables(bench.run_scenarios([("trace_metrics", scenario_trace_metrics)], context.n_runs).extra))
    finally:
        if saved is None:
            os.environ.pop("DYNAMODB_LOCAL_JAVA_OPTS", None)
