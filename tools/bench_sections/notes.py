"""Notes on the figures: budgets, plans and known limits (the text is ``notes.md`` beside this module; nothing is measured)."""

from __future__ import annotations

from typing import Any

from tools.bench_sections import Figures

TITLE = "Notes"


def section(context: Any) -> Figures:
    return Figures()
