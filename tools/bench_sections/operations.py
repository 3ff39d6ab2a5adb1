"""DynamoDB work per API operation (requests, items), plus the traces, registry and artifacts figures."""

from __future__ import annotations

from typing import Any

from tools.bench_sections import Figures, tables

TITLE = "DynamoDB work per API operation"


def section(context: Any) -> Figures:
    from tools import bench

    measured = bench.run_scenarios(bench.SCENARIOS, context.n_runs)
    lines = [
        "| operation | requests | by type | items read | items written | budget | note |",
        "|---|---|---|---|---|---|---|",
    ]
    for m in measured.results:
        by_type = ", ".join(f"{k} {v}" for k, v in sorted(m.by_type.items()))
        lines.append(f"| {m.operation} | {m.requests} | {by_type} | {m.items_read} | {m.items_written} | {m.budget} | {m.note} |")
    # The scenarios' own tables, in scenario order (traces, then artifacts), as operations.md places them.
    return Figures(["\n".join(lines), *tables(measured.extra)])
