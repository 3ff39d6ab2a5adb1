"""search_runs filters answered from the value-ordered RANK items (metric_rank, param_rank, tag_rank).

A filter comparison on a metric (``<``, ``<=``, ``>``, ``>=``, ``=``), or on a param or tag (``=``,
case-sensitive ``LIKE`` with a literal prefix) names a key range of RANK items: every run that satisfies it
has an item in that range, or has a source item not indexed yet (LSI5 flag set; for metrics, a run marked by
``metric_marks``), which is added too. The
range may hold more (stale items, the boundary values of strict comparisons): callers apply MLflow's exact
filter to the candidates, so the result is never missing a run and never has a wrong one.

``RankTerm`` is every servable comparison on one key; ``servable_terms`` finds them in a parsed filter,
``race`` reads several terms' ranges side by side in growing pages and stops when the smallest is read
whole (its size is then known exactly, the others are only known to be larger): the most selective term
drives the search at a cost of about (number of terms) x (its size).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from serverless_mlflow.index import metric_marks, rank_items
from serverless_mlflow.search.filter_matching import compare
from serverless_mlflow.search.like import like_prefix
from serverless_mlflow.storage import keys, table
from serverless_mlflow.storage.schema import COLLECTIONS, ENTITY, ENTITY_TYPE, SK

_METRIC_LOWER = (">", ">=", "=")
_METRIC_UPPER = ("<", "<=", "=")
_SOURCE_TYPES = {"metric": "latest_metric", "parameter": "param", "tag": "run_tag"}
# A LIKE prefix longer than this may be cut in a truncated value key (see param_ranks._long_head): not served.
_MAX_PREFIX_BYTES = rank_items.PARAM_HEAD_BYTES - 4
_RACE_PAGES = (64, 256, 1000)
_BATCH_GET_CHUNK = 100


@dataclass(frozen=True)
class RankTerm:
    """Every servable comparison of a filter on one key (they all hold for a match)."""

    key_type: str  # "metric" | "parameter" | "tag"
    key: str
    comparisons: tuple[tuple[str, Any], ...]

    @property
    def source_type(self) -> str:
        return _SOURCE_TYPES[self.key_type]

    def metric_bounds(self) -> tuple[float | None, float | None]:
        """(lowest, highest) value a match can have (None = unbounded); metric terms only."""
        lows = [v for c, v in self.comparisons if c in _METRIC_LOWER]
        highs = [v for c, v in self.comparisons if c in _METRIC_UPPER]
        return (max(lows) if lows else None, min(highs) if highs else None)

    def past(self, value: float, ascending: bool) -> bool:
        """True when no value after ``value`` in a walk of this direction can match (metric terms)."""
        if math.isnan(value):
            return True  # NaN follows every number and satisfies no range comparison
        bounding = _METRIC_UPPER if ascending else _METRIC_LOWER
        return any(c in bounding and not compare(c, value, v) for c, v in self.comparisons)

    def ranges(self, experiment_id: str) -> list[tuple[str, dict[str, Any]]]:
        """(partition, query arguments of ``table.query_pages``) of the key ranges holding every indexed match."""
        if self.key_type == "metric":
            query = rank_items.METRIC_RANK.query("by_value", experiment_id=experiment_id, key=self.key)
            prefix = query.bound()
            low, high = self.metric_bounds()
            lo = prefix if low is None else prefix + keys.float64(low)
            hi = prefix + keys.float64(math.nan) if high is None else prefix + keys.float64(high) + "#~"
            return [(query.pk_value, {"sk_between": (lo, hi)})] if lo <= hi else []
        rank_entity, _ = rank_items.STRING_RANKS[self.key_type]
        query = rank_entity.query("by_value", experiment_id=experiment_id, key=self.key)
        prefix = query.bound()
        exact = _exact_values(self.comparisons)
        if exact is not None:
            return [(query.pk_value, {"sk_prefix": prefix + rank_items.param_value_key(v)}) for v in sorted(exact)]
        literal = max((like_prefix(v) for c, v in self.comparisons if c == "LIKE"), key=len)
        return [(query.pk_value, {"sk_prefix": prefix + keys.text(literal)[: -len(keys.TERMINATOR)]})]


def _exact_values(comparisons: Iterable[tuple[str, Any]]) -> set[str] | None:
    """The values `=` comparisons allow (one, or none when two differ), or None if there is no `=`."""
    allowed: set[str] | None = None
    for comparator, value in comparisons:
        if comparator == "=":
            allowed = {value} if allowed is None else allowed & {value}
    return allowed


def exact_values(term: RankTerm) -> set[str] | None:
    """The values a term's `=` comparisons allow (None: the term has no `=`)."""
    return _exact_values(term.comparisons)


def _servable(key_type: str, comparator: str, value: Any) -> bool:
    if key_type == "metric":
        return comparator in ("<", "<=", ">", ">=", "=") and not math.isnan(value)
    if key_type not in ("parameter", "tag"):
        return False
    if comparator == "=":
        return True
    if comparator == "LIKE" and isinstance(value, str):
        literal = like_prefix(value)
        return bool(literal) and len(keys.text(literal).encode("utf-8")) <= _MAX_PREFIX_BYTES
    return False


def servable_terms(normalized: Iterable[tuple[str, str, str, Any]]) -> list[RankTerm]:
    """The filter's comparisons that RANK ranges can answer, grouped by key (first appearance order)."""
    grouped: dict[tuple[str, str], list[tuple[str, Any]]] = {}
    for key_type, key, comparator, value in normalized:
        if _servable(key_type, comparator, value):
            grouped.setdefault((key_type, key), []).append((comparator, value))
    return [RankTerm(key_type, key, tuple(comparisons)) for (key_type, key), comparisons in grouped.items()]


# --- not yet indexed sources -------------------------------------------------------------------------


@dataclass
class Flagged:
    """The source items of some experiments whose RANK items may be missing or stale (LSI5 flag set).

    One LSI5 query per experiment and request: normally a handful of items (what the indexer has not
    reached yet)."""

    experiment_ids: list[str]
    _items: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    # What callers derive from the items once per request (e.g. the runs they make whole), by name.
    derived: dict[str, Any] = field(default_factory=dict)
    # Run id -> metric key -> its latest item as read by this request (None: the run lacks it).
    latest: dict[str, dict[str, dict[str, Any] | None]] = field(default_factory=dict)

    def items(self, experiment_id: str) -> list[dict[str, Any]]:
        if experiment_id not in self._items:
            pk = ENTITY["run"].pk.render({"experiment_id": experiment_id})
            self._items[experiment_id] = list(table.iter_query(**COLLECTIONS["unindexed"].query(scope=pk)))
        return self._items[experiment_id]

    def may_flag_runs(self, experiment_id: str) -> bool:
        """Whether a run item of the experiment may be flagged, from two LSI5 items at most: an indexed experiment's
        range holds only its own metadata item (indexed by update time, never a flag), and that whole answer is kept
        as its items, so the walk does not query it again."""
        if experiment_id in self._items:
            return any(item.get(ENTITY_TYPE) == "run" for item in self._items[experiment_id])
        pk = ENTITY["run"].pk.render({"experiment_id": experiment_id})
        first, more = next(table.query_pages(**COLLECTIONS["unindexed"].query(scope=pk), limit=2))
        if more is None:
            self._items[experiment_id] = first
        return more is not None or any(item.get(ENTITY_TYPE) == "run" for item in first)

    @property
    def loaded(self) -> bool:
        """Whether the request has read any experiment's LSI5 items."""
        return bool(self._items)

    def all_items(self) -> list[dict[str, Any]]:
        return [item for experiment_id in self.experiment_ids for item in self.items(experiment_id)]

    def run_ids(self, term: RankTerm) -> set[tuple[str, str]]:
        """(experiment id, run id) of the flagged sources of the term's key (for a metric: the marked runs, and
        layout-1 latest values still flagged): candidates whatever their RANK item says."""
        return set(self.current_values(term))

    def current_values(self, term: RankTerm) -> dict[tuple[str, str], Any]:
        """The term's flagged runs -> their current value of its key (``ABSENT``: the run lacks it; None: not
        read). A flagged source item is read with the LSI5 query (projected whole, consistently): its value is
        current. A marked run's latest metrics live in its partition: the caller reads them (``read_latest``)."""
        out: dict[tuple[str, str], Any] = {}
        for experiment_id in self.experiment_ids:
            items = self.items(experiment_id)
            for item in items:
                if item.get(ENTITY_TYPE) == term.source_type and item.get("key") == term.key:
                    value = rank_items.metric_value(item["value"]) if term.key_type == "metric" else item.get("value", "")
                    out[(experiment_id, rank_items.run_id_of(item))] = value
            if term.key_type == "metric":
                for run_id in metric_marks.marked_runs(items):
                    out.setdefault((experiment_id, run_id), None)
        return out


# Marks a run that lacks a key (its source item does not exist).
ABSENT = object()


def _fails(term: RankTerm, value: Any) -> bool:
    """Whether a run's current value of the term's key certainly fails the term (NaN and infinities are left
    to MLflow's exact filter, which compares them as its store does)."""
    if value is ABSENT:
        return True
    if term.key_type == "metric":
        if not isinstance(value, float) or math.isnan(value) or math.isinf(value):
            return False
        return not all(compare(c, value, v) for c, v in term.comparisons)
    return isinstance(value, str) and not all(compare(c, value, v) for c, v in term.comparisons)


def _read_latest(runs: list[tuple[str, str]], key: str, flagged: Flagged) -> dict[tuple[str, str], Any]:
    """Each run's latest value of metric ``key`` (``ABSENT`` without one), from its partition: one item per run.

    The items read (and the runs lacking one) are kept in ``flagged.latest``: a run read whole later in the request
    does not read them again."""
    out: dict[tuple[str, str], Any] = dict.fromkeys(runs, ABSENT)
    by_run = {run_id: experiment_id for experiment_id, run_id in runs}
    for _, run_id in runs:
        flagged.latest.setdefault(run_id, {})[key] = None
    keys_ = [source_key(experiment_id, run_id, "metric", key) for experiment_id, run_id in runs]
    for start in range(0, len(keys_), _BATCH_GET_CHUNK):
        for item in table.batch_get(keys_[start : start + _BATCH_GET_CHUNK]):
            run_id = run_id_of(item)
            if run_id in by_run:
                flagged.latest[run_id][key] = item
                out[(by_run[run_id], run_id)] = math.nan if item.get("is_nan") else rank_items.metric_value(item["value"])
    return out


# --- reading ranges ------------------------------------------------------------------------------------


Found = dict[tuple[str, str], Any]  # (experiment id, run id) -> the RANK item's value


def _range_pages(term: RankTerm, experiment_ids: list[str], first_page: int | None = None) -> Iterator[Found]:
    """(experiment id, run id) -> value of the term's RANK items, one growing page at a time (every range in turn)."""
    sizes = _page_sizes(first_page)
    for experiment_id in experiment_ids:
        for pk, query in term.ranges(experiment_id):
            start: dict[str, Any] | None = None
            while True:
                page: Found = {}
                last = None
                for items, page_last in table.query_pages(pk, limit=next(sizes), start_key=start, **query):
                    page.update(((experiment_id, item["run_id"]), _rank_value(term, item)) for item in items)
                    last = page_last
                yield page
                if not last:
                    break
                start = last


def _page_sizes(first: int | None) -> Iterator[int]:
    if first is not None:
        yield first
    yield from _RACE_PAGES
    while True:
        yield _RACE_PAGES[-1]


def _rank_value(term: RankTerm, item: dict[str, Any]) -> Any:
    return rank_items.metric_value(item["value"]) if term.key_type == "metric" else item["value"]


def _with_flagged(term: RankTerm, found: Found, flagged: Flagged, others: Iterable[RankTerm] = ()) -> Found:
    """The candidates with the term's flagged runs, whose RANK item may be stale or missing, decided on their
    current value: dropped when it fails the term, else added (value None: read their source). A candidate
    whose current value of another term's key (``others``: the filter's other servable terms) fails that term
    is dropped too: the filter holds only where every term does.

    While the indexer lags behind many writes (a sweep logged a moment ago) most runs are flagged: deciding on
    the values in hand (the LSI5 items, one latest metric per marked run) keeps the runs read whole to the
    ones that may match, instead of every flagged run's range after the LSI5 query already read them."""
    out = dict(found)
    for run, value in _current(term, flagged, None).items():
        if _fails(term, value):
            out.pop(run, None)
        else:
            out[run] = None
    for other in others:
        for run, value in _current(other, flagged, set(out)).items():
            if _fails(other, value):
                out.pop(run, None)
    return out


def _current(term: RankTerm, flagged: Flagged, among: set[tuple[str, str]] | None) -> dict[tuple[str, str], Any]:
    """The term's flagged runs (of ``among``, if given) -> their current value, marked runs' metrics read."""
    current = {run: value for run, value in flagged.current_values(term).items() if among is None or run in among}
    unread = [run for run, value in current.items() if value is None]
    if unread:
        current.update(_read_latest(unread, term.key, flagged))
    return current


def candidates(term: RankTerm, experiment_ids: list[str], flagged: Flagged) -> Found:
    """Every (experiment id, run id) that may satisfy ``term``, with its value when the RANK item is current
    (None: not indexed yet, read the source)."""
    found: Found = {}
    for page in _range_pages(term, experiment_ids):
        found.update(page)
    return _with_flagged(term, found, flagged)


def race(terms: list[RankTerm], experiment_ids: list[str], flagged: Flagged, cap: int | None = None) -> tuple[RankTerm, Found] | None:
    """The most selective term and its candidates: the ranges are read side by side, page by page, until
    one is exhausted (the others are at least as large, up to one page).

    With ``cap``, a term is dropped once more than ``cap`` of its runs are read (each first reads cap + 1
    items in one page), and None means that every term is larger than ``cap``."""
    if len(terms) == 1 and cap is None:
        return terms[0], candidates(terms[0], experiment_ids, flagged)
    readers = {index: _range_pages(term, experiment_ids, None if cap is None else cap + 1) for index, term in enumerate(terms)}
    found: list[Found] = [{} for _ in terms]
    while readers:
        for index, reader in list(readers.items()):
            page = next(reader, None)
            if page is None:
                others = [term for other, term in enumerate(terms) if other != index]
                return terms[index], _with_flagged(terms[index], found[index], flagged, others)
            found[index].update(page)
            if cap is not None and len(found[index]) > cap:
                del readers[index]
    return None


def source_key(experiment_id: str, run_id: str, key_type: str, key: str) -> dict[str, str]:
    """The key of the source item holding a run's value for ``key`` (latest metric: in the run's partition; param
    or tag: in the experiment's)."""
    return ENTITY[_SOURCE_TYPES[key_type]].key(experiment_id=experiment_id, run_id=run_id, key=key)


def source_kind(item: dict[str, Any]) -> str | None:
    """The search key type ("metric", "parameter", "tag") of a source item read by ``source_key`` (None for anything else)."""
    return {"latest_metric": "metric", "param": "parameter", "run_tag": "tag"}.get(item.get(ENTITY_TYPE, ""))


def run_id_of(item: dict[str, Any]) -> str:
    """The run of a source item read by ``source_key`` (a latest metric names it; a param or tag's key does)."""
    return item["run_id"] if "run_id" in item else item[SK].split("#")[1]
