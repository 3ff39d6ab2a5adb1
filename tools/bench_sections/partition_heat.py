"""Write units and bytes per partition key under sustained logging and tracing (``tools/partition_heat.py``)."""

from __future__ import annotations

from typing import Any

TITLE = "Partition heat"


def section(context: Any) -> str:
    from tools.partition_heat import partition_heat_section

    return partition_heat_section()
