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

from serverless_mlflow.core import parallel
from serverless_mlflow.index import derived, fts, metric_marks, pair_ranks, rank_items, run_summaries, trace_aggregates
from serverless_mlflow.index.derived import DERIVED_TYPES, FLAG_ATTRIBUTE, FLAGGED_TYPES, derive, is_layout1_trace, is_source
from serverless_mlflow.storage import table
from serverless_mlflow.storage.schema import COLLECTIONS, ENTITY, ENTITY_TYPE, PK, SK
from serverless_mlflow.store import run_metrics, trace_names, trace_partitions
from serverless_mlflow.store import runs as store

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


def experiment_ids(workspaces: Iterable[str] = DEFAULT_WORKSPACES) -> list[str]:
    """Every experiment of the workspaces, in id order, without a Scan: the consistent ``EXPLIST#<ws>`` collection
    plus the ``gsi2`` listing (experiments written before the consistent collection existed)."""
    found: set[str] = set()
    for workspace in workspaces:
        found |= {
            item["experiment_id"]
            for item in table.iter_query(**ENTITY["experiment_entry"].query("collection", workspace=workspace))
            if item.get(ENTITY_TYPE) == "experiment_entry"
        }
        found |= {
            item["experiment_id"]
            for item in table.iter_query(**ENTITY["experiment"].query("in_workspace", workspace=workspace))
            if "experiment_id" in item
        }
    return sorted(found, key=experiment_order)


def experiment_order(experiment_id: str) -> tuple[int, str]:
    return (int(experiment_id), experiment_id) if experiment_id.isdigit() else (sys.maxsize, experiment_id)


def partitions(workspaces: Iterable[str] = DEFAULT_WORKSPACES) -> list[str]:
    """Every partition that can hold source items or derived items beside them, without a Scan (an experiment's
    metric-derived partitions are found from its own, ``check_partitions``)."""
    out: list[str] = []
    for workspace in workspaces:
        out += [fts.experiments_scope(workspace), fts.registered_models_collection(workspace), fts.registered_models_scope(workspace)]
    for experiment_id in experiment_ids(workspaces):
        out.append(ENTITY["experiment"].pk.render({"experiment_id": experiment_id}))
        # Trace infos (and their name postings) live in the experiment's trace partitions (its directory).
        out += [partition.pk for partition in trace_partitions.partitions(experiment_id, descending=False)]
    return list(dict.fromkeys(out))


def check_partitions(pks: list[str]) -> list[PartitionReport]:
    """Recompute the derived items of every source item in ``pks`` and compare with the stored ones.

    Derived items usually live in their source's partition; model-name postings live in RMFTS#<ws> (also in
    ``pks``), and an experiment's metric-derived items in partitions of their own (layout 2): its runs'
    ``RUN#<run>`` partitions (latest values: sources; summaries), the RANK partition of each metric key it has
    registered (``MK#``) or that a latest value names, and each declared pair's partition. Those are read per
    experiment and reported as partitions of their own.
    """
    expected: dict[str, dict[Key, Item]] = {pk: {} for pk in pks}
    actual: dict[str, dict[Key, Item]] = {pk: {} for pk in pks}
    reports = {pk: PartitionReport(pk) for pk in pks}

    def add_actual(item: Item) -> None:
        actual.setdefault(item[PK], {})[(item[PK], item[SK])] = item

    def add_expected(item: Item) -> None:
        expected.setdefault(item[PK], {})[(item[PK], item[SK])] = item

    def note_source(item: Item, report: PartitionReport) -> None:
        for derived in derive(item).values():
            add_expected(derived)
        if item[ENTITY_TYPE] in FLAGGED_TYPES and FLAG_ATTRIBUTE in item:
            report.pending.append(item)

    for pk in pks:
        # Each run's range, in key order as the indexer reads it: its summary is compared below.
        ranges: dict[tuple[str, str], list[Item]] = {}
        pairs: list[pair_ranks.Pair] = []
        metric_keys: set[str] = set()
        run_ids: set[str] = set()
        for item in table.iter_query(pk):
            kind = item.get(ENTITY_TYPE)
            if kind == "pair_index":
                pairs = pair_ranks.pairs_of(item)
            elif kind == "metric_key":
                metric_keys.add(item["key"])
            elif kind == metric_marks.MARKER.type_name:
                reports[pk].pending.append(item)
            if kind in DERIVED_TYPES:
                add_actual(item)
                if "run_id" in item:
                    run_ids.add(item["run_id"])  # a stale RANK item names a run that may be gone
            elif is_source(item):
                note_source(item, reports[pk])
            if kind == trace_names.ENTRY.name:
                add_actual(item)
            if kind == "trace" and item.get("trace_name") is not None and not is_layout1_trace(item):
                add_expected(trace_names.entry_of(item))  # name search reads the partition's names (store.trace_names)
            if kind == "trace":
                # A trace's content signature is a function of its info and spans (trace_aggregates), kept beside it.
                signature, pending = trace_aggregates.expected_signature(item["trace_id"])
                if signature is not None:
                    add_expected(signature)
                elif pending:
                    reports[pk].pending.append(item)
            run = run_summaries.run_of(item)
            if run is not None:
                ranges.setdefault(run, []).append(item)
        experiment_id = _experiment_of(pk)
        if experiment_id is None:
            continue
        run_ids |= {run_id for _, run_id in ranges}
        latest_by_run = _run_partitions(experiment_id, sorted(run_ids), add_actual)
        for run_id, latest in latest_by_run.items():
            for item in latest:
                note_source(item, reports[pk])
                metric_keys.add(item["key"])
            items = ranges.get((experiment_id, run_id), [])
            if latest:
                add_expected(run_metrics.digest_item(experiment_id, run_id, latest))
            if any(item[ENTITY_TYPE] == "run" for item in items):
                # The range as the indexer reads it after its metric pass: the digest of the latest values in place.
                digest = run_metrics.DIGEST.key(experiment_id=experiment_id, run_id=run_id)
                indexed = [i for i in items if (i[PK], i[SK]) != (digest[PK], digest[SK])]
                if latest:
                    indexed = sorted([*indexed, run_metrics.digest_item(experiment_id, run_id, latest)], key=lambda i: i[SK])
                views = store.assemble_runs(indexed)
                pair_items = pair_ranks.entries(experiment_id, run_id, views[0] if views else None, pairs)
                summary = _expected_summary(experiment_id, run_id, indexed, pair_items, actual)
                for derived in (summary, *pair_items):
                    add_expected(derived)
        for key in sorted(metric_keys):
            for item in table.iter_query(**rank_items.METRIC_RANK.query("by_value", experiment_id=experiment_id, key=key)):
                add_actual(item)
        for pair in pairs:
            for item in table.iter_query(pair_ranks.PAIR_RANK.pk.render({"experiment_id": experiment_id, "pair_id": pair.pair_id})):
                add_actual(item)
    out = list(reports.values())
    for pk in sorted((expected.keys() | actual.keys()) - reports.keys()):
        out.append(PartitionReport(pk))
    for report in out:
        want, have = expected.get(report.pk, {}), actual.get(report.pk, {})
        report.missing = [want[k] for k in want.keys() - have.keys()]
        # A name entry outlives its traces (a writer may be about to name a trace with it): only a missing one counts.
        report.unexpected = [have[k] for k in have.keys() - want.keys() if have[k].get(ENTITY_TYPE) != trace_names.ENTRY.name]
        report.changed = [
            want[k] for k in want.keys() & have.keys() if want[k] != have[k] and want[k][ENTITY_TYPE] != trace_names.ENTRY.name
        ]
    return out


def _experiment_of(pk: str) -> str | None:
    try:
        return str(ENTITY["experiment"].parse_pk(pk)["experiment_id"])
    except ValueError:
        return None


def _run_partitions(experiment_id: str, run_ids: list[str], add_actual: Any) -> dict[str, list[Item]]:
    """Run id -> its latest values (layout 2), from one Query of each run's partition; its summary is noted as actual."""
    out: dict[str, list[Item]] = {}
    for run_id, items in zip(run_ids, parallel.parallel_map(_run_partition, run_ids, workers=16), strict=True):
        out[run_id] = []
        for item in items:
            kind = item.get(ENTITY_TYPE)
            if kind == run_metrics.LATEST.type_name and str(item.get("experiment_id")) == experiment_id:
                out[run_id].append(item)
            elif kind in DERIVED_TYPES:
                add_actual(item)
    return out


def _run_partition(run_id: str) -> list[Item]:
    return list(table.iter_query(run_summaries.RUN_SUMMARY.pk.render({"run_id": run_id})))


def _expected_summary(
    experiment_id: str, run_id: str, items: list[Item], pair_items: list[Item], actual: dict[str, dict[Key, Item]]
) -> Item:
    """The summary the indexer would write; its revision is the stored one when the content agrees."""
    key = run_summaries.key(experiment_id, run_id)
    stored = actual.get(key[PK], {}).get((key[PK], key[SK]))
    rev = int(stored["rev"]) if stored else 0
    summary = run_summaries.summary_item(experiment_id, run_id, items, rev, pair_items)
    if not run_summaries.same_content(stored, summary):
        summary["rev"] = rev + 1
    return summary


def verify(workspaces: Iterable[str] = DEFAULT_WORKSPACES) -> Report:
    return Report(check_partitions(partitions(workspaces)))


def reindex(workspaces: Iterable[str] = DEFAULT_WORKSPACES) -> Report:
    """Repair every difference; returns the report of what was found before repairing.

    A run marked for the indexer (``metric_marks``) is unmarked only after everything it vouches for is repaired
    from reads made after its pass began (the indexer's protocol), so a concurrent metric write keeps its mark."""
    pks = partitions(workspaces)
    marked = [(item[PK], item["run_id"]) for pk in pks for item in _unindexed(pk) if item.get(ENTITY_TYPE) == metric_marks.MARKER.type_name]
    epochs = {run: metric_marks.begin(run[1]) for run in marked}
    report = Report(check_partitions(pks))
    for partition in report.partitions:
        if partition.differences:
            table.batch_write(
                puts=partition.missing + partition.changed,
                deletes=[{PK: item[PK], SK: item[SK]} for item in partition.unexpected],
            )
        for item in partition.pending:
            if FLAG_ATTRIBUTE not in item:
                continue  # a marker: retired below
            derived.remove_flag(item)  # False: written again since, its stream record will index it
    for (pk, run_id), epoch in epochs.items():
        experiment_id = _experiment_of(pk)
        if experiment_id is not None:
            metric_marks.retire(experiment_id, run_id, epoch)
    return report


def _unindexed(pk: str) -> list[Item]:
    return list(table.iter_query(**COLLECTIONS["unindexed"].query(scope=pk))) if _experiment_of(pk) is not None else []


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.admin", description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=("verify", "reindex", "migrate"))
    parser.add_argument("--workspace", action="append", dest="workspaces", help="workspace to check (repeatable; default: default)")
    parser.add_argument("--json", action="store_true", help="print the full report as JSON")
    parser.add_argument("--max-items", type=int, help="migrate: stop after about this many items moved (run again to continue)")
    args = parser.parse_args(argv)
    workspaces = args.workspaces or list(DEFAULT_WORKSPACES)
    if args.command == "migrate":
        from tools import migrate

        return migrate.main([*(f"--workspace={w}" for w in workspaces), *([f"--max-items={args.max_items}"] if args.max_items else [])])
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
