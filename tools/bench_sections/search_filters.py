"""search_runs plans and filters over many runs (``tools/search_bench.py``, ``BENCH_FILTER_RUNS``)."""

from __future__ import annotations

from typing import Any

from tools.bench_sections import titled_tables

TITLE = "search_runs filters"


def section(context: Any) -> str:
    from tools import bench
    from tools.search_bench import scenario_search_filters

    return titled_tables(bench.run_scenarios([("search_filters", scenario_search_filters)], context.n_runs).extra)
