"""Run summaries: a run's item and every item of its ``R#<run>#`` range, copied into one derived item.

A search page needs each returned run whole (and a filter needs every candidate's values). Read from
the run's range that is one Query of about 10 items per run (5 params, 3 tags, the metrics digest, the run);
read from the summary it is one item, and a page's summaries come in one BatchGetItem. Summaries live in
their run's partition (``RUN#<run>`` / ``S``): they are read by key only, and a rebuild per run and indexer
batch stays out of the experiment partition.

The stream indexer rebuilds a run's summary from the run's range whenever it is told about a change of
one of the run's items. A reader trusts a summary only while none of the run's items carries the LSI5
"not indexed yet" flag and the run has no ``run_metrics_marker``: every write to a run's range flags the
item it writes (run, param, tag) or flags the run item in the same request (``flag_run``: a deleted tag,
inputs, outputs), every metric write marks the run (``metric_marks``), and the indexer clears a flag or a
marker only after rebuilding the summary from a read that saw the flagged version. The run's latest metrics
come into the range as the indexer's digest (``run_metrics``), written before the summary in the same pass.
Flagged or marked runs, runs without a summary (written before summaries existed, or before a migration
rebuilt them) and runs too large for one item are read from their range: always exact, a little dearer. A
flagged run with no summary yet whose run item still carries ``whole_on_lsi5`` (set by create_run, removed with
the run's flag by writes of items LSI5 does not list: inputs, outputs) has every item of its range on LSI5, which
a search read already: it is assembled from those (``whole_on_lsi5``, ``read``), and its latest metrics are read
from its partition.

Rebuilds are optimistic: a summary carries ``rev`` and is written as rev + 1 only if ``rev`` is still
what the rebuild read before it read the range, so a slow rebuild that read an older range can never
overwrite a newer summary. The run's pair index items (``pair_ranks``, when its experiment declares pairs)
are written in the same transaction as the summary, which lists them: they change together or not at all.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from serverless_mlflow.core import clock, parallel
from serverless_mlflow.index import metric_marks, pair_ranks
from serverless_mlflow.storage import table
from serverless_mlflow.storage.item_size import MAX_ITEM_BYTES, item_bytes
from serverless_mlflow.storage.schema import COLLECTIONS, ENTITY, ENTITY_TYPE, PK, SK
from serverless_mlflow.store import runs as store
from serverless_mlflow.store.runs import RunView

RUN_SUMMARY = ENTITY["run_summary"]
FLAG_ATTRIBUTE = COLLECTIONS["unindexed"].sk_attr
WHOLE_ATTRIBUTE = "whole_on_lsi5"
# Room below DynamoDB's 400 KB for the summary's own keys and attributes.
MAX_SUMMARY_BYTES = MAX_ITEM_BYTES - 4 * 1024
# Every item of a run's range the summary copies: the run item and its data items (latest_metric: layout 1's,
# in the range until migrated).
SUMMARISED_TYPES = frozenset(
    {"run", "latest_metric", "run_metrics_digest", "param", "run_tag", "run_input", "run_input_part", "run_model_input", "run_output"}
)
_REBUILD_ATTEMPTS = 8
_READ_WORKERS = 16

Runs = Iterable[tuple[str, str]]  # (experiment id, run id)


def key(experiment_id: str, run_id: str) -> dict[str, str]:
    return RUN_SUMMARY.key(experiment_id=experiment_id, run_id=run_id)


def run_of(item: dict[str, Any]) -> tuple[str, str] | None:
    """(experiment id, run id) whose summary an item feeds: an item of a run's range, its marker, or one of its
    latest metric values in its partition (None for any other item)."""
    kind = item.get(ENTITY_TYPE)
    if kind == store.LATEST_METRIC.type_name and "run_id" in item and "experiment_id" in item:
        return str(item["experiment_id"]), item["run_id"]
    if kind not in SUMMARISED_TYPES and kind != metric_marks.MARKER.type_name:
        return None
    return store.RUN.parse_pk(item[PK])["experiment_id"], store.run_id_of_sk(item[SK])


# --- building (the indexer) ------------------------------------------------------------------------------


def content(range_items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """What a summary holds: the range's items without their flags and the run's marker (a summary is read only
    when none is set)."""
    return [
        {name: value for name, value in item.items() if name != FLAG_ATTRIBUTE}
        for item in range_items
        if item.get(ENTITY_TYPE) != metric_marks.MARKER.type_name
    ]


def summary_item(
    experiment_id: str, run_id: str, range_items: list[dict[str, Any]], rev: int, pair_items: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    """The summary of a run from its range (``oversize``, holding nothing, when the copy would not fit one item).

    ``pair_items``: the run's pair index items (``pair_ranks``), which the summary lists."""
    attributes: dict[str, Any] = {"run_id": run_id, "experiment_id": experiment_id, "rev": rev}
    if pair_items:
        attributes["pair_entries"] = pair_ranks.listing(pair_items)
    item = RUN_SUMMARY.item({**attributes, "items": content(range_items)}, experiment_id=experiment_id, run_id=run_id)
    if item_bytes(table.to_item(item)) > MAX_SUMMARY_BYTES:
        item = RUN_SUMMARY.item({**attributes, "oversize": True}, experiment_id=experiment_id, run_id=run_id)
    return item


def same_content(old: dict[str, Any] | None, new: dict[str, Any]) -> bool:
    if old is None:
        return False
    return (
        old.get("items") == new.get("items")
        and bool(old.get("oversize")) == bool(new.get("oversize"))
        and (old.get("pair_entries") or []) == (new.get("pair_entries") or [])
    )


def rebuild(experiment_id: str, run_id: str, read: dict[tuple[str, str], dict[str, Any] | None] | None = None) -> bool:
    """Bring a run's summary (and its pair index items) up to date with its range (removed with the run);
    True if it was written.

    ``read``: the summary and the experiment's pair declaration as the caller read them (strongly consistent,
    the summary no later than the declaration, both before this call: the indexer's one BatchGetItem per
    batch), used by the first attempt instead of reading them again.

    Raises after repeated conflicting rebuilds: the stream record is then retried (nothing is cleared)."""
    summary_key = key(experiment_id, run_id)
    declaration_key = pair_ranks.declaration_key(experiment_id)
    wanted = [(k[PK], k[SK]) for k in (summary_key, declaration_key)]
    given = {k: read[k] for k in wanted if k in read} if read is not None else {}
    for attempt in range(_REBUILD_ATTEMPTS):
        # The declared pairs with the summary, in one strongly consistent read: a rebuild that read an older
        # declaration writes on condition of the rev it read, which a backfill's own rebuild has moved on. (A
        # summary read before the declaration is as good: a backfill between them moved the rev on, too.)
        if attempt == 0 and len(given) == len(wanted):
            found = {k: item for k, item in given.items() if item is not None}
        else:
            found = {(item[PK], item[SK]): item for item in table.batch_get([summary_key, declaration_key])}
        old = found.get((summary_key[PK], summary_key[SK]))
        pairs = pair_ranks.pairs_of(found.get((declaration_key[PK], declaration_key[SK])))
        range_items = store.run_range(experiment_id, run_id)
        rev = int(old["rev"]) if old else 0
        condition, names, values = (
            ("attribute_not_exists(pk)", None, None) if old is None else ("#rev = :rev", {"#rev": "rev"}, {":rev": rev})
        )
        old_pairs = (old or {}).get("pair_entries") or []
        try:
            if not any(item.get(ENTITY_TYPE) == "run" for item in range_items):
                if old is None:
                    return False
                _, deletes = pair_ranks.changes(experiment_id, old_pairs, [])
                table.transact([table.delete_op(summary_key, condition, names, values), *map(table.delete_op, deletes)])
                return True
            views = store.assemble_runs(range_items)
            pair_items = pair_ranks.entries(experiment_id, run_id, views[0] if views else None, pairs)
            new = summary_item(experiment_id, run_id, range_items, rev + 1, pair_items)
            if same_content(old, new):
                return False
            puts, deletes = pair_ranks.changes(experiment_id, old_pairs, pair_items)
            if not puts and not deletes:
                table.put(new, condition, names, values)
            else:
                # The pair items change with the summary that lists them, or not at all.
                ops = [table.put_op(new, condition, names, values), *map(table.put_op, puts), *map(table.delete_op, deletes)]
                table.transact(ops)
            return True
        except table.ConditionFailed:
            continue  # another rebuild wrote first: read both again
    raise RuntimeError(f"run summary {experiment_id}/{run_id} kept changing while it was rebuilt")


# --- writers -------------------------------------------------------------------------------------------


def _flag_update(run: dict[str, Any]) -> tuple[dict[str, str], str, dict[str, str], dict[str, Any]]:
    # The write leaves an item LSI5 does not list (or none): the run's LSI5 items no longer make it whole.
    expression, names, values = store.run_update(run, {"last_update_time": clock.now_millis()}, remove=(WHOLE_ATTRIBUTE,))
    return store.RUN.key(experiment_id=run["experiment_id"], run_id=run["run_id"]), expression, names, values


def flag_run_op(run: dict[str, Any]) -> dict[str, Any]:
    """The run item's LSI5 flag, as a transaction operation: the run's summary is stale until indexed.

    For writes that leave no flagged item of their own (a deleted tag, inputs, outputs)."""
    return table.update_op(*_flag_update(run), condition="attribute_exists(pk)")


def flag_run(run: dict[str, Any]) -> None:
    """``flag_run_op`` on its own, after writes that cannot share a transaction with it (batches)."""
    table.update(*_flag_update(run), condition="attribute_exists(pk)")


# --- reading -------------------------------------------------------------------------------------------


def flagged_runs(unindexed: Iterable[dict[str, Any]]) -> set[str]:
    """Run ids whose summary may miss a change: those with a flagged item or a metrics marker (``unindexed``:
    an experiment's LSI5 items)."""
    items = list(unindexed)
    flagged = {store.run_id_of_sk(item[SK]) for item in items if item.get(ENTITY_TYPE) in SUMMARISED_TYPES}
    return flagged | metric_marks.marked_runs(items)


def whole_on_lsi5(unindexed: Iterable[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Run id -> its items among an experiment's LSI5 items (in key order), for the runs whose every copy of the run
    item read there still carries ``whole_on_lsi5``: while the run has no summary, these items are its range (but
    its metrics digest, which ``read`` never takes from here).

    An item may have been read twice (its flag moved on while the LSI5 Query ran): the newest copy is kept."""
    newest: dict[tuple[str, str], dict[str, Any]] = {}
    broken: set[str] = set()
    for item in unindexed:
        if item.get(ENTITY_TYPE) not in SUMMARISED_TYPES and item.get(ENTITY_TYPE) != metric_marks.MARKER.type_name:
            continue
        run_id = store.run_id_of_sk(item[SK])
        if item.get(ENTITY_TYPE) == "run" and not item.get(WHOLE_ATTRIBUTE):
            broken.add(run_id)
        seen = newest.get((item[PK], item[SK]))
        if seen is None or str(item.get(FLAG_ATTRIBUTE, "")) >= str(seen.get(FLAG_ATTRIBUTE, "")):
            newest[(item[PK], item[SK])] = item
    runs: dict[str, list[dict[str, Any]]] = {}
    for (_, _), item in sorted(newest.items(), key=lambda pair: pair[0][1]):
        runs.setdefault(store.run_id_of_sk(item[SK]), []).append(item)
    return {run_id: items for run_id, items in runs.items() if run_id not in broken and items[0].get(ENTITY_TYPE) == "run"}


def read(
    runs: Runs,
    flagged: set[str],
    whole: dict[str, list[dict[str, Any]]] | None = None,
    known_latest: dict[str, dict[str, dict[str, Any] | None]] | None = None,
) -> dict[str, RunView]:
    """Runs with their data, by run id: from the summary of each unflagged run, else from the run's range.

    ``whole`` (``whole_on_lsi5`` of the LSI5 items that named ``flagged``, read before this call): a flagged run
    there that has no summary yet is assembled from those items instead of read again: the indexer writes a run's
    summary before it clears any flag of the run (and ``tools/admin`` too), so with no summary now, none was
    cleared while the LSI5 Query ran, and the run's inputs and outputs, which LSI5 does not list, would have
    removed ``whole_on_lsi5``. Its latest metrics come from its partition, as a marked run's do, but those the
    caller read already (``known_latest``: run id -> metric key -> item, None if lacking, ``complete_metrics``).

    Runs that no longer exist are left out."""
    wanted = list(dict.fromkeys(runs))
    whole = whole or {}
    trusted = [(e, r) for e, r in wanted if r not in flagged]
    assemblable = [(e, r) for e, r in wanted if r in flagged and r in whole]
    views: dict[str, RunView] = {}
    summarised: set[str] = set()
    checked = trusted + assemblable
    for summary in table.batch_get([key(e, r) for e, r in checked]) if checked else []:
        summarised.add(summary["run_id"])
        if summary["run_id"] in flagged:
            continue
        if not summary.get("oversize") and summary.get("items"):
            for view in store.assemble_runs(summary["items"]):
                views[view.run_id] = view
    assembled = []
    for _, run_id in assemblable:
        if run_id not in summarised:
            for view in store.assemble_runs(whole[run_id]):
                view.marked = True  # LSI5 never lists the digest: the run's partition holds its latest metrics
                assembled.append(view)
    for view in store.complete_metrics(assembled, known_latest):
        views[view.run_id] = view
    rest = [(e, r) for e, r in wanted if r not in views]
    for view in parallel.parallel_map(lambda run: store.read_run_in(*run), rest, workers=_READ_WORKERS):
        if view is not None:
            views[view.run_id] = view
    return views
