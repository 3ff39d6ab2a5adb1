"""search_runs: MLflow's grammar and ordering (the shared ``search`` package) over consistent reads.

Several plans, all strongly consistent (a search right after a write sees it):

* **full**: any filter or order. Each experiment's ``R#`` range is read with one paged Query (runs
  with their latest metrics, params, tags and inputs; history lives elsewhere), then filtered,
  sorted and paged in memory by the search package. Cost grows with the experiments' runs.
* **by start time**: no filter (or only attribute filters other than run_name) and the default order
  or ``start_time ASC|DESC``. Runs are read in order from an LSI (lifecycle + start time, or start
  time for ALL), merged across experiments, and only the returned page's data is fetched: about one
  item read per run passed plus each returned run's data.
* **by rank**: ``order_by metrics.<k>`` / ``params.<k>`` (then MLflow's tie-breakers) with no filter
  but attribute ones: runs having the key come from the indexer's RANK items in value order (items
  not yet indexed are merged in by ``ranks``), runs lacking it follow in start-time order, and only
  the returned page's data is read. The first page of 10 from 10,000 runs reads a few dozen items.
  Later pages resume the walk at the token's value.
* **indexed filter** (``index_plan``): metric comparisons, param/tag ``=``/``LIKE 'prefix%'``
  answered from RANK key ranges, the most selective one driving; MLflow's exact filter then runs on
  the candidates only.
* **name candidates**: a ``run_name`` LIKE/ILIKE/= filter reads only the runs the FTS index names as
  candidates (plus names not yet indexed), then applies the exact filter: never a miss, never a
  false hit.

A returned run's data is its run summary (``run_summaries``: one item, a BatchGetItem per page), or its
range while one of its items waits for the indexer: a run none of whose items was indexed yet (a sweep logged a
moment ago) is assembled from the LSI5 items the search read already (``run_summaries.whole_on_lsi5``), so a
filter every run passes reads the runs about once, not twice. A walk of the run items whose page holds flagged run
items only reads the rest of their ranges instead of the LSI5 items (which hold those run items again), and the rank
plan, when every run it considers is flagged, reads each once, whole (``_probe_flagged``), instead of reading their
run items on LSI5 and again in the walk of the runs lacking the key.

While ``make migrate`` has not yet built an experiment's metric RANK items (a table written before layout 2,
``layout.py``), a search that orders or filters by a metric takes the full plan: exact, dearer, and only until
that experiment is moved.

Page tokens are the search package's keyset positions, so runs added between pages are neither
repeated nor skipped.
"""

from __future__ import annotations

import functools
import heapq
import itertools
import math
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from serverless_mlflow import search
from serverless_mlflow.core import validation
from serverless_mlflow.index import fts, param_ranks, ranks, run_summaries
from serverless_mlflow.index.rank_filters import Flagged
from serverless_mlflow.request import view_type
from serverless_mlflow.request.pages import page_response
from serverless_mlflow.storage import keys, layout, table
from serverless_mlflow.storage.schema import KeyQuery
from serverless_mlflow.store import experiments as experiments_store
from serverless_mlflow.store import runs as store
from serverless_mlflow.store.runs import ACTIVE, DELETED, RunView

from . import index_plan, search_rows

_LSI_PAGE_MIN = 16
_LSI_PAGE_MAX = 1000
# The flagged-run probe's first reads (then _LSI_PAGE_MAX): one item first, as an indexed experiment's newest run is
# seldom flagged.
_PROBE_PAGES = (1, 16, 64)


# --- request --------------------------------------------------------------------------------------------


def search_runs(msg: dict[str, Any]) -> dict[str, Any]:
    max_results = msg.get("max_results", search.SEARCH_MAX_RESULTS_DEFAULT)
    query = search.prepare_run_search(
        msg.get("filter") or None, list(msg.get("order_by") or []), max_results, msg.get("page_token") or None
    )
    experiment_ids = list(dict.fromkeys(str(validation.parse_experiment_id(e)) for e in msg.get("experiment_ids") or []))
    # Another workspace's experiments hold no runs for this request (MLflow filters runs by their experiment's workspace).
    experiment_ids = [e for e in experiment_ids if experiments_store.in_request_workspace(e)]
    stages = search.view_type_stages(view_type(msg.get("run_view_type"), "run_view_type", lenient=True))
    if not experiment_ids:
        return {}
    if _uses_metrics(query) and not all(layout.experiment_ranks_at_least(e, layout.METRICS_OUTSIDE_EXPERIMENT) for e in experiment_ids):
        runs, token = _search_full(query, experiment_ids, stages)
    elif _start_time_plan_applies(query):
        runs, token = _search_by_start_time(query, experiment_ids, stages)
    elif _rank_plan_applies(query):
        runs, token = _search_by_rank(query, experiment_ids, stages)
    elif terms := index_plan.index_terms(query):
        runs, token = index_plan.search_indexed(query, terms, experiment_ids, stages)
    else:
        runs, token = _search_full(query, experiment_ids, stages)
    # Runs with large params/tags: a page over Lambda's 6 MB response ends early and continues by token.
    rows, token = search.fit_payload([store.run_json(entity["_view"], model_inputs=False) for entity in runs], runs, query.order_by, token)
    return page_response("runs", rows, token)


def _uses_metrics(query: search.SearchQuery) -> bool:
    """Whether a plan could read metric RANK items or latest values for this query (its order or its filter)."""
    return any(term.type == "metric" for term in query.order_by) or any(kind == "metric" for kind, _, _, _ in query.filter.normalized)


def _search_full(query: search.SearchQuery, experiment_ids: list[str], stages: set[str]) -> tuple[list[dict[str, Any]], str | None]:
    candidate_ids = fts.filter_candidates(query.filter, [fts.runs_scope(e) for e in experiment_ids], fts.RUN)
    if candidate_ids is None:
        views = [view for experiment_id in experiment_ids for view in store.experiment_runs(experiment_id)]
    else:
        views = search_rows.read_runs(sorted(candidate_ids))
    candidates = [search_rows.search_entity(view) for view in views if view.info["lifecycle_stage"] in stages]
    return query.run(candidates)


# --- the rank plan ---------------------------------------------------------------------------------------


def _rank_plan_applies(query: search.SearchQuery) -> bool:
    terms = [(t.type, t.key) for t in query.order_by]
    if len(terms) != 3 or terms[0][0] not in ("metric", "parameter"):
        return False
    if terms[1:] != [("attribute", "start_time"), ("attribute", "run_id")]:
        return False
    return all(kind == "attribute" and key != "run_name" for kind, key, _, _ in query.filter.normalized)


def _rank_start(query: search.SearchQuery) -> tuple[Any, bool]:
    """(value to resume the RANK walk at, whether the token is past every run having the key).

    A token's first position pair is (rank, value) of the order key: rank 0 is a value (resume at its
    group), rank 1 is NaN for metrics (resume at the NaN group) or "missing" for params, rank 2 is
    "missing" for metrics."""
    if query.position is None:
        return None, False
    rank, value = query.position[0]
    if query.order_by[0].type == "metric":
        if rank == 0 and isinstance(value, (int, float)):
            return float(value), False
        return (math.nan, False) if rank == 1 else (None, True)
    if rank == 0 and isinstance(value, str):
        return value, False
    return None, True


def _search_by_rank(query: search.SearchQuery, experiment_ids: list[str], stages: set[str]) -> tuple[list[dict[str, Any]], str | None]:
    term = query.order_by[0]
    field = "metrics" if term.type == "metric" else "params"
    limit = query.max_results
    values: dict[str, Any] = {}
    flagged = Flagged(experiment_ids)
    # A marked run's latest value of the order key is read once: the run read whole reads the rest of its partition.
    iter_groups = (
        functools.partial(ranks.iter_metric_groups, seen=flagged.latest) if term.type == "metric" else param_ranks.iter_param_groups
    )
    views: dict[str, RunView] = {}
    selected: list[dict[str, Any]] = []

    def load_ahead(groups: list[list[ranks.Ranked]]) -> None:
        # The next groups' runs whole, in one read: summaries (one BatchGetItem per 100), not a read per group.
        runs = [(r.experiment_id, r.run_id) for group in groups for r in group if r.run_id not in views]
        views.update(search_rows.read_views(runs, flagged))

    def load(group: list[ranks.Ranked]) -> dict[str, dict[str, Any]]:
        for ranked in group:
            values[ranked.run_id] = ranked.value
        return {r.run_id: views[r.run_id].info for r in group if r.run_id in views}

    def entity(item: dict[str, Any], with_value: bool) -> dict[str, Any]:
        data = {term.key: values[item["run_id"]]} if with_value else {}
        row = {"info": search_rows.info(item), "metrics": {}, "params": {}, "tags": {}, "datasets": [], field: data, "_item": item}
        if item["run_id"] in views:
            row["_view"] = views[item["run_id"]]
        return row

    def still_wanted() -> int:
        # One more than the page still needs (to know a next page exists); a top-up after the token's
        # own group was skipped is a handful of runs, not another page.
        return _LSI_PAGE_MAX if limit is None else max(1, limit + 2 - len(selected))

    def wanted(candidate: dict[str, Any]) -> bool:
        return candidate["info"]["lifecycle_stage"] in stages and query.matches(candidate) and query.is_after_token(candidate)

    # Every run the search considers may be flagged (a sweep logged a moment ago): then each is read once, whole.
    probes, whole = _probe_flagged(query, experiment_ids, stages, flagged)
    if whole:
        views = store.read_runs_of_items([item for probe in probes.values() for item in probe.items])
        return query.run([search_rows.search_entity(view) for view in views.values() if view.info["lifecycle_stage"] in stages])
    # Pages seek: the walk resumes at the token's value, so page N reads about what page 1 reads.
    start_value, past_values = _rank_start(query)
    full = False
    if not past_values:
        first_page = None if limit is None else limit + 2
        groups = iter_groups(experiment_ids, term.key, term.ascending, start_value, first_page, unindexed=flagged.items)
        for item in ranks.order_runs(_loaded_ahead(groups, load_ahead, still_wanted), load, query.order_by[1].ascending):
            candidate = entity(item, with_value=True)
            if wanted(candidate):
                selected.append(candidate)
                if limit is not None and len(selected) > limit:
                    full = True
                    break
    if not full:
        # Every run having the key has been passed: the runs lacking it follow, by start_time in the
        # query's own direction, then run_id ASC. They are told apart by the ids of the runs having
        # the key (RANK items only, no run item read), which a seek did not walk.
        if past_values or start_value is not None:
            for group in iter_groups(experiment_ids, term.key, term.ascending, unindexed=flagged.items):
                values.update((ranked.run_id, ranked.value) for ranked in group)
        ascending = query.order_by[1].ascending
        lacking_position = query.position[1:] if past_values and query.position else None
        runs_of = _lsi_query(stages, ascending, lacking_position, _status_filter(query))
        streams = [
            _ordered_runs(runs_of(experiment_id), ascending, _LSI_PAGE_MAX, None if lacking_position else probes.get(experiment_id))
            for experiment_id in experiment_ids
        ]
        direction = 1 if ascending else -1
        merged = (
            heapq.merge(*streams, key=lambda run: (direction * (run.get("start_time") or 0), run["run_id"]))
            if len(streams) > 1
            else streams[0]
        )
        for item in merged:
            if item["run_id"] in values:
                continue
            candidate = entity(item, with_value=False)
            if wanted(candidate):
                selected.append(candidate)
                if limit is not None and len(selected) > limit:
                    break
    page, token = search.page(selected, query.order_by, limit, None)
    search_rows.attach_views(page, flagged)
    return page, token


def _loaded_ahead(
    groups: Iterable[list[ranks.Ranked]], load: Callable[[list[list[ranks.Ranked]]], None], wanted: Callable[[], int]
) -> Iterator[list[ranks.Ranked]]:
    """The groups as they come, the runs of about ``wanted()`` runs' worth of them loaded before the first is passed on."""
    batch: list[list[ranks.Ranked]] = []
    size = 0
    for group in groups:
        batch.append(group)
        size += len(group)
        if size >= wanted():
            load(batch)
            yield from batch
            batch, size = [], 0
    if batch:
        load(batch)
        yield from batch


# --- the start-time plan ----------------------------------------------------------------------------------


def _start_time_plan_applies(query: search.SearchQuery) -> bool:
    terms = [(t.type, t.key) for t in query.order_by]
    if terms[-2:] != [("attribute", "start_time"), ("attribute", "run_id")] or len(terms) != 2:
        return False
    # Attribute filters read only the run item; run_name filters read the mlflow.runName tag.
    return all(kind == "attribute" and key != "run_name" for kind, key, _, _ in query.filter.normalized)


def _status_filter(query: search.SearchQuery) -> str | None:
    """The status an ``attributes.status = '...'`` comparison requires (read from LSI3), if any."""
    return next(
        (value for kind, key, comparator, value in query.filter.normalized if (kind, key, comparator) == ("attribute", "status", "=")), None
    )


def _lsi_query(stages: set[str], ascending: bool, position: list[list[Any]] | None, status: str | None = None) -> Callable[[str], KeyQuery]:
    """The run range to read in one experiment, starting at the token's start time.

    LSI3 (status, start time) when the filter names one status, LSI1 (lifecycle, start time) for one
    lifecycle stage, LSI2 (start time) else; the lifecycle and the filter are checked on each run."""
    if status is not None:
        pattern, fixed = "by_status", {"status": status}
    elif stages == {ACTIVE} or stages == {DELETED}:
        pattern, fixed = "by_lifecycle", {"lifecycle_stage": next(iter(stages))}
    else:
        pattern, fixed = "by_start_time", {}
    low: dict[str, Any] = {}
    high: dict[str, Any] = {}
    if position is not None:
        start_time = position[0][1]
        if isinstance(start_time, int) and keys.INT64_MIN <= start_time <= keys.INT64_MAX:
            (low if ascending else high)["start_time"] = start_time
    return lambda experiment_id: store.RUN.query(pattern, experiment_id=experiment_id, **fixed).range(low, high)


def _ordered_runs(runs: KeyQuery, ascending: bool, first_page: int, probed: _Probe | None = None) -> Iterator[dict[str, Any]]:
    """Run items of one experiment in (start_time, run_id ASC) order for the requested direction.

    The LSI orders equal start times by run id in the scan direction; a descending scan therefore
    buffers each group of equal start times and yields it by ascending run id, as MLflow's
    tie-breaker (run_id ASC) wants. Pages are fetched lazily (the first one sized for the page the
    caller wants, then doubling), so a page of n runs costs about n + 2 item reads. ``probed``: the
    range's first items as ``_probe_flagged`` read them (in this direction), not read again.
    """
    group: list[dict[str, Any]] = []
    for items in _run_pages(runs, ascending, first_page, probed):
        for item in items:
            if group and group[0]["start_time"] != item["start_time"]:
                yield from sorted(group, key=lambda run: run["run_id"])
                group = []
            group.append(item)
    yield from sorted(group, key=lambda run: run["run_id"])


def _run_pages(runs: KeyQuery, ascending: bool, first_page: int, probed: _Probe | None = None) -> Iterator[list[dict[str, Any]]]:
    page_size = first_page
    start_key: dict[str, Any] | None = None
    if probed is not None:
        yield probed.items
        if probed.last_key is None:
            return
        start_key = probed.last_key
    while True:
        last_key = None
        for items, page_last_key in table.query_pages(**runs, forward=ascending, limit=page_size, start_key=start_key):
            last_key = page_last_key
            yield items
        if not last_key:
            return
        start_key = last_key
        # Past the first page more runs are needed only to close a tie group or to replace runs a
        # filter rejected: start small, then grow.
        page_size = _LSI_PAGE_MIN if page_size == first_page else min(page_size * 2, _LSI_PAGE_MAX)


@dataclass
class _Probe:
    """The first run items of one experiment's LSI range, read while each carried its LSI5 flag."""

    items: list[dict[str, Any]]
    last_key: dict[str, Any] | None  # where the range goes on (None: read to its end)

    @property
    def whole(self) -> bool:
        """Every run of the range read, each flagged: no run summary of it can be trusted."""
        return self.last_key is None and all(run_summaries.FLAG_ATTRIBUTE in item for item in self.items)


def _probe_flagged(
    query: search.SearchQuery, experiment_ids: list[str], stages: set[str], flagged: Flagged
) -> tuple[dict[str, _Probe], bool]:
    """Each experiment's run items the rank plan's walk of the runs lacking the order key reads first, read ahead in
    growing pages (one item first) until one is not flagged or the range ends; and whether every run read is
    flagged, in every experiment (then the probes hold them all).

    When every run the search considers is flagged (a sweep logged a moment ago), their RANK items are all stale and
    each is read whole anyway: reading them once, by these items and the rest of their ranges, answers the search in
    one full read, where the rank walk reads every flagged run item on LSI5 and again in the walk of the runs lacking
    the key. Otherwise that walk starts with these items. An experiment whose LSI5 range shows no flagged run (two
    items read at most; a range read whole is the walk's own LSI5 read) is not probed."""
    ascending = query.order_by[1].ascending
    runs_of = _lsi_query(stages, ascending, None, _status_filter(query))
    probes: dict[str, _Probe] = {}
    for experiment_id in experiment_ids:
        if not flagged.may_flag_runs(experiment_id):
            return probes, False  # its runs are indexed (or it has none): the rank walk it is
        items: list[dict[str, Any]] = []
        start_key: dict[str, Any] | None = None
        for size in itertools.chain(_PROBE_PAGES, itertools.repeat(_LSI_PAGE_MAX)):
            last_key = None
            for page, page_last_key in table.query_pages(**runs_of(experiment_id), forward=ascending, limit=size, start_key=start_key):
                items.extend(page)
                last_key = page_last_key
            start_key = last_key
            if not last_key or any(run_summaries.FLAG_ATTRIBUTE not in item for item in items):
                break
        probes[experiment_id] = _Probe(items, start_key)
        if not probes[experiment_id].whole:
            return probes, False  # the rank walk it is: the other experiments' tails are read when reached
    return probes, True


def _search_by_start_time(
    query: search.SearchQuery, experiment_ids: list[str], stages: set[str]
) -> tuple[list[dict[str, Any]], str | None]:
    ascending = query.order_by[0].ascending
    runs_of = _lsi_query(stages, ascending, query.position, _status_filter(query))
    limit = query.max_results
    # One more than the page (to know whether a next page exists) and one for a tie at the edge.
    # After a token the range starts at the token's own start time, whose run is read again.
    extra = 2 if query.position is None else 3
    first_page = max(_LSI_PAGE_MIN, min(limit + extra, _LSI_PAGE_MAX)) if limit is not None else _LSI_PAGE_MAX
    streams = [
        ({"info": search_rows.info(item), "_item": item} for item in _ordered_runs(runs_of(experiment_id), ascending, first_page))
        for experiment_id in experiment_ids
    ]
    merged = heapq.merge(*streams, key=query.sort_key) if len(streams) > 1 else streams[0]
    selected: list[dict[str, Any]] = []
    for entity in merged:
        if entity["info"]["lifecycle_stage"] not in stages or not query.matches(entity) or not query.is_after_token(entity):
            continue
        selected.append(entity)
        if limit is not None and len(selected) > limit:
            break
    page, token = search.page(selected, query.order_by, limit, None)
    search_rows.attach_views(page, Flagged(experiment_ids))
    return page, token
