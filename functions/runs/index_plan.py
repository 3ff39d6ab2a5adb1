"""search_runs plans for metric, param and tag filters answered from the RANK items (``rank_filters``).

* **ordered range**: the order's first term is a metric the filter bounds (``metrics.loss < 0.3`` ORDER
  BY ``metrics.loss``): the metric's RANK items are walked in order from the range's start (or the page
  token's value, if later) and the walk stops where the range ends or the page is full; each read is
  sized by the share of walked runs that matched so far. Page N costs what page 1 costs. If under a
  quarter of the first page's worth of walked runs match, the filter's other servable terms are raced
  (reading at most max_results + 1 RANK items of each): one naming fewer runs than a page drives instead.
* **candidates**: any other order, or several servable keys. The most selective key is found by reading
  the keys' ranges side by side (``rank_filters.race``); its runs are the candidates. MLflow's exact
  filter and order run in memory on them, and the token's keyset position picks the page. Every page
  reads the candidates once: page N costs what page 1 costs.
* **pair walk**: ``params.p = 'v'`` ORDER BY ``metrics.m`` where every experiment declares the (p, m) pair
  index (``pair_ranks``, ``tools/pair_index.py``): the pair's items for v are walked in m's order like the
  ordered range (NaN, then the runs lacking m, last), from m's bound if the filter has one. Without the pair
  index this search takes the ordered-candidates plan, which reads every run having v.
* **ordered candidates**: the same candidates when the order's first term is a metric, param or tag
  (``params.lr = '0.01'`` ORDER BY ``metrics.loss``): only that key is read for all of them (the driving
  key's RANK value, else its source item), the ones before the token's value are dropped, and the rest
  are verified about one page (whole groups of equal value) at a time, in order, until the page is full.

A candidate is verified on its run summary (``run_summaries``: the run and all its data in one item, a
BatchGetItem per 100 candidates), which is also what the page returns. A run with an item the indexer
has not processed yet (LSI5 flag) is read from its range instead (or from its LSI5 items while none of them was
indexed yet), and flagged sources are candidates whatever their RANK item says: exact while the indexer lags. A
marked run's latest value read to decide a term or to order is kept for the request (``Flagged.latest``): reading
the run whole then reads only the rest of its partition.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from serverless_mlflow import search
from serverless_mlflow.index import pair_ranks, rank_filters, rank_items, ranks, run_summaries
from serverless_mlflow.index.rank_filters import Flagged, RankTerm
from serverless_mlflow.storage import table

from . import search_rows

_BATCH_GET_CHUNK = 100
_WALK_MIN, _WALK_MAX = 16, 500
# An ordered walk matching fewer than this share of its runs races the filter's other terms.
_RACE_BELOW_SHARE = 0.25
_RACE_SAMPLE = 32  # runs walked before the share is trusted


def index_terms(query: search.SearchQuery) -> list[RankTerm]:
    """The filter's RANK-servable terms (empty: this plan does not apply)."""
    return rank_filters.servable_terms(query.filter.normalized)


def search_indexed(
    query: search.SearchQuery, terms: list[RankTerm], experiment_ids: list[str], stages: set[str]
) -> tuple[list[dict[str, Any]], str | None]:
    flagged = Flagged(experiment_ids)
    first = query.order_by[0]
    walker = _pair_walker(query, terms, experiment_ids, stages, flagged) or _range_walker(query, terms, experiment_ids, stages, flagged)
    if walker is not None:
        # Walk the order key's range. When the first page's worth of it matches poorly, another term may
        # name fewer runs than a page needs: race them, and let the smallest drive if it does.
        served, walk = walker
        others = [term for term in terms if term not in served]
        cap = None if query.max_results is None else query.max_results + 1
        if not others or cap is None:
            answer = walk(None)
            assert answer is not None  # a walk that may not give up always answers
            return answer
        raced: list[tuple[RankTerm, rank_filters.Found] | None] = []

        def smaller_term() -> bool:
            raced.append(rank_filters.race(others, experiment_ids, flagged, cap))
            return raced[0] is not None

        walked = walk(smaller_term)
        if walked is not None:
            return walked
        driver = raced[0]
        assert driver is not None
    else:
        driver = rank_filters.race(terms, experiment_ids, flagged)
        assert driver is not None  # without a cap the smallest term always wins
    term, candidates = driver
    # A deleted tag leaves no flag behind (its item is gone) while its RANK item waits for the indexer:
    # tag values are always read from the source. Metrics and params are never deleted alone.
    trusted = term.key_type != "tag"
    known = Known(
        {(term.key_type, term.key): {run_id: value for (_, run_id), value in candidates.items() if value is not None and trusted}}
    )
    if first.type in _FIELDS:
        return _ordered_candidates(query, sorted(candidates), stages, known, flagged)
    entities = [e for e in _verified(query, sorted(candidates), stages, flagged) if query.is_after_token(e)]
    entities.sort(key=query.sort_key)
    return search.page(entities, query.order_by, query.max_results, None)


Answer = tuple[list[dict[str, Any]], str | None]
# The terms a walk serves, and the walk (given the race to run once the walk matches poorly; None: never).
Walker = tuple[list[RankTerm], Callable[[Callable[[], bool] | None], Answer | None]]


def _range_walker(
    query: search.SearchQuery, terms: list[RankTerm], experiment_ids: list[str], stages: set[str], flagged: Flagged
) -> Walker | None:
    """The ordered range: the order's first term is a metric the filter bounds."""
    first = query.order_by[0]
    ordering = next((t for t in terms if first.type == "metric" and (t.key_type, t.key) == ("metric", first.key)), None)
    if ordering is None:
        return None
    return [ordering], functools.partial(_walk_range, query, ordering, experiment_ids, stages, flagged)


def _pair_walker(
    query: search.SearchQuery, terms: list[RankTerm], experiment_ids: list[str], stages: set[str], flagged: Flagged
) -> Walker | None:
    """The pair walk: ``params.p = 'v'`` ORDER BY ``metrics.m`` where every experiment has the (p, m) pair index ready."""
    first = query.order_by[0]
    if first.type != "metric":
        return None
    bounds = next((t for t in terms if (t.key_type, t.key) == ("metric", first.key)), None)
    for term in terms:
        values = rank_filters.exact_values(term) if term.key_type == "parameter" else None
        if values is None or len(values) != 1:
            continue
        pair = pair_ranks.ready_pair(experiment_ids, term.key, first.key)
        if pair is not None:
            (value,) = values
            served = [term] if bounds is None else [term, bounds]
            return served, functools.partial(_walk_pair, query, pair, value, bounds, experiment_ids, stages, flagged)
    return None


def _walk_pair(
    query: search.SearchQuery,
    pair: pair_ranks.Pair,
    param_value: str,
    bounds: RankTerm | None,
    experiment_ids: list[str],
    stages: set[str],
    flagged: Flagged,
    smaller_term: Callable[[], bool] | None,
) -> Answer | None:
    """The runs having ``param_value`` walked in the order's metric order from the pair's key range (from the
    filter's bound on that metric, or the page token's group, whichever is later). Runs with a flagged item
    are left out of the range and merged in from their current values."""
    ascending = query.order_by[0].ascending
    span = _span(query, bounds)
    if span is None:
        return [], None
    start, stop = span
    stale = _stale_runs(pair, param_value, experiment_ids, flagged)

    def groups(first_page: int | None, next_page: Callable[[], int]) -> Iterator[list[ranks.Ranked]]:
        ranges = [pair_ranks.value_range(e, pair, param_value, *stale[e]) for e in experiment_ids]
        return ranks.group_streams([ranks.value_stream(r, ascending, start, first_page, next_page, stop) for r in ranges])

    past = None if bounds is None else (lambda value: value is None or bounds.past(rank_items.rank_value(value), ascending))
    return _walk(query, groups, past, stages, flagged, smaller_term)


def _stale_runs(
    pair: pair_ranks.Pair, param_value: str, experiment_ids: list[str], flagged: Flagged
) -> dict[str, tuple[frozenset[str], tuple[tuple[str, float | None], ...]]]:
    """experiment id -> (runs with a flagged item: their pair items may be stale, and those of them having
    ``param_value`` with their current value of the pair's metric, None when lacking it), read from their ranges."""
    runs_of = {experiment_id: run_summaries.flagged_runs(flagged.items(experiment_id)) for experiment_id in experiment_ids}
    flagged_runs = sorted((experiment_id, run_id) for experiment_id, runs in runs_of.items() for run_id in runs)
    views = search_rows.read_views(flagged_runs, flagged) if flagged_runs else {}
    out = {}
    for experiment_id, runs in runs_of.items():
        matching = [views[run_id] for run_id in sorted(runs) if run_id in views and views[run_id].params.get(pair.param) == param_value]
        current = tuple((view.run_id, search_rows.search_entity(view)["metrics"].get(pair.metric)) for view in matching)
        out[experiment_id] = (frozenset(runs), current)
    return out


def _ordered_candidates(
    query: search.SearchQuery, runs: list[tuple[str, str]], stages: set[str], known: Known, flagged: Flagged
) -> tuple[list[dict[str, Any]], str | None]:
    """Candidates ordered by a metric, param or tag: only the order key is read for all of them.

    The candidates are sorted on the order's first term (its value: the driving key's RANK value, else
    one batched read of its source item); those before the page token's value are dropped unread, and
    the rest are verified (run item, other keys) a few whole groups of equal value at a time until the
    page is full. Page N reads the candidates' order values and about one page of run items."""
    first = query.order_by[0]
    head = search.OrderBy(query.order_by.kind, [first])
    values = _order_values(runs, (first.type, first.key), known, flagged)
    known = known.with_values((first.type, first.key), values)

    def head_key(run_id: str) -> tuple[Any, ...]:
        entity = {"metrics": {}, "params": {}, "tags": {}}
        if run_id in values:
            entity[_FIELDS[first.type]][first.key] = values[run_id]
        return search.sort_key(entity, head)

    ordered = sorted(((head_key(run_id), (experiment_id, run_id)) for experiment_id, run_id in runs), key=lambda pair: pair[0])
    if query.position is not None:
        after = search.position_key(query.position[:1], head)
        ordered = [pair for pair in ordered if not pair[0] < after]  # the token's own group is read again
    limit = query.max_results
    selected: list[dict[str, Any]] = []
    chunk: list[tuple[str, str]] = []
    for index, (sort_key, run) in enumerate(ordered):
        chunk.append(run)
        group_ends = index + 1 == len(ordered) or ordered[index + 1][0] != sort_key
        wanted = _WALK_MIN if limit is None else limit + 1 - len(selected)
        if group_ends and (index + 1 == len(ordered) or len(chunk) >= min(max(wanted, _WALK_MIN), _WALK_MAX)):
            # Whole groups only: every run after this chunk sorts after every run in it.
            selected.extend(e for e in _verified(query, chunk, stages, flagged) if query.is_after_token(e))
            chunk = []
            if limit is not None and len(selected) > limit:
                break
    selected.sort(key=query.sort_key)
    return search.page(selected, query.order_by, limit, None)


def _order_values(runs: list[tuple[str, str]], wanted: tuple[str, str], known: Known, flagged: Flagged) -> dict[str, Any]:
    """Each run's value of one key (absent: the run lacks it): from ``known``, else what the request read already (a
    flagged param or tag item on LSI5, a marked run's latest value), else its source item (a latest metric read is
    kept in ``flagged.latest``: a run read whole later does not read it again)."""
    values = dict(known.values.get(wanted, {}))
    settled = set(values)
    if wanted[0] == "metric":
        for _, run_id in runs:
            if run_id not in settled and wanted[1] in flagged.latest.get(run_id, {}):
                item = flagged.latest[run_id][wanted[1]]
                settled.add(run_id)
                if item is not None:
                    values[run_id] = rank_items.metric_value(item["value"])
    else:
        for (_, run_id), value in flagged.current_values(RankTerm(*wanted, ())).items():
            if run_id not in settled:
                values[run_id] = value
                settled.add(run_id)
    have = settled
    keys = [rank_filters.source_key(experiment_id, run_id, *wanted) for experiment_id, run_id in runs if run_id not in have]
    chunks = [keys[i : i + _BATCH_GET_CHUNK] for i in range(0, len(keys), _BATCH_GET_CHUNK)]
    metric = wanted[1] if wanted[0] == "metric" else None
    if metric is not None:
        for _, run_id in runs:
            if run_id not in have:
                flagged.latest.setdefault(run_id, {})[metric] = None
    for items in search_rows.parallel_map(table.batch_get, chunks):
        for item in items:
            kind = rank_filters.source_kind(item)
            if kind == "metric" and metric is not None:
                flagged.latest[rank_filters.run_id_of(item)][metric] = item
            if kind is not None:
                values[rank_filters.run_id_of(item)] = rank_items.metric_value(item["value"]) if kind == "metric" else item["value"]
    return values


# --- the ordered-range plan ----------------------------------------------------------------------------


def _walk_range(
    query: search.SearchQuery,
    term: RankTerm,
    experiment_ids: list[str],
    stages: set[str],
    flagged: Flagged,
    smaller_term: Callable[[], bool] | None = None,
) -> Answer | None:
    """The ordered range: the metric's RANK items from the range's start (or the token's value, if later)."""
    ascending = query.order_by[0].ascending
    span = _span(query, term)
    if span is None:
        return [], None
    start, stop = span
    start_value = None if start is None else start[1]  # a bounded walk starts at a number

    def groups(first_page: int | None, next_page: Callable[[], int]) -> Iterator[list[ranks.Ranked]]:
        return ranks.iter_metric_groups(
            experiment_ids, term.key, ascending, start_value, first_page, next_page, stop, flagged.items, flagged.latest
        )

    return _walk(query, groups, lambda value: term.past(rank_items.rank_value(value), ascending), stages, flagged, smaller_term)


def _span(query: search.SearchQuery, bounds: RankTerm | None) -> tuple[tuple[int, float | None] | None, float | None] | None:
    """Where an ordered walk of the order's metric starts and stops: (start group as (rank, value), as
    ``ranks.value_stream`` takes it; stop value), from the filter's bounds on that metric (if any) and the
    page token, whichever is later. None: the token is past every value the bounds allow."""
    ascending = query.order_by[0].ascending
    low, high = bounds.metric_bounds() if bounds is not None else (None, None)
    bound = low if ascending else high
    start: tuple[int, float | None] | None = None if bound is None else (0, bound)
    if query.position is not None:
        rank, value = query.position[0]
        if rank != 0 or not isinstance(value, (int, float)):
            if bounds is not None:
                return None  # NaN and missing never satisfy a range
            start = (rank, None)
        else:
            start = (0, float(value) if bound is None else (max(bound, float(value)) if ascending else min(bound, float(value))))
    return start, high if ascending else low


Groups = Callable[[int | None, Callable[[], int]], Iterator[list[ranks.Ranked]]]


def _walk(
    query: search.SearchQuery,
    groups: Groups,
    past: Callable[[Any], bool] | None,
    stages: set[str],
    flagged: Flagged,
    smaller_term: Callable[[], bool] | None = None,
) -> Answer | None:
    """An ordered walk: ``groups(first read size, next read size)`` of equal order value, verified a chunk at a
    time on the runs' summaries until the page is full or ``past(value)`` says no later value can match.

    Once a page's worth of runs was walked and fewer than ``_RACE_BELOW_SHARE`` of them matched (the walk
    would read about 2 x page / share items), ``smaller_term`` is asked (once) whether another term names
    fewer runs than a page needs: if so the walk stops and answers None."""
    limit = query.max_results
    selected: list[dict[str, Any]] = []
    walk = _Walk(limit, None if smaller_term is None or limit is None else max(limit + 1, _RACE_SAMPLE))
    first_page = None if limit is None else limit + 2
    for chunk in _chunks(groups(first_page, walk.runs_to_read), past, walk.runs_to_read):
        found = [e for e in _verified(query, chunk, stages, flagged) if query.is_after_token(e)]
        found.sort(key=query.sort_key)
        selected.extend(found)
        walk.passed(len(chunk), len(found))
        if limit is not None and len(selected) > limit:
            break
        if smaller_term is not None and walk.sampled():
            if walk.matched < _RACE_BELOW_SHARE * walk.walked and smaller_term():
                return None
            smaller_term, walk.sample = None, None
    return search.page(selected, query.order_by, limit, None)


@dataclass
class _Walk:
    """How many more runs of the ordered walk to read (RANK items, then summaries), from the page's runs
    still wanted and the share of walked runs that matched so far: reading ahead costs items."""

    limit: int | None
    # Runs to walk before deciding whether to race the other terms (None: decided, or no race to run).
    sample: int | None = None
    walked: int = 0
    matched: int = 0

    def passed(self, walked: int, matched: int) -> None:
        self.walked += walked
        self.matched += matched

    def runs_to_read(self) -> int:
        if self.limit is None:
            return _WALK_MAX
        wanted = max(1, self.limit + 1 - self.matched)
        if not self.walked:
            size = wanted
        else:
            # Smoothed (a few runs walked say little), and at most double what was walked so far: a sparse
            # start must not turn into one read of the whole range.
            share = (self.matched + 1) / (self.walked + 2)
            size = min(2 * self.walked, math.ceil(wanted / share))
        if self.sample is not None and self.walked < self.sample:
            size = min(size, self.sample - self.walked)  # stop at the sample: the race may make the rest moot
        return max(2, min(_WALK_MAX, size))

    def sampled(self) -> bool:
        return self.sample is not None and self.walked >= self.sample


def _chunks(
    groups: Iterable[list[ranks.Ranked]], past: Callable[[Any], bool] | None, wanted: Callable[[], int]
) -> Iterator[list[tuple[str, str]]]:
    """Whole groups of equal value, batched to about the runs still wanted, until ``past`` a group's value."""
    chunk: list[tuple[str, str]] = []
    for group in groups:
        if past is not None and past(group[0].value):
            break
        chunk.extend((ranked.experiment_id, ranked.run_id) for ranked in group)
        if len(chunk) >= wanted():
            yield chunk
            chunk = []
    if chunk:
        yield chunk


# --- candidates --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Known:
    """Current values of some keys for some runs, not re-read: (key type, key) -> run id -> value (from RANK
    items of sources already indexed, or source items read once)."""

    values: dict[tuple[str, str], dict[str, Any]]

    def with_values(self, key: tuple[str, str], values: dict[str, Any]) -> Known:
        return Known({**self.values, key: values})


_FIELDS = {"metric": "metrics", "parameter": "params", "tag": "tags"}


def _verified(query: search.SearchQuery, runs: list[tuple[str, str]], stages: set[str], flagged: Flagged) -> list[dict[str, Any]]:
    """The candidates that match the filter, as search entities with their data: one run summary each
    (one BatchGetItem per 100), or the run's range while it is flagged."""
    views = search_rows.read_views(runs, flagged)
    entities = (search_rows.search_entity(views[run_id]) for _, run_id in runs if run_id in views)
    return [e for e in entities if e["info"]["lifecycle_stage"] in stages and query.matches(e)]
