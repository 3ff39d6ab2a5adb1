"""Admin: verify or rebuild the derived items (RANK, FTS, run summaries, pair indexes) from the source items.

    python -m tools.admin verify  [--workspace default ...] [--json]
    python -m tools.admin reindex [--workspace default ...]

An operator's tool, run from a checkout (no Lambda runs it): it lives outside the deployed layer and
imports the layer's code from ``layers/shared/python``.

Runs against ``TABLE_NAME`` at ``DYNAMODB_ENDPOINT_URL`` (unset = AWS). Every derived item lives in
the partition of the source item it comes from (model-name postings: ``RMFTS#<ws>``), so every
partition is read with Queries only (no Scan): the workspace collections (``EXPLIST#<ws>``:
experiment names; ``RMLIST#<ws>``: registered model names; ``RMFTS#<ws>``) and every experiment
partition, enumerated from the consistent ``EXPLIST#<ws>`` collection plus the ``gsi2`` listing, with the
trace partitions each experiment's directory lists.

``verify`` exits 1 when a derived item is missing, unexpected or different. Source items still
flagged "not yet indexed" are reported as ``pending`` (normal while the indexer catches up).
``reindex`` writes the missing/different items, deletes the unexpected ones and clears the flags
of what it indexed. Run it when the indexer is quiet; a concurrent write is picked up again by its
own stream record.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "layers" / "shared" / "python"))

from serverless_mlflow import fts, pair_ranks, run_summaries, table
from serverless_mlflow.derived import DERIVED_TYPES, FLAG_ATTRIBUTE, FLAGGED_TYPES, derive, is_source
from serverless_mlflow.schema import ENTITY, ENTITY_TYPE, PK, SK
from serverless_mlflow.store import trace_partitions

Item = dict[str, Any]
Key = tuple[str, str]
DEFAULT_WORKSPACES = ("default",)


@dataclass
class PartitionReport:
    pk: str
    missing: list[Item] = field(default_factory=list)
    unexpected: list[Item] = field(default_factory=list)
    changed: list[Item] = field(default_factory=list)
    pending: list[Item] = field(default_factory=list)

    @property
    def differences(self) -> int:
        return len(self.missing) + len(self.unexpected) + len(self.changed)


@dataclass
class Report:
    partitions: list[PartitionReport] = field(default_factory=list)

    @property
    def differences(self) -> int:
        return sum(p.differences for p in self.partitions)

    @property
    def pending(self) -> int:
        return sum(len(p.pending) for p in self.partitions)

    def summary(self, examples: int = 5) -> dict[str, Any]:
        def keys(items: list[Item]) -> list[str]:
            return [f"{item[PK]} | {item[SK]!r}" for item in items[:examples]]

        return {
            "partitions": len(self.partitions),
            "differences": self.differences,
            "missing": sum(len(p.missing) for p in self.partitions),
            "unexpected": sum(len(p.unexpected) for p in self.partitions),
            "changed": sum(len(p.changed) for p in self.partitions),
            "pending": self.pending,
            "examples": {
                p.pk: {"missing": keys(p.missing), "unexpected": keys(p.unexpected), "changed": keys(p.changed)}
                for p in self.partitions
                if p.differences
            },
        }


def partitions(workspaces: Iterable[str] = DEFAULT_WORKSPACES) -> list[str]:
    """Every partition that can hold source or derived items, without a Scan."""
    out: list[str] = []
    for workspace in workspaces:
        out += [fts.experiments_scope(workspace), fts.registered_models_collection(workspace), fts.registered_models_scope(workspace)]
        experiment_ids = {
            item["experiment_id"]
            for item in table.iter_query(**ENTITY["experiment_entry"].query("collection", workspace=workspace))
            if item.get(ENTITY_TYPE) == "experiment_entry"
        }
        # The gsi2 listing also covers experiments written before the consistent collection existed.
        experiment_ids |= {
            item["experiment_id"]
            for item in table.iter_query(**ENTITY["experiment"].query("in_workspace", workspace=workspace))
            if "experiment_id" in item
        }
        for experiment_id in sorted(experiment_ids, key=_numeric):
            out.append(ENTITY["experiment"].pk.render({"experiment_id": experiment_id}))
            # Trace infos (and their name postings) live in the experiment's trace partitions (its directory).
            out += [partition.pk for partition in trace_partitions.partitions(experiment_id, descending=False)]
    return list(dict.fromkeys(out))


def _numeric(value: str) -> tuple[int, str]:
    return (int(value), value) if value.isdigit() else (sys.maxsize, value)


def check_partitions(pks: list[str]) -> list[PartitionReport]:
    """Recompute the derived items of every source item in ``pks`` and compare with the stored ones.

    Derived items usually live in their source's partition; model-name postings live in RMFTS#<ws>
    (also in ``pks``), so expectations are gathered across all partitions before comparing.
    """
    expected: dict[str, dict[Key, Item]] = {pk: {} for pk in pks}
    actual: dict[str, dict[Key, Item]] = {pk: {} for pk in pks}
    reports = {pk: PartitionReport(pk) for pk in pks}
    for pk in pks:
        # Each run's range, in key order as the indexer reads it: its summary is compared below.
        ranges: dict[tuple[str, str], list[Item]] = {}
        pairs: list[pair_ranks.Pair] = []
        for item in table.iter_query(pk):
            if item.get(ENTITY_TYPE) == "pair_index":
                pairs = pair_ranks.pairs_of(item)
            if item.get(ENTITY_TYPE) in DERIVED_TYPES:
                actual[pk][(item[PK], item[SK])] = item
            elif is_source(item):
                for key, derived in derive(item).items():
                    expected.setdefault(key[0], {})[key] = derived
                if item[ENTITY_TYPE] in FLAGGED_TYPES and FLAG_ATTRIBUTE in item:
                    reports[pk].pending.append(item)
                run = run_summaries.run_of(item)
                if run is not None:
                    ranges.setdefault(run, []).append(item)
        for (experiment_id, run_id), items in ranges.items():
            if any(item[ENTITY_TYPE] == "run" for item in items):
                pair_items = pair_ranks.entries(experiment_id, run_id, items, pairs)
                summary = _expected_summary(experiment_id, run_id, items, pair_items, actual[pk])
                for derived in (summary, *pair_items):
                    expected.setdefault(pk, {})[(derived[PK], derived[SK])] = derived
    for pk, report in reports.items():
        want, have = expected.get(pk, {}), actual[pk]
        report.missing = [want[k] for k in want.keys() - have.keys()]
        report.unexpected = [have[k] for k in have.keys() - want.keys()]
        report.changed = [want[k] for k in want.keys() & have.keys() if want[k] != have[k]]
    return list(reports.values())


def _expected_summary(experiment_id: str, run_id: str, items: list[Item], pair_items: list[Item], actual: dict[Key, Item]) -> Item:
    """The summary the indexer would write; its revision is the stored one when the content agrees."""
    key = run_summaries.key(experiment_id, run_id)
    stored = actual.get((key[PK], key[SK]))
    rev = int(stored["rev"]) if stored else 0
    summary = run_summaries.summary_item(experiment_id, run_id, items, rev, pair_items)
    if not run_summaries.same_content(stored, summary):
        summary["rev"] = rev + 1
    return summary


def verify(workspaces: Iterable[str] = DEFAULT_WORKSPACES) -> Report:
    return Report(check_partitions(partitions(workspaces)))


def reindex(workspaces: Iterable[str] = DEFAULT_WORKSPACES) -> Report:
    """Repair every difference; returns the report of what was found before repairing."""
    report = verify(workspaces)
    for partition in report.partitions:
        if partition.differences:
            table.batch_write(
                puts=partition.missing + partition.changed,
                deletes=[{PK: item[PK], SK: item[SK]} for item in partition.unexpected],
            )
        for item in partition.pending:
            try:
                table.update(
                    {PK: item[PK], SK: item[SK]}, "REMOVE #f", names={"#f": FLAG_ATTRIBUTE},
                    values={":f": item[FLAG_ATTRIBUTE]}, condition="#f = :f",
                )
            except table.ConditionFailed:
                pass  # written again since: its stream record will index it
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.admin", description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=("verify", "reindex"))
    parser.add_argument("--workspace", action="append", dest="workspaces", help="workspace to check (repeatable; default: default)")
    parser.add_argument("--json", action="store_true", help="print the full report as JSON")
    args = parser.parse_args(argv)
    workspaces = args.workspaces or list(DEFAULT_WORKSPACES)
    report = verify(workspaces) if args.command == "verify" else reindex(workspaces)
    summary = report.summary()
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        print(
            f"{args.command}: {summary['partitions']} partitions, {summary['differences']} differences "
            f"({summary['missing']} missing, {summary['unexpected']} unexpected, {summary['changed']} changed), "
            f"{summary['pending']} pending"
        )
        for pk, diff in summary["examples"].items():
            print(f"  {pk}: {diff}")
    if args.command == "verify" and report.differences:
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
