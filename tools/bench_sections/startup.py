"""``make serve`` start-up: a fresh clone to a healthy server (set-up included), then a second start."""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path
from typing import Any

from tools.bench_sections import Figures, table
from tools.fresh_clone import clone_checkout, newcomer_environment, serving

TITLE = "make serve start-up"


def section(context: Any) -> Figures:
    rows: list[tuple[str, str]] = []
    with tempfile.TemporaryDirectory(prefix="bench-startup-") as tmp:
        clone = clone_checkout(Path(tmp) / "clone")
        env = newcomer_environment()
        started = time.monotonic()
        with serving(clone, env, clone / "cold.log") as url:
            cold = time.monotonic() - started
        started = time.monotonic()
        with serving(clone, env, clone / "warm.log") as url:
            warm = time.monotonic() - started
        steps = [
            line.strip() for line in (clone / "cold.log").read_text().splitlines() if line.startswith(("==>", "    done in", "ready in"))
        ]
        del url
    load = " / ".join(f"{x:.1f}" for x in os.getloadavg())
    rows += [
        ("fresh clone -> healthy (`make serve`: set-up with warm pip/npm caches, then start), target <= 60 s", f"{cold:.0f} s"),
        ("second `make serve` in the same clone -> healthy (set up already)", f"{warm:.1f} s"),
        ("load average (1 / 5 / 15 min) after", load),
    ]
    rows += [(f"cold: {step}", "") for step in steps]
    return Figures([table(rows)])
