"""search_traces over the trace partitions: MLflow's filter grammar, order and page tokens, index-served.

The plan follows the first order term (MLflow's default order is timestamp_ms DESC, then request id):

* ``timestamp_ms`` (either way): the experiments' hours are walked from the directory, newest (oldest) first;
  the shards of one hour are merged, and the page stops in the hour where it fills. Each shard is read in time
  order: the table's key range, or the state index for ``status =``/``IN``, or the name index for ``name =``/
  ``IN``; any other name filter (``LIKE``, ``ILIKE``, ``RLIKE``, ``!=``, ``NOT IN``) reads the shard's distinct
  names (``store.trace_names``) and the name index for each name it meets.
* ``execution_time_ms``, ``status``, ``name``: every partition in the filter's time range is read through the
  index of that term, in that order, and merged (traces without the value, which MLflow sorts last, follow).
* any other first term (tags, metadata, run_id, end_time, request_id, experiment_id): every trace in the time
  range is read and sorted.

A page token is a position: the last trace's values of the order terms. The next page starts there in every
partition, so a token stays exact however the traces are spread over hours and shards, and costs what the
first page costs. As MLflow's store does, a full page carries a token (the page after may be empty).

While the table may still hold layout 1 traces (before the ``traces_v2`` migration step completes), the
experiment partitions are read as well, *before* the trace partitions: every layout 1 trace the page could
use is read first, so a trace the migration moves meanwhile is found in its old place or its new one, never
in neither (and ``streams.unique`` keeps one copy when it is found in both).
"""

from __future__ import annotations

import base64
import heapq
import itertools
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from serverless_mlflow.core.errors import invalid
from serverless_mlflow.index import fts
from serverless_mlflow.request import INT64_MAX, INT64_MIN, json_text
from serverless_mlflow.search import trace_grammar, trace_matching, trace_order
from serverless_mlflow.storage import layout, table
from serverless_mlflow.store import experiments as experiment_store
from serverless_mlflow.store import trace_names, trace_partitions
from serverless_mlflow.store import traces as store
from serverless_mlflow.store.trace_partitions import Partition

from . import streams, text

# Trace ids and names in a position are far shorter; a longer one was not written by this server.
MAX_TOKEN_TEXT = 1024

Item = dict[str, Any]
DEFAULT_MAX_RESULTS = 100
_TIME = "timestamp_ms"
_INDEXED_ATTRIBUTES = ("timestamp_ms", "status")


@dataclass
class Search:
    experiment_ids: list[str]
    clauses: list[dict[str, Any]]
    terms: list[trace_order.Term]
    need: int  # items to find after the position (the page, plus an old offset token's skip)
    position: list[Any] | None = None
    low: int | None = None  # request-time bounds (inclusive)
    high: int | None = None
    key: Callable[[Item], Any] = field(init=False)

    def __post_init__(self) -> None:
        self.key = trace_order.sort_key(self.terms)
        bounds = trace_matching.time_bounds(self.clauses)
        self.low = _tighter(self.low, bounds[0], max)
        self.high = _tighter(self.high, bounds[1], min)
        self.after = trace_order.position_key(self.position, self.terms) if self.position is not None else None

    @property
    def first(self) -> trace_order.Term:
        return self.terms[0]

    @property
    def default_tail(self) -> bool:
        """Whether the terms after the first are MLflow's implied (timestamp desc, request id asc)."""
        return self.terms[1:] in ([trace_order.TIMESTAMP, trace_order.REQUEST_ID], [trace_order.REQUEST_ID])

    @property
    def indexed_only(self) -> bool:
        """Whether every filter is applied by the key range read (nothing read is dropped)."""
        names = trace_matching.name_equals(self.clauses)
        return all(
            (c["type"] == "attribute" and c["key"] in _INDEXED_ATTRIBUTES)
            or (names is not None and c["key"] == trace_grammar.TRACE_NAME_TAG)
            for c in self.clauses
        )

    def wanted(self, item: Item) -> bool:
        if store.is_expired(item) or not trace_matching.matches(store.with_tags(item), self.clauses):
            return False
        if self.after is not None and not self.after < self.key(item):
            return False
        return text.matches(item, self.clauses)  # span clauses last: they may read the trace's spans


def _tighter(current: int | None, other: int | None, pick: Callable[[int, int], int]) -> int | None:
    if current is None:
        return other
    return current if other is None else pick(current, other)


# --- entry points ------------------------------------------------------------------------------------


def search_traces(
    experiment_ids: list[str], filter_string: str | None, max_results: int | None, order_by: list[str] | None, page_token: str | None
) -> tuple[list[Item], str | None]:
    clauses = trace_grammar.parse_filter(filter_string)
    terms = trace_order.full_order(trace_grammar.parse_order_by(order_by))
    limit = max_results or DEFAULT_MAX_RESULTS
    position, offset = _decode(page_token, terms)
    # Another workspace's experiments hold no traces for this request.
    experiment_ids = [e for e in experiment_ids if experiment_store.in_request_workspace(str(e))]
    search = Search(experiment_ids, clauses, terms, limit + offset, position)
    page = list(itertools.islice(matching(search), offset, offset + limit))
    token = _encode(trace_order.term_values(page[-1], terms), terms) if page and len(page) == limit else None
    return page, token


def oldest(experiment_id: str, max_timestamp_millis: int | None, limit: int | None) -> list[Item]:
    """Traces with request time <= max, oldest first as MLflow deletes them (timestamp, then request id)."""
    terms = trace_order.full_order([("attribute", _TIME, True)])
    search = Search([experiment_id], [], terms, limit or 1000, high=max_timestamp_millis)
    found = matching(search)
    return list(itertools.islice(found, limit) if limit is not None else found)


def matching(search: Search) -> Iterator[Item]:
    """Every trace the search matches after its position, in MLflow's order, each once."""
    kind, key, _ = search.first
    if kind == "attribute" and key == _TIME:
        plan = _by_time
    elif kind == "attribute" and key == "execution_time_ms":
        plan = _by_execution_time
    elif kind == "attribute" and key == "status":
        plan = _by_state
    elif kind == "tag" and key == trace_grammar.TRACE_NAME_TAG:
        plan = _by_name
    else:
        plan = _sorted_in_memory
    layout1 = _layout1(search)  # read first (see the module docstring)
    return streams.unique(streams.merge([iter(layout1), plan(search)], search.key))


# --- page tokens -------------------------------------------------------------------------------------


def _encode(values: list[Any], terms: list[trace_order.Term]) -> str:
    token = {"p": values, "o": [list(term) for term in terms]}
    return base64.b64encode(json.dumps(token).encode("utf-8")).decode("ascii")


def _decode(page_token: str | None, terms: list[trace_order.Term]) -> tuple[list[Any] | None, int]:
    """(position, offset) of a page token; tokens of the earlier releases (offset, time+id) still work."""
    if not page_token:
        return None, 0
    try:
        token = json_text.loads(base64.b64decode(page_token, validate=True))
    except (ValueError, TypeError):
        raise invalid(f"Invalid page token, could not base64-decode: {page_token}") from None
    if not isinstance(token, dict) or not all(_token_field_ok(name, token[name]) for name in ("ts", "id", "offset") if name in token):
        raise invalid(f"Invalid page token: {page_token}")
    if "p" in token:
        if token.get("o") != [list(term) for term in terms] or not isinstance(token["p"], list) or len(token["p"]) != len(terms):
            raise invalid(f"Invalid page token: {page_token} (it belongs to a search with another order)")
        if not all(_position_value_ok(value) for value in token["p"]):
            raise invalid(f"Invalid page token: {page_token}")
        return token["p"], 0
    if "ts" in token and "id" in token and terms == trace_order.full_order([]):
        return [token["ts"], token["id"]], 0
    if isinstance(token.get("offset"), int) and token["offset"] >= 0:
        return None, token["offset"]
    raise invalid(f"Invalid page token: {page_token}")


def _token_field_ok(name: str, value: Any) -> bool:
    """A field of an earlier release's token: an int64 request time, a trace id, a non-negative offset (anything
    else is a forged token, answered as MLflow answers a token it cannot read)."""
    if name == "id":
        return isinstance(value, str) and len(value) <= MAX_TOKEN_TEXT
    if isinstance(value, bool) or not isinstance(value, int):
        return False
    return INT64_MIN <= value <= INT64_MAX and (name != "offset" or value >= 0)


def _position_value_ok(value: Any) -> bool:
    """A position this server wrote: an order term's value (text, an int64 time or duration, or none)."""
    if value is None:
        return True
    if isinstance(value, str):
        return len(value) <= MAX_TOKEN_TEXT
    return not isinstance(value, bool) and isinstance(value, int) and INT64_MIN <= value <= INT64_MAX


# --- layout 2: trace partitions ----------------------------------------------------------------------


def _hours(search: Search, low: int | None, high: int | None, descending: bool) -> Iterator[list[Partition]]:
    """The partitions of every searched experiment, one hour at a time, in hour order."""
    per_experiment = [trace_partitions.partitions(e, low, high, descending) for e in search.experiment_ids]
    merged = heapq.merge(*per_experiment, key=lambda p: p.bucket, reverse=descending)
    for _, group in itertools.groupby(merged, key=lambda p: p.bucket):
        yield list(group)


def _partitions(search: Search) -> list[Partition]:
    return [p for hour in _hours(search, search.low, search.high, True) for p in hour]


def _query(partition: Partition, pattern: str, **values: Any) -> Any:
    return store.TRACE.query(pattern, experiment_id=partition.experiment_id, bucket=partition.bucket, shard=partition.shard, **values)


def _time_range(query: Any, low: int | None, high: int | None, **fixed: Any) -> Any:
    return query.range({**fixed, "request_time": low}, {**fixed, "request_time": high})


def _group_by_time(search: Search) -> Callable[[Item], Any] | None:
    """What a time-ordered read must re-sort: runs of equal request times (by id), unless its order is MLflow's."""
    ascending = search.first[2]
    if ascending and search.default_tail:
        return None  # (time, id) ascending is the key order itself
    return lambda item: item.get("request_time", 0)


def _by_time(search: Search) -> Iterator[Item]:
    descending = not search.first[2]
    low, high = search.low, search.high
    if search.position is not None:
        low, high = (low, _tighter(high, search.position[0], min)) if descending else (_tighter(low, search.position[0], max), high)
    group = _group_by_time(search)
    names, states = trace_matching.name_equals(search.clauses), trace_matching.states_equal(search.clauses)
    name_clauses = trace_matching.name_clauses(search.clauses) if names is None else []
    for hour in _hours(search, low, high, descending):
        first = streams.first_page(search.need, len(hour), search.indexed_only)
        hour_streams = []
        for partition in hour:
            partition_names = names
            if name_clauses:
                partition_names, earlier = _matching_names(search, partition, name_clauses)
                hour_streams += earlier
            if partition_names is not None:
                ranges = [
                    _time_range(_query(partition, "by_name", trace_name=n), low, high, trace_name=n) for n in dict.fromkeys(partition_names)
                ]
            elif states is not None:
                ranges = [_time_range(_query(partition, "by_state", state=s), low, high, state=s) for s in states]
            else:
                ranges = [_time_range(_query(partition, "by_request_time"), low, high)]
            for key_range in ranges:
                items = streams.exact(streams.read_range(key_range, not descending, first), group, search.key)
                hour_streams.append(item for item in items if search.wanted(item))
        yield from streams.merge(hour_streams, search.key)


def _matching_names(search: Search, partition: Partition, clauses: list[dict[str, Any]]) -> tuple[list[str] | None, list[Iterator[Item]]]:
    """(the partition's names meeting the name clauses, or None to read it by time; streams of traces to add).

    On a table an earlier release wrote (``trace_names`` step not recorded), its traces have no name entry: a
    ``LIKE``/``ILIKE`` pattern adds the traces its trigram postings and "not yet indexed" flags name; any other
    name filter reads the partition by time."""
    found = trace_names.names(partition)
    if found is None or layout.trace_names_complete():
        return (None if found is None else [n for n in found if trace_matching.name_meets(n, clauses)]), []
    pattern = trace_matching.name_pattern(search.clauses)
    earlier = _candidates(search, partition, pattern) if pattern is not None else None
    if earlier is None:
        return None, []
    return [n for n in found if trace_matching.name_meets(n, clauses)], [earlier]


def _candidates(search: Search, partition: Partition, pattern: str) -> Iterator[Item] | None:
    """The partition's traces an earlier release's trace-name postings (and flags) name for ``pattern``, sorted;
    None when the pattern has no trigram to look up. Keys hold the request time: read through their locators."""
    trace_ids = fts.candidate_ids(partition.pk, fts.TRACE, pattern)
    if trace_ids is None:
        return None
    items = [i for i in store.info_items(sorted(trace_ids)) if i["pk"] == partition.pk]
    return iter(sorted((i for i in items if search.wanted(i) and _in_range(search, i)), key=search.key))


def _in_range(search: Search, item: Item) -> bool:
    time = item.get("request_time", 0)
    return (search.low is None or time >= search.low) and (search.high is None or time <= search.high)


def _ordered_partition(search: Search, partition: Partition, pattern: str, field: str, first: int) -> Iterator[Item]:
    """One partition's traces through the index of ``field`` (the first term), in MLflow's order, those without a
    value last (they are not in the index: read in time order, keeping the ones without it)."""
    ascending = search.first[2]
    query = _query(partition, pattern)
    at = search.position[0] if search.position is not None else None
    if search.position is None or at is not None:
        # Equal values with MLflow's tail (time desc, id asc) come time-descending walking backwards: only runs of
        # equal (value, time) need re-sorting, and a position bounds the walk by its time too. Otherwise every run
        # of equal values is re-sorted, and read whole.
        by_time = not ascending and search.default_tail
        if at is None:
            key_range = query.range()
        elif ascending:
            key_range = query.range({field: at}, None)
        else:
            key_range = query.range(None, {field: at, "request_time": search.position[1] if by_time else None})
        if by_time:
            group: Callable[[Item], Any] = lambda item: (item.get(field), item.get("request_time"))  # noqa: E731
        else:
            group = lambda item: item.get(field)  # noqa: E731
        items = streams.exact(streams.read_range(key_range, ascending, first), group, search.key)
        yield from (item for item in items if search.wanted(item))
    tail = streams.exact(
        streams.read_range(_time_range(_query(partition, "by_request_time"), search.low, search.high), False, first),
        _group_by_time(search),
        search.key,
    )
    yield from (item for item in tail if item.get(field) is None and search.wanted(item))


def _by_execution_time(search: Search) -> Iterator[Item]:
    partitions = _partitions(search)
    first = streams.first_page(search.need, len(partitions), False)
    parts = [_ordered_partition(search, p, "by_execution_time", "execution_duration", first) for p in partitions]
    return streams.merge(parts, search.key)


def _by_name(search: Search) -> Iterator[Item]:
    partitions = _partitions(search)
    first = streams.first_page(search.need, len(partitions), False)
    parts = [_ordered_partition(search, p, "by_name", "trace_name", first) for p in partitions]
    return streams.merge(parts, search.key)


def _by_state(search: Search) -> Iterator[Item]:
    """Each state's traces newest first (the state index), states in the term's order, then merged."""
    ascending = search.first[2]
    states = sorted(trace_matching.states_equal(search.clauses) or store.STATES, reverse=not ascending)
    if search.position is not None:
        at = search.position[0]
        states = [s for s in states if (s >= at if ascending else s <= at)]
    partitions = _partitions(search)
    first = streams.first_page(search.need, len(partitions), False)
    group = (lambda item: item.get("request_time")) if search.default_tail else (lambda item: item.get("state"))

    def states_of(partition: Partition) -> Iterator[Item]:
        for state in states:
            high = search.high
            if search.position is not None and search.default_tail and state == search.position[0]:
                high = _tighter(high, search.position[1], min)  # the state's traces come newest first
            key_range = _time_range(_query(partition, "by_state", state=state), search.low, high, state=state)
            items = streams.exact(streams.read_range(key_range, False, first), group, search.key)
            yield from (item for item in items if search.wanted(item))

    return streams.merge([states_of(p) for p in partitions], search.key)


def _sorted_in_memory(search: Search) -> Iterator[Item]:
    """Orders no index serves: every trace in the time range, sorted."""
    found = []
    for partition in _partitions(search):
        key_range = _time_range(_query(partition, "by_request_time"), search.low, search.high)
        found += [item for item in streams.read_range(key_range, False, streams.PAGE_MAX) if search.wanted(item)]
    return iter(sorted(found, key=search.key))


# --- layout 1: the experiment partitions, until the migration has moved every trace -------------------------


def _layout1(search: Search) -> list[Item]:
    """The layout 1 traces the page could use, in order (at most ``need`` after the position), read in full
    before any trace partition; nothing once the table holds none."""
    if not layout.layout1_traces_possible():
        return []
    found: list[Item] = []
    for experiment_id in search.experiment_ids:
        found += itertools.islice(_layout1_experiment(search, experiment_id), search.need)
    return sorted(found, key=search.key)[: search.need]


def _layout1_experiment(search: Search, experiment_id: str) -> Iterator[Item]:
    """One experiment's layout 1 traces the search matches, in order: its time and state indexes read lazily
    for a time order; otherwise (and for a name) every candidate, sorted."""
    names, states = trace_matching.name_equals(search.clauses), trace_matching.states_equal(search.clauses)
    pattern = trace_matching.name_pattern(search.clauses) if names is None else None
    scope = store.TRACE_V1.pk.render({"experiment_id": experiment_id})
    trace_ids = fts.candidate_ids(scope, fts.TRACE, pattern) if pattern is not None else None
    by_time = search.first[:2] == trace_order.TIMESTAMP[:2]
    descending = not search.first[2]
    low, high = search.low, search.high
    if by_time and search.position is not None:
        low, high = (low, _tighter(high, search.position[0], min)) if descending else (_tighter(low, search.position[0], max), high)
    if trace_ids is not None:
        items: Any = table.batch_get([store.TRACE_V1.key(experiment_id=experiment_id, trace_id=t) for t in trace_ids])
    elif names is not None:
        items = [
            i
            for n in dict.fromkeys(names)
            for i in table.query(**store.TRACE_V1.query("by_name", experiment_id=experiment_id, trace_name=n))
        ]
    else:
        ranges = (
            [_time_range(store.TRACE_V1.query("by_state", experiment_id=experiment_id, state=s), low, high, state=s) for s in states]
            if states is not None
            else [_time_range(store.TRACE_V1.query("by_request_time", experiment_id=experiment_id), low, high)]
        )
        if by_time:
            first = streams.first_page(search.need, len(ranges), search.indexed_only)
            ordered = [streams.exact(streams.read_range(r, not descending, first), _group_by_time(search), search.key) for r in ranges]
            return (i for i in streams.merge(ordered, search.key) if search.wanted(i) and _in_range(search, i))
        items = [i for r in ranges for i in table.iter_query(**r)]
    return iter(sorted((i for i in items if search.wanted(i) and _in_range(search, i)), key=search.key))
