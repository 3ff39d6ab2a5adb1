"""RANK items: each run's latest metric value and each param value, in value order per experiment.

``<f64 value>#<run_id>`` in the partition of the experiment and metric key (``MRANK#<experiment>#<key>``) and
``RANK#p#<key><text(value, 300)><run_id>`` in the experiment partition are maintained by the stream indexer. Readers walk them in key order and
yield *groups* of runs with an equal value in MLflow's order (``order_by metrics.k`` puts NaN after
every number in both directions; runs lacking the key come last and are not yielded here). Ties
inside a group are MLflow's ``start_time DESC, run_uuid``: ``order_runs`` does that with the run
items the caller loads anyway (to filter lifecycle stage).

The index may lag: a param item whose LSI5 flag is still set (not indexed yet), or a run carrying a
``run_metrics_marker`` (its latest metrics changed since the indexer's last pass), is read from the source
instead, and its possibly stale RANK item is skipped.
"""

from __future__ import annotations

import heapq
import math
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from serverless_mlflow import keys, metric_marks, run_metrics, table
from serverless_mlflow.schema import COLLECTIONS, ENTITY, ENTITY_TYPE, LEGACY, PK, SK

METRIC_RANK = ENTITY["metric_rank"]
METRIC_RANK_V1 = LEGACY["metric_rank"]
PARAM_RANK = ENTITY["param_rank"]
TAG_RANK = ENTITY["tag_rank"]
# Value-ordered string items: (rank entity, source entity type) per search key type.
STRING_RANKS = {"parameter": (PARAM_RANK, "param"), "tag": (TAG_RANK, "run_tag")}
PARAM_VALUE_BUDGET = 300
_DIGEST_AND_MARKERS = 26  # keys.text(): 24-char digest + truncation mark + terminator
PARAM_HEAD_BYTES = PARAM_VALUE_BUDGET - _DIGEST_AND_MARKERS
_NAN_KEY = keys.float64(math.nan)
_PAGE_SIZES = (16, 64, 256, 1000)


def metric_value(raw: Any) -> float:
    """A stored metric value (string or number) as a float; ``NaN``/``inf`` strings included."""
    return float(raw)


def rank_value(value: float) -> float:
    """MLflow's SQL store saves +-inf as +-max float, so they tie with it: rank them the same."""
    if math.isinf(value):
        return sys.float_info.max if value > 0 else -sys.float_info.max
    return value


def run_id_of(source: dict[str, Any]) -> str:
    return source[SK].split("#")[1]  # R#<run_id>#M#... / R#<run_id>#P#...


def experiment_id_of(source: dict[str, Any]) -> str:
    return source[PK].split("#", 1)[1]


def metric_rank_item(source: dict[str, Any]) -> dict[str, Any]:
    """The RANK item of a latest metric value: in its own partition, or (a layout-1 value) in the experiment's."""
    value = metric_value(source["value"])
    if run_metrics.is_legacy_latest(source):
        run_id, experiment_id, entity = run_id_of(source), experiment_id_of(source), METRIC_RANK_V1
    else:
        run_id, experiment_id, entity = source["run_id"], str(source["experiment_id"]), METRIC_RANK
    attributes = {"run_id": run_id, "key": source["key"], "value": repr(value), "is_nan": math.isnan(value)}
    return entity.item(attributes, experiment_id=experiment_id, key=source["key"], value=rank_value(value), run_id=run_id)


def param_value_key(value: str) -> str:
    return keys.text(value, PARAM_VALUE_BUDGET)


def param_rank_item(source: dict[str, Any]) -> dict[str, Any]:
    run_id = run_id_of(source)
    value = str(source["value"])
    attributes = {"run_id": run_id, "key": source["key"], "value": value}
    return PARAM_RANK.item(
        attributes, experiment_id=experiment_id_of(source), key=source["key"], value_key=param_value_key(value), run_id=run_id
    )


def tag_rank_item(source: dict[str, Any]) -> dict[str, Any]:
    run_id = run_id_of(source)
    value = str(source["value"])
    attributes = {"run_id": run_id, "key": source["key"], "value": value}
    return TAG_RANK.item(
        attributes, experiment_id=experiment_id_of(source), key=source["key"], value_key=param_value_key(value), run_id=run_id
    )


# --- reading -----------------------------------------------------------------------------------


def marked_latest(experiment_id: str, key: str, unindexed: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Run id -> the current latest value of metric ``key`` of each marked run (``metric_marks``) that has one: one
    BatchGetItem of their ``RUN#<run>`` items (none when no run is marked)."""
    runs = sorted(metric_marks.marked_runs(unindexed))
    if not runs:
        return {}
    found = table.batch_get([run_metrics.LATEST.key(run_id=run_id, key=key) for run_id in runs])
    return {item["run_id"]: item for item in found if str(item.get("experiment_id")) == experiment_id}


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


def stale_metric_runs(experiment_id: str, key: str, unindexed: Unindexed | None = None) -> tuple[frozenset[str], dict[str, dict[str, Any]]]:
    """(runs whose RANK item of metric ``key`` may be stale, the current latest value of those that have one)."""
    items = (unindexed or _read_unindexed)(experiment_id)
    marked = marked_latest(experiment_id, key, items)
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


def metric_range(experiment_id: str, key: str, unindexed: Unindexed | None = None) -> ValueRange:
    """One experiment's runs by their latest value of metric ``key`` (sources not indexed yet merged in)."""
    skip, current = stale_metric_runs(experiment_id, key, unindexed)
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
) -> Iterator[list[Ranked]]:
    """Runs having metric ``key``, in groups of equal latest value, in MLflow's order.

    ``start_value`` resumes a later page: groups before it are not read; its own group is yielded
    whole (the caller skips what its page token already covered, e.g. ``query.is_after_token``).
    ``first_page`` / ``next_page`` size the reads (see ``_pages``); ``stop_value`` (a number) ends the walk
    after that value's group.
    """
    start = None if start_value is None else ((1, None) if math.isnan(start_value) else (0, start_value))
    return group_streams(
        [
            value_stream(metric_range(experiment_id, key, unindexed), ascending, start, first_page, next_page, stop_value)
            for experiment_id in experiment_ids
        ]
    )


class _Reversed:
    """Inverts string order for descending merges."""

    __slots__ = ("value",)

    def __init__(self, value: str) -> None:
        self.value = value

    def __lt__(self, other: _Reversed) -> bool:
        return other.value < self.value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Reversed) and other.value == self.value


def _string_stream(
    experiment_id: str,
    key: str,
    ascending: bool,
    start_value: str | None = None,
    key_type: str = "parameter",
    first_page: int | None = None,
    unindexed: Unindexed | None = None,
) -> Iterator[tuple[Any, Ranked]]:
    rank_entity, source_type = STRING_RANKS[key_type]
    flagged = flagged_sources(experiment_id, source_type, key, unindexed)
    order = (lambda v: v) if ascending else _Reversed
    overrides = sorted(
        ((order(str(item["value"])), Ranked(run_id, experiment_id, str(item["value"]))) for run_id, item in flagged.items()),
        key=lambda pair: (pair[0], pair[1].run_id),
    )
    prefix = rank_entity.sk_prefix(experiment_id=experiment_id, key=key)
    pk = ENTITY["run"].pk.render({"experiment_id": experiment_id})
    query: dict[str, Any] = {"sk_prefix": prefix, "forward": ascending}
    if start_value is not None:
        # Resume at start_value, its tie group (or its long-value head group) included.
        overrides = [pair for pair in overrides if not pair[0] < order(start_value)]
        value_key = param_value_key(start_value)
        at = prefix + (_long_head(value_key) or value_key)
        query["sk_between"] = (at, prefix + "\U0010ffff") if ascending else (prefix, at + "\U0010ffff")
        del query["sk_prefix"]

    def indexed() -> Iterator[tuple[Any, Ranked]]:
        # Values past PARAM_HEAD_BYTES may be truncated in the key and then order by digest: read the
        # whole group sharing such a head and sort it on the full value attribute.
        done_heads: set[str] = set()
        for item in _pages(pk, first_page, **query):
            value_key = item[SK][len(prefix) : -len(item["run_id"])]
            head = _long_head(value_key)
            if head is None:
                if item["run_id"] not in flagged:
                    yield order(item["value"]), Ranked(item["run_id"], experiment_id, item["value"])
                continue
            if head in done_heads:
                continue
            done_heads.add(head)
            group = [g for g in table.iter_query(pk, prefix + head) if g["run_id"] not in flagged]
            group.sort(key=lambda g: (g["value"], g["run_id"]), reverse=not ascending)
            for g in group:
                yield order(g["value"]), Ranked(g["run_id"], experiment_id, g["value"])

    return heapq.merge(indexed(), iter(overrides), key=lambda pair: pair[0])


def _long_head(value_key: str) -> str | None:
    """The shared key head of values that may be truncated, or None for a value ordered exactly."""
    # A truncated head may be up to 3 bytes shorter than PARAM_HEAD_BYTES (cut at a character
    # boundary), so group on a prefix every such value shares in full.
    group_bytes = PARAM_HEAD_BYTES - 3
    if len(value_key.encode("utf-8")) < group_bytes:
        return None
    return keys._cut_utf8(value_key, group_bytes).split("\x02", 1)[0]


def iter_param_groups(
    experiment_ids: Iterable[str],
    key: str,
    ascending: bool,
    start_value: str | None = None,
    first_page: int | None = None,
    unindexed: Unindexed | None = None,
) -> Iterator[list[Ranked]]:
    """Runs having param ``key``, in groups of equal value, in MLflow's order (string order).

    ``start_value`` resumes a later page (see ``iter_metric_groups``); values before it that share
    its long-value key head may be yielded too: the caller's page-token check drops them.
    """
    streams = [
        _string_stream(experiment_id, key, ascending, start_value, "parameter", first_page, unindexed) for experiment_id in experiment_ids
    ]
    return _group(heapq.merge(*streams, key=lambda pair: pair[0]))


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


def iter_run_ids_by_param(experiment_ids: Iterable[str], key: str, ascending: bool) -> Iterator[str]:
    for run in order_runs(iter_param_groups(experiment_ids, key, ascending), load_runs_consistent):
        yield run["run_id"]
