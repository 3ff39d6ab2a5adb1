"""RANK items read in value order: each run's latest metric value, per experiment, and the walk every rank
reader shares (growing pages, the sources not indexed yet, groups of equal value, runs in MLflow's order).

The items (``rank_items``: ``<f64 value>#<run_id>`` in ``MRANK#<experiment>#<key>``) are maintained by the stream
indexer. Readers walk them in key order and
yield *groups* of runs with an equal value in MLflow's order (``order_by metrics.k`` puts NaN after
every number in both directions; runs lacking the key come last and are not yielded here). Ties
inside a group are MLflow's ``start_time DESC, run_uuid``: ``order_runs`` does that with the run
items the caller loads anyway (to filter lifecycle stage). Params are read in ``param_ranks``.

The index may lag: a param item whose LSI5 flag is still set (not indexed yet), or a run carrying a
``run_metrics_marker`` (its latest metrics changed since the indexer's last pass), is read from the source
instead, and its possibly stale RANK item is skipped.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from serverless_mlflow.index import metric_marks
from serverless_mlflow.index.rank_items import METRIC_RANK, metric_value, rank_value, run_id_of
from serverless_mlflow.storage import keys, table
from serverless_mlflow.storage.schema import COLLECTIONS, ENTITY, ENTITY_TYPE
from serverless_mlflow.store import run_metrics

_NAN_KEY = keys.float64(math.nan)
_PAGE_SIZES = (16, 64, 256, 1000)


# Run id -> metric key -> its latest item as a request read it (None: the run lacks it), shared by its reads.
Seen = dict[str, dict[str, dict[str, Any] | None]]


def marked_latest(experiment_id: str, key: str, unindexed: list[dict[str, Any]], seen: Seen | None = None) -> dict[str, dict[str, Any]]:
    """Run id -> the current latest value of metric ``key`` of each marked run (``metric_marks``) that has one: one
    BatchGetItem of their ``RUN#<run>`` items (none when no run is marked). ``seen``: what the request read already
    (not read again), and where this read is kept."""
    seen = {} if seen is None else seen
    runs = sorted(metric_marks.marked_runs(unindexed))
    unread = [run_id for run_id in runs if key not in seen.get(run_id, {})]
    for run_id in unread:
        seen.setdefault(run_id, {})[key] = None
    for item in table.batch_get([run_metrics.LATEST.key(run_id=run_id, key=key) for run_id in unread]) if unread else []:
        seen[item["run_id"]][key] = item
    found = (seen[run_id][key] for run_id in runs)
    return {item["run_id"]: item for item in found if item is not None and str(item.get("experiment_id")) == experiment_id}


@dataclass(frozen=True)
class Ranked:
    run_id: str
    experiment_id: str
    value: Any  # float for metrics (NaN kept; None in a pair range for a run lacking the metric), str for params


def _pages(pk: str, first_page: int | None = None, next_page: Callable[[], int] | None = None, **kwargs: Any) -> Iterator[dict[str, Any]]:
    """Items of one key range, in growing pages: a top-10 reads a few dozen items, a full walk stays cheap.

    ``first_page`` sizes the first read for the page the caller wants (e.g. max_results + 2); ``next_page``,
    if given, sizes each later read (the caller knows how many more items it is likely to use)."""
    start: dict[str, Any] | None = None
    sizes = _iter_sizes(first_page) if next_page is None else _caller_sizes(first_page, next_page)
    for size in sizes:
        last: dict[str, Any] | None = None
        for items, page_last in table.query_pages(pk, limit=size, start_key=start, **kwargs):
            last = page_last
            yield from items
        if not last:
            return
        start = last


def _caller_sizes(first_page: int | None, next_page: Callable[[], int]) -> Iterator[int]:
    if first_page is not None:
        yield max(1, min(first_page, _PAGE_SIZES[-1]))
    while True:
        yield max(1, min(next_page(), _PAGE_SIZES[-1]))


def _iter_sizes(first_page: int | None = None) -> Iterator[int]:
    if first_page is not None:
        yield max(1, min(first_page, _PAGE_SIZES[-1]))
    yield from _PAGE_SIZES
    while True:
        yield _PAGE_SIZES[-1]


# The experiment's LSI5 items (a caller that read them already shares them: one Query per request).
Unindexed = Callable[[str], list[dict[str, Any]]]


def _read_unindexed(experiment_id: str) -> list[dict[str, Any]]:
    pk = ENTITY["run"].pk.render({"experiment_id": experiment_id})
    return list(table.iter_query(**COLLECTIONS["unindexed"].query(scope=pk)))


def flagged_sources(experiment_id: str, entity_type: str, key: str, unindexed: Unindexed | None = None) -> dict[str, dict[str, Any]]:
    """Sources of this key not indexed yet (LSI5 flag set), by run id: their RANK item may be stale."""
    return {
        run_id_of(item): item
        for item in (unindexed or _read_unindexed)(experiment_id)
        if item.get(ENTITY_TYPE) == entity_type and item.get("key") == key
    }


def stale_metric_runs(
    experiment_id: str, key: str, unindexed: Unindexed | None = None, seen: Seen | None = None
) -> tuple[frozenset[str], dict[str, dict[str, Any]]]:
    """(runs whose RANK item of metric ``key`` may be stale, the current latest value of those that have one)."""
    items = (unindexed or _read_unindexed)(experiment_id)
    marked = marked_latest(experiment_id, key, items, seen)
    return frozenset(metric_marks.marked_runs(items)), marked


def metric_sort_key(value: float | None, ascending: bool) -> tuple[int, float]:
    """Where a run with this latest value (None: lacking the metric) sorts in MLflow's order of the metric."""
    if value is None:
        return (2, 0.0)
    if math.isnan(value):
        return (1, 0.0)
    ranked = rank_value(value)
    return (0, ranked if ascending else -ranked)


# A value-ordered range's key for runs lacking the metric (pair_rank): after every f64 key and NaN.
MISSING_KEY = "~"

Stream = Iterator[tuple[tuple[int, float], Ranked]]


@dataclass(frozen=True)
class ValueRange:
    """One experiment's items ordered by a metric value under ``prefix`` in partition ``pk`` (a metric's RANK
    partition, or a pair's, under <param value>), with the sources not indexed yet: their items are skipped
    (``skip``) and their current values merged in (``overrides``: run id -> value, None for a run lacking the
    metric)."""

    experiment_id: str
    pk: str
    prefix: str
    skip: frozenset[str] = frozenset()
    overrides: tuple[tuple[str, float | None], ...] = ()
    with_missing: bool = False  # the range holds runs lacking the metric (MISSING_KEY), yielded last


def value_stream(
    source: ValueRange,
    ascending: bool,
    start: tuple[int, float | None] | None = None,
    first_page: int | None = None,
    next_page: Callable[[], int] | None = None,
    stop_value: float | None = None,
) -> Stream:
    """(sort key, run) in MLflow's order: numbers, NaN, then (``with_missing``) runs lacking the metric.

    ``start`` (rank, value) resumes at a group (0: a number, 1: NaN, 2: missing), which is yielded whole;
    ``stop_value`` ends the walk after that number's group (a filter's range ends there)."""
    start_key = None if start is None else (metric_sort_key(start[1], ascending) if start[0] == 0 else (start[0], 0.0))
    overrides = sorted(
        ((metric_sort_key(value, ascending), Ranked(run_id, source.experiment_id, value)) for run_id, value in source.overrides),
        key=lambda pair: (pair[0], pair[1].run_id),
    )
    overrides = [pair for pair in overrides if start_key is None or pair[0] >= start_key]
    prefix, pk = source.prefix, source.pk
    numbers = (prefix, prefix + _NAN_KEY)
    if start_key is not None and start_key[0] == 0:
        # Resume at the start value (inclusive: its whole tie group is read again).
        at = prefix + keys.float64(rank_value(start[1]))  # type: ignore[index, arg-type]
        numbers = (at, prefix + _NAN_KEY) if ascending else (prefix, at + "#~")
    ranges: list[dict[str, Any]] = []
    if stop_value is not None:
        # No read past the stop value, no NaN or missing group: a range comparison never holds for them.
        stop = prefix + keys.float64(stop_value)
        numbers = (numbers[0], min(numbers[1], stop + "#~")) if ascending else (max(numbers[0], stop), numbers[1])
        overrides = [pair for pair in overrides if pair[0] <= metric_sort_key(stop_value, ascending)]
    else:
        if start_key is None or start_key[0] <= 1:
            ranges.append({"sk_prefix": prefix + _NAN_KEY})
        if source.with_missing:
            ranges.append({"sk_prefix": prefix + MISSING_KEY})
    if (start_key is None or start_key[0] == 0) and numbers[0] <= numbers[1]:
        ranges.insert(0, {"sk_between": numbers, "forward": ascending})

    def indexed() -> Stream:
        for query in ranges:
            missing = query.get("sk_prefix") == prefix + MISSING_KEY
            for item in _pages(pk, first_page, next_page, **query):
                if item["run_id"] in source.skip:
                    continue
                value = None if missing else metric_value(item["value"])
                yield metric_sort_key(value, ascending), Ranked(item["run_id"], source.experiment_id, value)

    return heapq.merge(indexed(), iter(overrides), key=lambda pair: pair[0])


def metric_range(experiment_id: str, key: str, unindexed: Unindexed | None = None, seen: Seen | None = None) -> ValueRange:
    """One experiment's runs by their latest value of metric ``key`` (sources not indexed yet merged in)."""
    skip, current = stale_metric_runs(experiment_id, key, unindexed, seen)
    query = METRIC_RANK.query("by_value", experiment_id=experiment_id, key=key)
    return ValueRange(
        experiment_id,
        query.pk_value,
        query.bound(),
        skip,
        tuple((run_id, metric_value(item["value"])) for run_id, item in current.items()),
    )


def _group(stream: Iterable[tuple[Any, Ranked]]) -> Iterator[list[Ranked]]:
    current: list[Ranked] = []
    current_key: Any = None
    for sort_key, ranked in stream:
        if current and sort_key != current_key:
            yield current
            current = []
        current_key = sort_key
        current.append(ranked)
    if current:
        yield current


def group_streams(streams: list[Stream]) -> Iterator[list[Ranked]]:
    """Several experiments' streams merged, in groups of equal sort key."""
    return _group(heapq.merge(*streams, key=lambda pair: pair[0]))


def iter_metric_groups(
    experiment_ids: Iterable[str],
    key: str,
    ascending: bool,
    start_value: float | None = None,
    first_page: int | None = None,
    next_page: Callable[[], int] | None = None,
    stop_value: float | None = None,
    unindexed: Unindexed | None = None,
    seen: Seen | None = None,
) -> Iterator[list[Ranked]]:
    """Runs having metric ``key``, in groups of equal latest value, in MLflow's order.

    ``start_value`` resumes a later page: groups before it are not read; its own group is yielded
    whole (the caller skips what its page token already covered, e.g. ``query.is_after_token``).
    ``first_page`` / ``next_page`` size the reads (see ``_pages``); ``stop_value`` (a number) ends the walk
    after that value's group; ``seen``: see ``marked_latest``.
    """
    start = None if start_value is None else ((1, None) if math.isnan(start_value) else (0, start_value))
    return group_streams(
        [
            value_stream(metric_range(experiment_id, key, unindexed, seen), ascending, start, first_page, next_page, stop_value)
            for experiment_id in experiment_ids
        ]
    )


def order_runs(
    groups: Iterable[list[Ranked]],
    load_runs: Callable[[list[Ranked]], dict[str, dict[str, Any]]],
    start_time_ascending: bool = False,
) -> Iterator[dict[str, Any]]:
    """Run items in MLflow's order: groups in order, ties by start_time (DESC unless the query orders it
    ASC) then run_id ASC.

    ``load_runs`` returns the run items of a group by run id (missing = deleted for good: skipped);
    the caller filters lifecycle stage / other conditions on what this yields and stops early.
    """
    direction = 1 if start_time_ascending else -1
    for group in groups:
        runs = load_runs(group)
        present = [runs[r.run_id] for r in group if r.run_id in runs]
        present.sort(key=lambda run: (direction * (run.get("start_time") or 0), run["run_id"]))
        yield from present


def load_runs_consistent(group: list[Ranked]) -> dict[str, dict[str, Any]]:
    """Default loader for ``order_runs``: one BatchGetItem of the group's run items."""
    run = ENTITY["run"]
    items = table.batch_get([run.key(experiment_id=r.experiment_id, run_id=r.run_id) for r in group])
    return {item["run_id"]: item for item in items}


def iter_run_ids_by_metric(experiment_ids: Iterable[str], key: str, ascending: bool) -> Iterator[str]:
    for run in order_runs(iter_metric_groups(experiment_ids, key, ascending), load_runs_consistent):
        yield run["run_id"]
