"""Sustained trace load on the local runtime, and its projection to 1,000 traces/s (``tools/trace_load_bench.py``)."""

from __future__ import annotations

from typing import Any

from tools.bench_sections import Figures, table

TITLE = "Sustained trace load"


def section(context: Any) -> Figures:
    from tools import trace_load_bench

    # trace_load.md: the projection, the sustained load, the lag timeline and the storm, in that order.
    return Figures([table(rows) for rows in trace_load_bench.run().values()])
