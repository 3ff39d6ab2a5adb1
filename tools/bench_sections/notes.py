"""Notes on the figures: budgets, plans and known limits (the text is ``notes.md`` beside this module)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

TITLE = "Notes"


def section(context: Any) -> str:
    return (Path(__file__).with_name("notes.md")).read_text().strip()
