"""The indexer's write amplification and lag, and index-backed search reads (``tools/indexer_bench.py``)."""

from __future__ import annotations

from typing import Any

from tools.bench_sections import Figures, tables

TITLE = "Indexer"


def section(context: Any) -> Figures:
    from tools import bench
    from tools.indexer_bench import scenario_indexer

    return Figures(tables(bench.run_scenarios([("indexer", scenario_indexer)], context.n_runs).extra))
