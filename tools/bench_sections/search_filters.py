"""search_runs plans and filters over many runs (``tools/search_bench.py``, ``BENCH_FILTER_RUNS``)."""

from __future__ import annotations

from typing import Any

from tools.bench_sections import Figures, tables

TITLE = "search_runs filters"


def section(context: Any) -> Figures:
    import os

    from tools import bench
    from tools.search_bench import scenario_search_filters

    measured = bench.run_scenarios([("search_filters", scenario_search_filters)], context.n_runs)
    # The size the scenario reads (its title names it too).
    return Figures(tables(measured.extra), {"runs": f"{int(os.environ.get('BENCH_FILTER_RUNS', '100000')):,}"})
