"""``make migrate`` / ``python -m tools.admin migrate``: move a live table to the current layout, step by step.

    python -m tools.migrate [--workspace default ...] [--max-items N] [--status]

The table's layout version is ``CONFIG`` / ``CFG#layout_version`` (``serverless_mlflow.storage.layout``; not recorded =
layout 1). Each step (``tools/migrate/steps``) moves a table from one version to the next; the runner applies
them in order from the recorded version to ``layout.CURRENT``, and records each step's target version when the
step has finished, on condition that the version is still the one it started from.

Steps are online and resumable:

* deploy the code first: it writes the new layout only, and reads both layouts until the version says the move
  is done (a reader that cached an older version reads both and finds the old items gone);
* a step records its progress in ``CONFIG`` / ``CFG#migrate#<step name>`` (``Context.checkpoint``) and starts
  again from there: kill it, run it again;
* ``--max-items`` stops after about that many items moved (``Paused``, exit code 3): a Lambda or a CI job with a
  time limit can run the migration in slices.

Adding a step: a module in ``tools/migrate/steps`` with ``NAME``, ``FROM``, ``TO`` and ``run(context)``, listed
in ``steps.STEPS``; bump ``layout.CURRENT`` to its ``TO``.

An operator's tool like ``tools.admin``: runs against ``TABLE_NAME`` at ``DYNAMODB_ENDPOINT_URL`` (unset = AWS).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "layers" / "shared" / "python"))

from serverless_mlflow.storage import layout, table  # noqa: E402
from serverless_mlflow.storage.schema import ENTITY  # noqa: E402

CONFIG = ENTITY["config"]
DEFAULT_WORKSPACES = ("default",)


class Paused(Exception):
    """The item budget ran out: progress is recorded, run again to continue."""


@dataclass
class Context:
    """What a step gets: its checkpoint, an item budget, the workspaces to cover and a progress log."""

    step: str
    workspaces: tuple[str, ...] = DEFAULT_WORKSPACES
    max_items: int | None = None
    log: Callable[[str], None] = print
    moved: int = 0
    started: float = field(default_factory=time.monotonic)

    @property
    def _key(self) -> dict[str, str]:
        return CONFIG.key(key=f"migrate#{self.step}")

    def checkpoint(self) -> dict[str, Any]:
        """The step's recorded progress ({} when it starts afresh)."""
        item = table.get(self._key)
        return dict(item["value"]) if item and isinstance(item.get("value"), dict) else {}

    def save(self, progress: dict[str, Any]) -> None:
        table.put(CONFIG.item({"value": progress, "updated_at": int(time.time() * 1000)}, key=f"migrate#{self.step}"))

    def clear(self) -> None:
        table.delete(self._key)

    def spend(self, items: int) -> None:
        """Count items moved; past the budget, stop at the caller's next safe point (raises ``Paused``)."""
        self.moved += items
        if self.max_items is not None and self.moved >= self.max_items:
            raise Paused(f"{self.step}: stopped after {self.moved} items (budget {self.max_items}); run again to continue")


class Step:
    """What a step module provides (the module itself is the step)."""

    NAME: str
    FROM: int
    TO: int

    def run(self, context: Context) -> None: ...


def all_steps() -> list[Any]:
    from tools.migrate.steps import STEPS

    return list(STEPS)


def plan(version: int, target: int = layout.CURRENT, available: Iterable[Any] | None = None) -> list[Any]:
    """The steps from ``version`` to ``target``, in order."""
    by_from = {step.FROM: step for step in (available if available is not None else all_steps())}
    out = []
    while version < target:
        step = by_from.get(version)
        if step is None:
            raise SystemExit(f"no migration step from layout {version} (this code writes layout {target})")
        out.append(step)
        version = step.TO
    return out


def run(workspaces: Iterable[str] = DEFAULT_WORKSPACES, max_items: int | None = None, log: Callable[[str], None] = print) -> int:
    """Apply every step the table still needs; returns the version reached. Raises ``Paused`` on the budget."""
    layout.forget()
    version = layout.version()
    budget = max_items
    for step in plan(version):
        context = Context(step.NAME, tuple(workspaces), budget, log)
        log(f"{step.NAME}: layout {step.FROM} -> {step.TO} (resuming at {context.checkpoint() or 'the start'})")
        step.run(context)
        layout.record(step.TO, expected=step.FROM)
        context.clear()
        log(f"{step.NAME}: done ({context.moved} items moved in {time.monotonic() - context.started:.0f} s); layout {step.TO}")
        version = step.TO
        if budget is not None:
            budget = max(1, budget - context.moved)
    run_named_steps(workspaces, log)
    return version


def run_named_steps(workspaces: Iterable[str], log: Callable[[str], None] = print) -> None:
    """The steps recorded by name (traces move per trace, not per version: ``tools/trace_migration.py``; the
    rollup levels are rebuilt per trace: ``tools/rollup_levels.py``)."""
    from tools import admin

    if layout.TRACES_V2 not in layout.steps_done():
        from tools import trace_migration

        started = time.monotonic()
        log(f"{layout.TRACES_V2}: trace infos and spans out of the experiment partitions")
        progress = trace_migration.run(admin.experiment_ids(tuple(workspaces)))
        log(
            f"{layout.TRACES_V2}: done ({progress.infos_moved} infos and {progress.spans_moved} spans moved in {time.monotonic() - started:.0f} s)"
        )
    if layout.TRACE_NAMES not in layout.steps_done():
        from tools import trace_names

        started = time.monotonic()
        log(f"{layout.TRACE_NAMES}: trace names listed per trace partition, trace-name postings and flags removed")
        names = trace_names.run(admin.experiment_ids(tuple(workspaces)))
        log(
            f"{layout.TRACE_NAMES}: done ({names.partitions} partitions, {names.names} names, "
            f"{names.postings_removed} postings and {names.flags_cleared} flags removed in {time.monotonic() - started:.0f} s)"
        )
    if pending_rollups := [name for name in layout.ROLLUP_STEPS if name not in layout.steps_done()]:
        from tools import rollup_levels

        started, names = time.monotonic(), ", ".join(pending_rollups)
        log(f"{names}: every trace's metric rollups at the coarse levels")
        traces = rollup_levels.run(admin.experiment_ids(tuple(workspaces)))
        log(f"{names}: done ({traces} traces re-aggregated in {time.monotonic() - started:.0f} s)")
    if layout.ISSUE_SCHEDULES not in layout.steps_done():
        from tools import issue_schedules

        started = time.monotonic()
        log(f"{layout.ISSUE_SCHEDULES}: every issue-detection schedule tag has the monitor's item")
        put = issue_schedules.run(admin.experiment_ids(tuple(workspaces)))
        log(f"{layout.ISSUE_SCHEDULES}: done ({put} schedules indexed in {time.monotonic() - started:.0f} s)")


def status() -> str:
    layout.forget()
    version = layout.version()
    pending = plan(version)
    lines = [f"layout {version} (this code writes {layout.CURRENT})"]
    for step in pending:
        progress = Context(step.NAME).checkpoint()
        lines.append(f"  pending: {step.NAME} ({step.FROM} -> {step.TO}); progress: {progress or 'not started'}")
    lines += [f"  pending: {name} (named step)" for name in layout.STEPS if name not in layout.steps_done()]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.migrate", description=__doc__.split("\n\n")[0])
    parser.add_argument("--workspace", action="append", dest="workspaces", help="workspace to migrate (repeatable; default: default)")
    parser.add_argument("--max-items", type=int, help="stop after about this many items moved (run again to continue)")
    parser.add_argument("--status", action="store_true", help="print the layout version and pending steps, change nothing")
    args = parser.parse_args(argv)
    if args.status:
        print(status())
        return 0
    try:
        version = run(args.workspaces or DEFAULT_WORKSPACES, args.max_items)
    except Paused as paused:
        print(paused)
        return 3
    print(f"layout {version}")
    return 0
