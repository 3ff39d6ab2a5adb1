"""``traces/metrics`` and ``traces/calculate-filter-correlation``: MLflow's answers, read from rollups.

A metrics query is answered from the experiment's rollup items for every whole hour of its time range, and from
the raw rows (infos, spans, assessments) of the hours the range only partly covers, merged per group. A query
that neither groups by nor filters on a dimension reads the ungrouped level (one item per hour, ``rollups``), and
within the partial hours its per-minute items: raw rows are then read for the partial minutes at the edges only. A query
rollups cannot answer exactly is answered from raw rows alone: ``session_count`` (a distinct count), filters on
tags or metadata, a time interval that is not a whole number of hours, and MIN/MAX over a rollup whose extreme
was removed (``summary``). Raw reads cost one item per trace of the range (plus its spans for the spans view).

The correlation walks the traces of the base filter once and tests both filters on each (search_traces'
grammar, span content included): its cost grows with the number of traces, as the SQL store's does.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from serverless_mlflow.core.errors import invalid
from serverless_mlflow.core.validation.experiments import parse_experiment_id
from serverless_mlflow.index.trace_metrics import rollups, rows, spec
from serverless_mlflow.index.trace_metrics.summary import Summary
from serverless_mlflow.search import trace_grammar, trace_matching, trace_order
from serverless_mlflow.storage import layout, table
from serverless_mlflow.storage.schema import TRACE_BUCKET_MS
from serverless_mlflow.store import traces as store

from . import search, span_decoding, text

Item = dict[str, Any]
_FAMILY_OF = {
    (spec.TRACES, None): rollups.TRACE_ROWS,
    (spec.SPANS, "cost"): rollups.COST_ROWS,
    (spec.SPANS, None): rollups.SPAN_ROWS,
    (spec.ASSESSMENTS, None): rollups.ASSESSMENT_ROWS,
}
_COUNT_METRICS = {"trace_count", "span_count", "assessment_count"}


@dataclass(frozen=True)
class Query:
    experiment_ids: list[str]
    view_type: str
    metric_name: str
    aggregations: list[spec.Aggregation]
    dimensions: list[str]
    filters: list[spec.Filter]
    interval_ms: int | None
    start_ms: int | None
    end_ms: int | None
    max_results: int

    @property
    def family(self) -> str:
        cost = "cost" if self.view_type == spec.SPANS and self.metric_name in spec.COST_METRICS else None
        return _FAMILY_OF[(self.view_type, cost)]


@dataclass
class Group:
    count: int = 0
    summary: Summary = field(default_factory=Summary)


def query_trace_metrics(msg: dict[str, Any]) -> list[dict[str, Any]]:
    query = _query_of(msg)
    groups = _groups(query)
    return _data_points(query, groups)


# --- request -----------------------------------------------------------------------------------------


def _query_of(msg: dict[str, Any]) -> Query:
    view_type = msg.get("view_type")
    if isinstance(view_type, int) and not isinstance(view_type, bool) and 0 <= view_type < len(spec.VIEW_TYPES):
        view_type = spec.VIEW_TYPES[view_type]
    if view_type not in spec.VIEW_TYPES:
        raise invalid(f"Invalid value {view_type!r} for parameter 'view_type' supplied.")
    aggregations = [spec.aggregation_of(a) for a in msg.get("aggregations") or []]
    dimensions = list(msg.get("dimensions") or [])
    spec.validate(view_type, msg["metric_name"], aggregations, dimensions)
    interval = msg.get("time_interval_seconds")
    start, end = msg.get("start_time_ms"), msg.get("end_time_ms")
    if interval and (start is None or end is None):
        raise invalid("start_time_ms and end_time_ms are required if time_interval_seconds is set")
    experiment_ids = [str(parse_experiment_id(e)) for e in msg["experiment_ids"]]
    filters = [spec.parse_filter(f) for f in msg.get("filters") or []]
    spec.check_filters(filters, view_type)
    max_results = msg.get("max_results", spec.MAX_RESULTS_DEFAULT)
    return Query(
        experiment_ids,
        view_type,
        msg["metric_name"],
        aggregations,
        dimensions,
        filters,
        interval * 1000 if interval else None,
        start,
        end,
        max_results,
    )


# --- groups --------------------------------------------------------------------------------------------

GroupKey = tuple[int | None, tuple[str, ...]]


def _servable(query: Query) -> bool:
    """Whether rollups answer the query exactly (the rest is read raw)."""
    if query.metric_name == "session_count":
        return False
    if query.interval_ms is not None and query.interval_ms % TRACE_BUCKET_MS:
        return False
    dims = rollups.FAMILY_DIMENSIONS[query.family]
    return all(_filter_dimension(f) in dims for f in query.filters)


def _filter_dimension(f: spec.Filter) -> str | None:
    """The rollup dimension a filter selects on (None: a tag or metadata filter, answered raw)."""
    if f.view == "trace":
        if f.entity == "status":
            return "trace_status"
        if f.entity == "tag" and f.key == trace_grammar.TRACE_NAME_TAG:
            return "trace_name"
        return None
    return f"{f.view}_{f.entity}"


def _groups(query: Query) -> dict[GroupKey, Group]:
    if not _servable(query):
        return _raw_groups(query, query.start_ms, query.end_ms)
    needed = set(query.dimensions) | {_filter_dimension(f) for f in query.filters}
    # A table whose traces were aggregated before the coarse levels existed reads the full level until
    # ``make migrate`` has re-aggregated every trace (``layout.ROLLUP_LEVELS``).
    coarse = layout.rollup_levels_complete()
    level = rollups.level_for(query.family, needed) if coarse else rollups.FULL  # type: ignore[arg-type]
    # Whole hours from the level's hourly items; within the partial hours at the edges, whole minutes from the
    # level's per-minute items (ungrouped or per status), the rest (partial minutes) from raw rows.
    hours, edges = _split(query.start_ms, query.end_ms, TRACE_BUCKET_MS)
    reads: list[tuple[str, tuple[int | None, int | None]]] = [(query.family + level, hours)] if hours else []
    raw: list[tuple[int, int]] = []
    minute_level = _minute_level(query.family, level)
    for low, high in edges:
        minutes, rest = _split(low, high, rollups.MINUTE_MS) if minute_level else (None, [(low, high)])
        if minutes:
            reads.append((query.family + minute_level, minutes))
        raw += rest
    groups: dict[GroupKey, Group] = {}
    extremes_unknown = False
    for experiment_id in query.experiment_ids:
        for family, (first, last) in reads:
            for item in _rollup_items(family, experiment_id, first, last):
                rollup = rollups.Rollup.of_item(item)
                if not _dims_match(rollup.dims, query.filters):
                    continue
                key = _key(query, rollup.group_bucket * TRACE_BUCKET_MS, rollup.dims)
                if key is None:
                    continue
                group = groups.setdefault(key, Group())
                if query.metric_name in _COUNT_METRICS:
                    group.count += rollup.count
                elif (summary := rollup.metrics.get(query.metric_name)) is not None:
                    group.summary.merge(summary)
                    extremes_unknown = extremes_unknown or not summary.extremes_known
    if extremes_unknown and any(a.type in ("MIN", "MAX") for a in query.aggregations):
        return _raw_groups(query, query.start_ms, query.end_ms)
    for low, high in raw:
        for key, raw_group in _raw_groups(query, low, high, fill_empty=False).items():
            group = groups.setdefault(key, Group())
            group.count += raw_group.count
            group.summary.merge(raw_group.summary)
    _fill_empty(query, groups)
    return groups


def _minute_level(family: str, level: str) -> str | None:
    """The per-minute twin of an hourly level, if the family keeps it and every trace has been aggregated into it."""
    minute_level = rollups.MINUTE_LEVEL.get(level)
    if minute_level not in rollups.LEVELS[family]:
        return None
    if minute_level == rollups.BY_STATUS_MINUTE and not layout.status_minutes_complete():
        return None
    return minute_level


def _fill_empty(query: Query, groups: dict[GroupKey, Group]) -> None:
    """COUNT over no rows is a row of 0 (SQL's COUNT without GROUP BY), however the rows were read."""
    if not query.dimensions and not query.interval_ms and query.metric_name in _COUNT_METRICS | {"session_count"}:
        groups.setdefault((None, ()), Group())


def _split(low: int | None, high: int | None, unit: int) -> tuple[tuple[int | None, int | None] | None, list[tuple[int, int]]]:
    """The whole units (first, last; None: unbounded) inside [low, high], and the parts of it outside them."""
    first = None if low is None else -(-low // unit)
    last = None if high is None else (high + 1) // unit - 1
    if first is not None and last is not None and first > last:
        return None, [(low, high)] if low is not None and high is not None and low <= high else []  # type: ignore[list-item]
    rest = []
    if low is not None and first is not None and low < first * unit:
        rest.append((low, first * unit - 1))
    if high is not None and last is not None and (last + 1) * unit <= high:
        rest.append(((last + 1) * unit, high))
    return (first, last), rest


def _rollup_items(family: str, experiment_id: str, first: int | None, last: int | None) -> Iterator[Item]:
    yield from rollups.items_in_range(experiment_id, family, first, last)


def _dims_match(dims: dict[str, Any], filters: list[spec.Filter]) -> bool:
    return all(dims.get(_filter_dimension(f)) == f.value for f in filters)


def _key(query: Query, time_ms: int, dims: dict[str, Any]) -> GroupKey | None:
    """The group of a row: its time bucket (when bucketed) and requested dimensions (None if one is null)."""
    values = tuple(dims.get(d) for d in query.dimensions)
    if any(v is None for v in values):
        return None
    bucket = (time_ms // query.interval_ms) * query.interval_ms if query.interval_ms else None
    return bucket, values  # type: ignore[return-value]


# --- raw rows ------------------------------------------------------------------------------------------


def _infos(experiment_ids: list[str], low: int | None, high: int | None) -> Iterator[Item]:
    terms = trace_order.full_order([("attribute", "timestamp_ms", True)])
    yield from search.matching(search.Search(experiment_ids, [], terms, 10**12, low=low, high=high))


def _trace_filters_match(trace: rows.TraceRow, filters: list[spec.Filter]) -> bool:
    for f in filters:
        if f.view != "trace":
            continue
        if f.entity == "status" and trace.status != f.value:
            return False
        if f.entity == "tag" and trace.tags.get(f.key or "") != f.value:
            return False
        if f.entity == "metadata":
            if f.key == rows.SESSION_METADATA:
                if trace.session_id != f.value:
                    return False
            elif f.key == rows.TOKEN_USAGE_METADATA:
                return False  # compared column by column in MLflow; never equal to arbitrary text here
            elif trace.metadata.get(f.key or "") != f.value:
                return False
    return True


def _raw_groups(query: Query, low: int | None, high: int | None, fill_empty: bool = True) -> dict[GroupKey, Group]:
    groups: dict[GroupKey, Group] = {}
    sessions: dict[GroupKey, set[str]] = {}
    cost = query.family == rollups.COST_ROWS
    info_low = low
    if cost and low is not None:
        # A span is counted by its own start; it may have begun after its trace, by up to the longest duration.
        info_low = low - _longest_duration(query.experiment_ids)
    for info in _infos(query.experiment_ids, info_low, high):
        trace = rows.trace_row(info)
        if not _trace_filters_match(trace, query.filters):
            continue
        for time_ms, dims, value in _rows_of(query, info, trace):
            if cost and not ((low is None or time_ms >= low) and (high is None or time_ms <= high)):
                continue
            key = _key(query, time_ms, dims)
            if key is None:
                continue
            if query.metric_name == "session_count":
                if trace.session_id is not None:
                    sessions.setdefault(key, set()).add(trace.session_id)
                continue
            if query.metric_name in _COUNT_METRICS:
                groups.setdefault(key, Group()).count += 1
            elif value is not None:
                groups.setdefault(key, Group()).summary.add(value)
    for key, ids in sessions.items():
        groups.setdefault(key, Group()).count = len(ids)
    if fill_empty:
        _fill_empty(query, groups)
    return groups


def _rows_of(query: Query, info: Item, trace: rows.TraceRow) -> Iterable[tuple[int, dict[str, Any], float | None]]:
    base = {"trace_name": trace.name, "trace_status": trace.status}
    if query.view_type == spec.TRACES:
        value = trace.latency if query.metric_name == "latency" else trace.tokens.get(query.metric_name)
        yield trace.timestamp_ms, base, value
    elif query.view_type == spec.ASSESSMENTS:
        for row in rows.assessment_rows(info):
            dims = {**base, "assessment_name": row.name, "assessment_value": row.value, "assessment_type": row.type}
            if all(dims.get(_filter_dimension(f)) == f.value for f in query.filters if f.view == "assessment"):
                yield trace.timestamp_ms, dims, row.numeric
    else:
        for span in span_decoding.stored_spans(info):
            row = rows.span_row(span)
            dims = {
                **base,
                "span_name": row.name,
                "span_type": row.type,
                "span_status": row.status,
                "span_model_name": row.model_name,
                "span_model_provider": row.model_provider,
            }
            if not all(dims.get(_filter_dimension(f)) == f.value for f in query.filters if f.view == "span"):
                continue
            value = row.latency if query.metric_name == "latency" else row.costs.get(query.metric_name)
            yield row.start_ms, dims, value


def _longest_duration(experiment_ids: list[str]) -> int:
    metas = table.batch_get([rollups.META.key(experiment_id=e) for e in experiment_ids])
    return max([int(m.get("max_duration_ms") or 0) for m in metas] + [0])


# --- answer --------------------------------------------------------------------------------------------


def _value(query: Query, group: Group, aggregation: spec.Aggregation) -> float | None:
    if aggregation.type == "COUNT":
        return float(group.count) if query.metric_name in _COUNT_METRICS | {"session_count"} else float(group.summary.n)
    summary = group.summary
    if summary.n == 0:
        return None
    if aggregation.type == "SUM":
        return float(summary.sum)
    if aggregation.type == "AVG":
        return float(summary.sum) / summary.n
    if aggregation.type == "MIN":
        return float(summary.low) if summary.low is not None else None
    if aggregation.type == "MAX":
        return float(summary.high) if summary.high is not None else None
    value = summary.percentile(aggregation.percentile or 0.0)
    return float(value) if value is not None else None


def _data_points(query: Query, groups: dict[GroupKey, Group]) -> list[dict[str, Any]]:
    points = []
    for (bucket, values), group in sorted(groups.items(), key=lambda kv: (kv[0][0] or 0, kv[0][1])):
        answer = {a.label: v for a in query.aggregations if (v := _value(query, group, a)) is not None}
        if not answer:
            continue
        dims = dict(zip(query.dimensions, values, strict=True))
        if bucket is not None:
            dims = {"time_bucket": datetime.fromtimestamp(bucket / 1000, tz=UTC).isoformat(), **dims}
        point: dict[str, Any] = {"metric_name": query.metric_name, "values": answer}
        if dims:
            point["dimensions"] = dims
        points.append(point)
        if len(points) >= query.max_results:
            break
    return points


# --- filter correlation ---------------------------------------------------------------------------------


def calculate_filter_correlation(experiment_ids: list[str], filter1: str, filter2: str, base_filter: str | None) -> dict[str, Any]:
    normalized = [str(parse_experiment_id(e)) for e in experiment_ids]
    first = trace_grammar.parse_filter(f"{base_filter} and {filter1}" if base_filter else filter1)
    second = trace_grammar.parse_filter(f"{base_filter} and {filter2}" if base_filter else filter2)
    base = trace_grammar.parse_filter(base_filter) if base_filter else []
    total = in_first = in_second = joint = 0
    terms = trace_order.full_order([])
    for info in map(store.with_tags, search.matching(search.Search(normalized, base, terms, 10**12))):
        total += 1
        a = trace_matching.matches(info, first) and text.matches(info, first)
        b = trace_matching.matches(info, second) and text.matches(info, second)
        in_first += a
        in_second += b
        joint += a and b
    npmi, smoothed = _npmi(joint, in_first, in_second, total)
    return {
        "npmi": npmi,
        "npmi_smoothed": smoothed,
        "filter1_count": in_first,
        "filter2_count": in_second,
        "joint_count": joint,
        "total_count": total,
    }


def _npmi(joint: int, first: int, second: int, total: int) -> tuple[float, float]:
    """``calculate_npmi_from_counts``: unsmoothed (-1 when the filters never co-occur) and Jeffreys-smoothed."""
    nan = float("nan")
    if total <= 0 or first == 0 or second == 0:
        return nan, nan
    n11, n10, n01 = joint, first - joint, second - joint
    n00 = total - first - second + joint
    if min(n11, n10, n01, n00) < 0:
        return nan, nan
    plain = -1.0 if joint == 0 else _npmi_core(n11, n10, n01, n00, 0.0)
    return plain, _npmi_core(n11, n10, n01, n00, 0.5)


def _npmi_core(n11: float, n10: float, n01: float, n00: float, smoothing: float) -> float:
    a, b, c, d = n11 + smoothing, n10 + smoothing, n01 + smoothing, n00 + smoothing
    total, first, second = a + b + c + d, a + b, a + c
    if first <= 0 or second <= 0 or a <= 0:
        return float("nan")
    if n10 == 0 and n01 == 0 and n00 == 0:
        return 1.0
    pmi = (math.log(a) + math.log(total)) - (math.log(first) + math.log(second))
    return max(-1.0, min(1.0, pmi / -(math.log(a) - math.log(total))))
