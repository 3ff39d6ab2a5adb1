"""The sections of docs/performance.md, one module each (``make bench`` runs them in ``tools.bench.SECTIONS``).

A section module has a ``TITLE`` and ``section(context: tools.bench.Context) -> str``, which measures and
returns its markdown (its ``## heading``, tables, notes). To add one, write the module and put its name in
``SECTIONS``; ``BENCH_SECTIONS=name,name`` runs only those (``BENCH_OUT`` writes elsewhere). A section that
fails is reported in its place and the others still run.
"""

from __future__ import annotations

from collections.abc import Iterable


def table(rows: Iterable[tuple[str, str]], header: tuple[str, str] = ("measure", "value")) -> str:
    lines = [f"| {header[0]} | {header[1]} |", "|---|---|"]
    lines += [f"| {key} | {value} |" for key, value in rows]
    return "\n".join(lines)


def titled_tables(tables: dict[str, list[tuple[str, str]]]) -> str:
    return "\n\n".join(f"## {title}\n\n{table(rows)}" for title, rows in tables.items())
