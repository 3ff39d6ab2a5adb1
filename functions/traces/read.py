"""Reading traces: info, whole traces with spans, batch get, and search (MLflow's filter grammar and order).

Search in MLflow's default order (request time descending, then trace id) walks lsi2 backwards in every
requested experiment, merged, from the page token's position: a page reads about one page of items however
many traces the experiment holds; a ``timestamp_ms`` range narrows the key range, a name equality reads just
that name's traces from lsi4. Other orders sort the matching traces in memory (offset page tokens).
"""

from __future__ import annotations

import base64
import heapq
import json
from collections.abc import Iterator
from typing import Any

from google.protobuf.json_format import MessageToDict
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from serverless_mlflow import fts, s3, table
from serverless_mlflow.errors import invalid
from serverless_mlflow.request import INT64_MAX, INT64_MIN
from serverless_mlflow.search import traces as grammar
from serverless_mlflow.store import experiments as experiment_store
from serverless_mlflow.store import traces as store

# Items of every time stream are merged on this index's sort key (request time, then trace id).
BY_TIME_SK = store.TRACE.patterns["by_request_time"].sk_attr
DEFAULT_MAX_RESULTS = 100


def get_trace_info(trace_id: str) -> dict[str, Any]:
    return store.info_json(store.get_info_item(trace_id))


def _span(item: dict[str, Any]) -> Span:
    if item.get("spill_key"):
        payload = s3.client().get_object(Bucket=s3.bucket_name(), Key=item["spill_key"])["Body"].read()
    else:
        payload = bytes(item["span"])
    span = Span()
    span.ParseFromString(payload)
    return span


def stored_spans(info: dict[str, Any]) -> list[Span]:
    """The trace's stored spans as OTLP messages, in start-time order."""
    items = store.span_items(info["experiment_id"], info["trace_id"])
    items.sort(key=lambda i: (i.get("start_time_unix_nano", 0), i["sk"]))
    return [_span(item) for item in items]


def _spans_json(info: dict[str, Any]) -> list[dict[str, Any]]:
    return [MessageToDict(span, preserving_proto_field_name=True) for span in stored_spans(info)]


def get_trace(trace_id: str) -> dict[str, Any]:
    info = store.get_info_item(trace_id)
    return {"trace_info": store.info_json(info), "spans": _spans_json(info)}


def batch_get_traces(trace_ids: list[str], experiment_ids: list[str] | None) -> list[dict[str, Any]]:
    infos = {item["trace_id"]: item for item in store.info_items(trace_ids)}
    out = []
    for trace_id in dict.fromkeys(trace_ids):
        info = infos.get(trace_id)
        if info is None or (experiment_ids is not None and info["experiment_id"] not in experiment_ids):
            continue
        out.append({"trace_info": store.info_json(info), "spans": _spans_json(info)})
    return out


def batch_get_trace_infos(trace_ids: list[str], experiment_ids: list[str] | None) -> list[dict[str, Any]]:
    infos = {item["trace_id"]: item for item in store.info_items(trace_ids)}
    return [
        store.info_json(infos[t])
        for t in dict.fromkeys(trace_ids)
        if t in infos and (experiment_ids is None or infos[t]["experiment_id"] in experiment_ids)
    ]


# --- search --------------------------------------------------------------------------------------


def _encode(token: dict[str, Any]) -> str:
    return base64.b64encode(json.dumps(token).encode("utf-8")).decode("ascii")


def _decode(page_token: str | None) -> dict[str, Any] | None:
    if not page_token:
        return None
    try:
        token = json.loads(base64.b64decode(page_token, validate=True))
    except (ValueError, TypeError):
        raise invalid(f"Invalid page token, could not base64-decode: {page_token}") from None
    if not isinstance(token, dict) or not all(_token_field_ok(name, token[name]) for name in ("ts", "id", "offset") if name in token):
        raise invalid(f"Invalid page token: {page_token}")
    return token


def _token_field_ok(name: str, value: Any) -> bool:
    """A token this server wrote: an int64 request time, a trace id, a non-negative offset (anything else is a
    forged token, answered as MLflow answers a token it cannot read)."""
    if name == "id":
        return isinstance(value, str)
    if isinstance(value, bool) or not isinstance(value, int):
        return False
    return INT64_MIN <= value <= INT64_MAX and (name != "offset" or value >= 0)


def search_traces(
    experiment_ids: list[str], filter_string: str | None, max_results: int | None, order_by: list[str] | None, page_token: str | None
) -> tuple[list[dict[str, Any]], str | None]:
    clauses = grammar.parse_filter(filter_string)
    order = grammar.parse_order_by(order_by)
    limit = max_results or DEFAULT_MAX_RESULTS
    token = _decode(page_token)
    normalized = [str(experiment_store.normalize_experiment_id(e)) for e in experiment_ids]
    if not order or order == [("attribute", "timestamp_ms", False)]:
        items, next_position = _search_by_time(normalized, clauses, limit, token)
        return [store.info_json(i) for i in items], (_encode(next_position) if next_position else None)
    offset = int((token or {}).get("offset", 0))
    matched = [item for item in _candidates(normalized, clauses) if not store.is_expired(item) and grammar.matches(item, clauses)]
    matched.sort(key=grammar.sort_key(order))
    page = matched[offset : offset + limit]
    more = offset + limit < len(matched)
    return [store.info_json(i) for i in page], (_encode({"offset": offset + limit}) if more else None)


def _time_stream(
    experiment_id: str, low: int | None, high: int | None, before_ts: int | None, page_size: int | None = None, state: str | None = None
) -> Iterator[dict[str, Any]]:
    """Info items of one experiment by request time, newest first, read lazily: lsi2, or lsi3 for one state."""
    if state is None:
        stream = store.TRACE.query("by_request_time", experiment_id=experiment_id)
    else:
        stream = store.TRACE.query("by_state", experiment_id=experiment_id, state=state)
    hi = stream.ceiling(request_time=high)
    if before_ts is not None:
        hi = min(hi, stream.ceiling(request_time=before_ts))
    yield from table.iter_query(**stream.between(stream.bound(request_time=low), hi), forward=False, page_size=page_size)


def _name_items(experiment_ids: list[str], names: list[str]) -> list[dict[str, Any]]:
    out = []
    for experiment_id in experiment_ids:
        for name in dict.fromkeys(names):
            out.extend(table.query(**store.TRACE.query("by_name", experiment_id=experiment_id, trace_name=name)))
    return out


def _narrowed_items(experiment_ids: list[str], clauses: list[dict[str, Any]]) -> list[dict[str, Any]] | None:
    """The traces a name filter allows, read without listing the experiments (None: no such filter).

    ``name = / IN`` reads those names from lsi4; ``name LIKE / ILIKE`` with a trigram reads the trace-name
    FTS postings (plus names the indexer has not processed yet) and batch-reads those traces.
    """
    names = grammar.name_equals(clauses)
    if names is not None:
        return _name_items(experiment_ids, names)
    pattern = grammar.name_pattern(clauses)
    if pattern is None:
        return None
    candidates = fts.trace_candidates(experiment_ids, pattern)
    if candidates is None:
        return None
    keys_ = [store.TRACE.key(experiment_id=e, trace_id=t) for e in experiment_ids for t in candidates]
    return table.batch_get(keys_)


def _candidates(experiment_ids: list[str], clauses: list[dict[str, Any]]) -> list[dict[str, Any]]:
    narrowed = _narrowed_items(experiment_ids, clauses)
    if narrowed is not None:
        return narrowed
    low, high = grammar.time_bounds(clauses)
    states = grammar.states_equal(clauses)
    return [item for e in experiment_ids for state in (states or [None]) for item in _time_stream(e, low, high, None, state=state)]


def _position(item: dict[str, Any]) -> tuple[int, str]:
    return (-int(item.get("request_time", 0)), item["trace_id"])


def _search_by_time(
    experiment_ids: list[str], clauses: list[dict[str, Any]], limit: int, token: dict[str, Any] | None
) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    after = (-int(token["ts"]), str(token["id"])) if token and "ts" in token and "id" in token else None
    narrowed = _narrowed_items(experiment_ids, clauses)
    if narrowed is not None:
        stream: Iterator[dict[str, Any]] = iter(sorted(narrowed, key=lambda i: i[BY_TIME_SK], reverse=True))
    else:
        low, high = grammar.time_bounds(clauses)
        states = grammar.states_equal(clauses)
        # Ties on the request time are ordered by trace id ascending: start at the token's millisecond.
        before_ts = -after[0] if after else None
        # One page (plus the look-ahead item) per request when the key range is the filter; other filters read
        # wider pages (a page token's own trace is read again and skipped: one more item).
        indexed_only = all(c["type"] == "attribute" and c["key"] in ("timestamp_ms", "status") for c in clauses)
        page_size = limit + 1 + (1 if after else 0) if indexed_only else min(1000, 4 * (limit + 1))
        streams = [_time_stream(e, low, high, before_ts, page_size, state) for e in experiment_ids for state in (states or [None])]
        stream = heapq.merge(*streams, key=lambda i: i[BY_TIME_SK], reverse=True)
    found: list[dict[str, Any]] = []
    for item in stream:
        if store.is_expired(item):
            continue
        if after is not None and _position(item) <= after:
            continue
        if not grammar.matches(item, clauses):
            continue
        # Keep every trace sharing the page's last millisecond (ties go by trace id), then one look-ahead item.
        found.append(item)
        if len(found) > limit and item.get("request_time") != found[limit - 1].get("request_time"):
            break
    found.sort(key=_position)
    page = found[:limit]
    more = len(found) > limit
    last = page[-1] if page else None
    return page, ({"ts": int(last.get("request_time", 0)), "id": last["trace_id"]} if more and last else None)
