"""Write units and bytes per partition key under sustained logging and tracing (``tools/partition_heat.py``)."""

from __future__ import annotations

from typing import Any

from tools.bench_sections import Figures

TITLE = "Partition heat"


def section(context: Any) -> Figures:
    from tools import partition_heat

    figures, sizes, window = partition_heat.measure()
    # partition_heat.md: per scenario (a), (b), (c) its heading (which names its sizes) and its two tables.
    values = {
        "writers": str(sizes.writers),
        "window": f"{window:g}",
        "units": f"{partition_heat.PARTITION_UNITS_PER_SECOND:,}",
    }
    blocks: list[str] = []
    for key, one in zip("abc", figures, strict=False):
        values[key] = one.name
        blocks += partition_heat.tables(one)
    return Figures(blocks, values)
