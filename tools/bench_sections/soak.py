"""Memory of ``make serve`` under long use (``tools/soak_bench.py``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tools.bench_sections import titled_tables

TITLE = "Soak"


def section(context: Any) -> str:
    from tools.soak_bench import scenario_soak

    holder = type("Holder", (), {"extra": {}})()
    scenario_soak(holder, context.n_runs)
    notes = Path(__file__).with_name("soak_notes.md").read_text().strip()
    return f"{titled_tables(holder.extra)}\n\n{notes}"
