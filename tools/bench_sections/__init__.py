"""The sections of docs/performance.md, one module each (``make bench`` runs them in ``tools.bench.SECTIONS``).

A section is two parts. Its text is a template, ``<name>.md`` beside its module: everything written by hand (the
headings, how it was measured, what the figures mean, the history of a change), with a ``<!-- figures -->`` line
where each of its measured tables goes and ``{{key}}`` where a measured value sits in a sentence. Its module has a
``TITLE`` and ``section(context: tools.bench.Context) -> Figures`` (or a markdown string, one block), which
measures and returns those tables and values, nothing else. ``make bench`` fills the templates with what was
measured; ``recorded(page)`` reads the figures back out of a page, so that ``render_page(recorded(page))`` is the
page itself (``tests/test_bench_sections.py``): a hand-written line that is not in a template would be lost by
the next ``make bench``, and the test says so.

To add a section, write the module and its template and put its name in ``SECTIONS``; ``BENCH_SECTIONS=name,name``
runs only those (``BENCH_OUT`` writes elsewhere). A section that fails is reported in its place (the failure in
its first figures) and the others still run.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
HOLE = "<!-- figures -->"
# What fills a hole the run did not measure (a section run alone, or one whose scenario failed).
NOT_MEASURED = "_(not measured in this run)_"
_VALUE = re.compile(r"\{\{(\w+)\}\}")
# A hole's content in a page: one or more tables (blank lines between them), or the not-measured line.
_BLOCK = r"(?:\|[^\n]*(?:\n\|[^\n]*)*(?:\n\n\|[^\n]*(?:\n\|[^\n]*)*)*|" + re.escape(NOT_MEASURED) + r")"


@dataclass
class Figures:
    """What a section measured: its tables (markdown, in the order of its template's holes) and the values its
    template's sentences name."""

    blocks: list[str] = field(default_factory=list)
    values: dict[str, str] = field(default_factory=dict)


def table(rows: Iterable[tuple[str, str]], header: tuple[str, str] = ("measure", "value")) -> str:
    lines = [f"| {header[0]} | {header[1]} |", "|---|---|"]
    lines += [f"| {key} | {value} |" for key, value in rows]
    return "\n".join(lines)


def tables(extra: Mapping[str, list[tuple[str, str]]]) -> list[str]:
    """A scenario's extra tables (title -> rows), in order, without their titles (the template has the headings)."""
    return [table(rows) for rows in extra.values()]


def titled_tables(tables: dict[str, list[tuple[str, str]]]) -> str:
    return "\n\n".join(f"## {title}\n\n{table(rows)}" for title, rows in tables.items())


def template(name: str) -> str:
    return (HERE / f"{name}.md").read_text().strip()


def fill(text: str, figures: Figures) -> str:
    """The template with its holes filled in order (a missing table: NOT_MEASURED; tables beyond the holes go
    into the last one, or after a template without holes) and its values set (a value not measured: NOT_MEASURED)."""
    parts = text.split(HOLE)
    holes = len(parts) - 1
    blocks = [block.strip() for block in figures.blocks]
    if not holes and blocks:  # a template without tables (the notes): what was given anyway (a failure) follows it
        parts, holes = [text + "\n\n", ""], 1
    if holes and len(blocks) > holes:
        blocks = [*blocks[: holes - 1], "\n\n".join(blocks[holes - 1 :])]
    blocks += [NOT_MEASURED] * (holes - len(blocks))
    out = parts[0] + "".join(block + part for block, part in zip(blocks, parts[1:], strict=True))
    return _VALUE.sub(lambda m: figures.values.get(m.group(1), NOT_MEASURED), out)


def render(name: str, figures: Figures | str) -> str:
    if isinstance(figures, str):
        figures = Figures([figures])
    return fill(template(name), figures)


def render_page(names: Sequence[str], figures: Mapping[str, Figures]) -> str:
    """The whole page: the header, then each section's template filled with its figures."""
    parts = [template("header")] + [render(name, figures.get(name) or Figures()) for name in names]
    return "\n\n".join(parts) + "\n"


def _pattern(text: str) -> str:
    """A template as a regex: literal text, each hole a block group, each value a group of one line's text."""
    pieces = re.split(r"(<!-- figures -->|\{\{\w+\}\})", text)
    out = []
    for piece in pieces:
        if piece == HOLE:
            out.append(f"({_BLOCK})")
        elif _VALUE.fullmatch(piece):
            out.append(r"([^\n]*?)")
        else:
            out.append(re.escape(piece))
    return "".join(out)


def recorded(page: str, names: Sequence[str], remeasured: Sequence[str] = ()) -> dict[str, Figures]:
    """The figures a page holds (its tables and values), read against the templates; ValueError if the page is
    not the templates filled (a hand-written line that is in no template, or one of a template missing). The
    sections in ``remeasured`` (about to be measured anew) may hold any text: their template may have changed."""
    texts = [template("header")] + [template(name) for name in names]
    loose = [False] + [name in remeasured for name in names]
    parts = ["((?s:.*?))" if free else f"({_pattern(text)})" for text, free in zip(texts, loose, strict=True)]
    match = re.fullmatch("\n\n".join(parts) + r"\n", page)
    if match is None:
        raise ValueError("the page is not its section templates filled with figures")
    groups = iter(match.groups())
    out: dict[str, Figures] = {}
    for name, text, free in zip(["header", *names], texts, loose, strict=True):
        next(groups)  # the whole section
        if free:
            continue
        figures = Figures()
        for piece in re.findall(r"<!-- figures -->|\{\{\w+\}\}", text):
            value = next(groups)
            if piece == HOLE:
                figures.blocks.append(value)
            else:
                figures.values[piece[2:-2]] = value
        out[name] = figures
    out.pop("header")
    return out
