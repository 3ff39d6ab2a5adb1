"""DynamoDB work per API operation (requests, items), plus the traces, registry and artifacts figures."""

from __future__ import annotations

from typing import Any

from tools.bench_sections import titled_tables

TITLE = "DynamoDB work per API operation"


def section(context: Any) -> str:
    from tools import bench

    measured = bench.run_scenarios(bench.SCENARIOS, context.n_runs)
    lines = [
        f"## {TITLE}\n",
        "Measured on the local runtime (embedded DynamoDB Local + moto S3, fresh table): every DynamoDB call of one API",
        "operation is counted. *Items read* is what DynamoDB reads (ScannedCount for queries), *items written* counts",
        "each put/update/delete. Request-path counts are taken with the stream indexer paused.\n",
        "| operation | requests | by type | items read | items written | budget | note |",
        "|---|---|---|---|---|---|---|",
    ]
    for m in measured.results:
        by_type = ", ".join(f"{k} {v}" for k, v in sorted(m.by_type.items()))
        lines.append(f"| {m.operation} | {m.requests} | {by_type} | {m.items_read} | {m.items_written} | {m.budget} | {m.note} |")
    extra = titled_tables(measured.extra)
    return "\n".join(lines) + ("\n\n" + extra if extra else "")
