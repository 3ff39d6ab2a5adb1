"""Memory of ``make serve`` under long use (``tools/soak_bench.py``)."""

from __future__ import annotations

from typing import Any

from tools.bench_sections import Figures, tables

TITLE = "Soak"


def section(context: Any) -> Figures:
    from tools.soak_bench import scenario_soak

    holder = type("Holder", (), {"extra": {}})()
    scenario_soak(holder, context.n_runs)
    # The title names the soak's sizes (tools/soak_bench.py); its notes are soak.md.
    return Figures(tables(holder.extra), {"title": next(iter(holder.extra), "Soak")})
