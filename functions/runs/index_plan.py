"""search_runs plans for metric, param and tag filters answered from the RANK items (``rank_filters``).

* **ordered range**: the order's first term is a metric the filter bounds (``metrics.loss < 0.3`` ORDER
  BY ``metrics.loss``), and no other servable term names at most a page of runs (checked by reading at
  most max_results + 1 RANK items of each): the metric's RANK items are walked in order from the range's
  start (or the page token's value, if later) and the walk stops where the range ends or the page is
  full. Page N costs what page 1 costs.
* **candidates**: any other order, or several servable keys. The most selective key is found by reading
  the keys' ranges side by side (``rank_filters.race``); its runs are the candidates. Only the items the
  filter and the order need are read for them (run item + one source item per key, batched), MLflow's
  exact filter and order run in memory, and the token's keyset position picks the page. Every page
  reads the candidates once: page N costs what page 1 costs.
* **ordered candidates**: the same candidates when the order's first term is a metric, param or tag
  (``params.lr = '0.01'`` ORDER BY ``metrics.loss``): only that key is read for all of them, the ones
  before the token's value are dropped, and the run items and other keys are read for about one page
  (whole groups of equal value) at a time, in order, until the page is full.

Both add the runs whose source is not indexed yet (LSI5 flag) and read those sources rather than their
possibly stale RANK items: exact while the indexer lags. The driving key's value comes from its RANK
items otherwise (metrics and params: a tag's RANK item outlives a deleted tag until the indexer runs);
every other key the filter or the order reads comes from its source item. Only the
returned page's runs have their full data read.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from serverless_mlflow import rank_filters, ranks, search, table
from serverless_mlflow.rank_filters import Flagged, RankTerm
from serverless_mlflow.schema import ENTITY
from serverless_mlflow.search.filters import MLFLOW_RUN_NAME

from . import search_rows

_BATCH_GET_CHUNK = 100
_WALK_MIN, _WALK_MAX = 16, 500


def index_terms(query: search.SearchQuery) -> list[RankTerm]:
    """The filter's RANK-servable terms (empty: this plan does not apply)."""
    return rank_filters.servable_terms(query.filter.normalized)


def search_indexed(
    query: search.SearchQuery, terms: list[RankTerm], experiment_ids: list[str], stages: set[str]
) -> tuple[list[dict[str, Any]], str | None]:
    flagged = Flagged(experiment_ids)
    first = query.order_by[0]
    ordering = next((t for t in terms if first.type == "metric" and (t.key_type, t.key) == ("metric", first.key)), None)
    if ordering is not None:
        # Walk the order key's range unless another term names fewer runs than a page needs.
        others = [term for term in terms if term is not ordering]
        cap = None if query.max_results is None else query.max_results + 1
        smallest = rank_filters.race(others, experiment_ids, flagged, cap) if others and cap is not None else None
        if smallest is None:
            return _ordered_range(query, ordering, experiment_ids, stages)
        driver = smallest
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
        return _ordered_candidates(query, sorted(candidates), stages, known)
    entities = [e for e in _verified(query, sorted(candidates), stages, known) if query.is_after_token(e)]
    entities.sort(key=query.sort_key)
    page, token = search.page(entities, query.order_by, query.max_results, None)
    search_rows.attach_views(page)
    return page, token


def _ordered_candidates(
    query: search.SearchQuery, runs: list[tuple[str, str]], stages: set[str], known: Known
) -> tuple[list[dict[str, Any]], str | None]:
    """Candidates ordered by a metric, param or tag: only the order key is read for all of them.

    The candidates are sorted on the order's first term (its value: the driving key's RANK value, else
    one batched read of its source item); those before the page token's value are dropped unread, and
    the rest are verified (run item, other keys) a few whole groups of equal value at a time until the
    page is full. Page N reads the candidates' order values and about one page of run items."""
    first = query.order_by[0]
    head = search.OrderBy(query.order_by.kind, [first])
    values = _order_values(runs, (first.type, first.key), known)
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
            selected.extend(e for e in _verified(query, chunk, stages, known) if query.is_after_token(e))
            chunk = []
            if limit is not None and len(selected) > limit:
                break
    selected.sort(key=query.sort_key)
    page, token = search.page(selected, query.order_by, limit, None)
    search_rows.attach_views(page)
    return page, token


def _order_values(runs: list[tuple[str, str]], wanted: tuple[str, str], known: Known) -> dict[str, Any]:
    """Each run's value of one key (absent: the run lacks it): from ``known``, else its source item."""
    have = known.values.get(wanted, {})
    keys = [rank_filters.source_key(experiment_id, run_id, *wanted) for experiment_id, run_id in runs if run_id not in have]
    values = {run_id: value for run_id, value in have.items()}
    chunks = [keys[i : i + _BATCH_GET_CHUNK] for i in range(0, len(keys), _BATCH_GET_CHUNK)]
    for items in search_rows.parallel_map(table.batch_get, chunks):
        for item in items:
            kind = rank_filters.source_kind(item)
            if kind is not None:
                values[rank_filters.run_id_of(item)] = ranks.metric_value(item["value"]) if kind == "metric" else item["value"]
    return values


# --- the ordered-range plan ----------------------------------------------------------------------------


def _ordered_range(
    query: search.SearchQuery, term: RankTerm, experiment_ids: list[str], stages: set[str]
) -> tuple[list[dict[str, Any]], str | None]:
    ascending = query.order_by[0].ascending
    low, high = term.metric_bounds()
    start = low if ascending else high
    if query.position is not None:
        rank, value = query.position[0]
        if rank != 0 or not isinstance(value, (int, float)):
            return [], None  # the token is past every number: NaN and missing never satisfy a range
        start = float(value) if start is None else (max(start, float(value)) if ascending else min(start, float(value)))
    limit = query.max_results
    selected: list[dict[str, Any]] = []
    groups = ranks.iter_metric_groups(experiment_ids, term.key, ascending, start, None if limit is None else limit + 2)
    for chunk, values in _chunks(groups, term, ascending, lambda: _WALK_MIN if limit is None else limit + 1 - len(selected)):
        found = [e for e in _verified(query, chunk, stages, Known({("metric", term.key): values})) if query.is_after_token(e)]
        found.sort(key=query.sort_key)
        selected.extend(found)
        if limit is not None and len(selected) > limit:
            break
    page, token = search.page(selected, query.order_by, limit, None)
    search_rows.attach_views(page)
    return page, token


def _chunks(
    groups: Iterable[list[ranks.Ranked]], term: RankTerm, ascending: bool, wanted: Any
) -> Iterator[tuple[list[tuple[str, str]], dict[str, Any]]]:
    """Whole groups of equal value, batched to about the runs still wanted, until the range ends, with
    each run's value (current: ``ranks`` reads a flagged source instead of its RANK item)."""
    chunk: list[tuple[str, str]] = []
    values: dict[str, Any] = {}
    for group in groups:
        if term.past(ranks.rank_value(group[0].value), ascending):
            break
        chunk.extend((ranked.experiment_id, ranked.run_id) for ranked in group)
        values.update((ranked.run_id, ranked.value) for ranked in group)
        if len(chunk) >= min(max(wanted(), _WALK_MIN), _WALK_MAX):
            yield chunk, values
            chunk, values = [], {}
    if chunk:
        yield chunk, values


# --- candidates --------------------------------------------------------------------------------------


def _needed_keys(query: search.SearchQuery) -> tuple[set[tuple[str, str]], bool]:
    """The (key type, key) source items the filter and the order read, and whether datasets are needed."""
    needed: set[tuple[str, str]] = set()
    datasets = False
    for key_type, key, _, _ in query.filter.normalized:
        if key_type in ("metric", "parameter", "tag"):
            needed.add((key_type, key))
        elif key_type == "attribute" and key == "run_name":
            needed.add(("tag", MLFLOW_RUN_NAME))  # run_name filters read the tag, as MLflow does
        elif key_type == "dataset":
            datasets = True
    for term in query.order_by:
        if term.type in ("metric", "parameter", "tag"):
            needed.add((term.type, term.key))
    return needed, datasets


@dataclass(frozen=True)
class Known:
    """Current values of some keys for some runs, not re-read: (key type, key) -> run id -> value (from RANK
    items of sources already indexed, or source items read once)."""

    values: dict[tuple[str, str], dict[str, Any]]

    def with_values(self, key: tuple[str, str], values: dict[str, Any]) -> Known:
        return Known({**self.values, key: values})


_FIELDS = {"metric": "metrics", "parameter": "params", "tag": "tags"}


def _verified(query: search.SearchQuery, runs: list[tuple[str, str]], stages: set[str], known: Known) -> list[dict[str, Any]]:
    """The candidates that match the filter, as search entities carrying their run item."""
    needed, datasets = _needed_keys(query)
    run = ENTITY["run"]
    keys: list[dict[str, str]] = []
    for experiment_id, run_id in runs:
        keys.append(run.key(experiment_id=experiment_id, run_id=run_id))
        for key_type, key in sorted(needed):
            if run_id not in known.values.get((key_type, key), {}):
                keys.append(rank_filters.source_key(experiment_id, run_id, key_type, key))
    chunks = [keys[i : i + _BATCH_GET_CHUNK] for i in range(0, len(keys), _BATCH_GET_CHUNK)]
    entities: dict[str, dict[str, Any]] = {}
    sources: list[dict[str, Any]] = []
    for items in search_rows.parallel_map(table.batch_get, chunks):
        for item in items:
            if item.get("entity_type") == "run":
                if item.get("lifecycle_stage") in stages:
                    entity = entities[item["run_id"]] = _entity(item)
                    for (key_type, key), values in known.values.items():
                        if item["run_id"] in values:
                            entity[_FIELDS[key_type]][key] = values[item["run_id"]]
            else:
                sources.append(item)
    for item in sources:
        entity = entities.get(rank_filters.run_id_of(item))
        kind = rank_filters.source_kind(item)
        if entity is None or kind is None:
            continue
        entity[_FIELDS[kind]][item["key"]] = ranks.metric_value(item["value"]) if kind == "metric" else item["value"]
    if datasets:
        # Dataset filters need each candidate's inputs: its whole data (rare; still only candidates).
        views = search_rows.read_data([e["_item"] for e in entities.values()])
        entities = {view.info["run_id"]: {**search_rows.search_entity(view), "_item": view.info} for view in views}
    return [e for e in entities.values() if query.matches(e)]


def _entity(item: dict[str, Any]) -> dict[str, Any]:
    return {"info": search_rows.info(item), "metrics": {}, "params": {}, "tags": {}, "datasets": [], "_item": item}
