"""How a trace info item meets a parsed trace filter (``trace_grammar``), and the index key ranges it implies.

Comparisons follow the SQL store (IN, LIKE/ILIKE, RLIKE, the numeric ones); a run's traces are those logged under
it and those linked to it; span clauses are met by one span (``span_matches``, on the trace's spans). The key
ranges (request time, trace names, states, the name clauses a partition's names are matched with) let the search
read an index instead of every trace.
"""

from __future__ import annotations

import math
import re
from typing import Any

from serverless_mlflow.core.errors import invalid
from serverless_mlflow.search.like import like_match
from serverless_mlflow.search.trace_grammar import LINKED_PROMPTS_TAG, SOURCE_RUN, TRACE_NAME_TAG
from serverless_mlflow.storage import issue_links
from serverless_mlflow.storage.keys import INT64_MAX, INT64_MIN


def _tags(item: dict[str, Any]) -> dict[str, str]:
    tags = dict(item.get("tags") or {})
    if item.get("trace_name") is not None:
        tags[TRACE_NAME_TAG] = item["trace_name"]
    return tags


def attribute(item: dict[str, Any], key: str) -> Any:
    if key == "request_id":
        return item["trace_id"]
    if key == "timestamp_ms":
        return item.get("request_time", 0)
    if key == "execution_time_ms":
        return item.get("execution_duration")
    if key == "end_time_ms":
        duration = item.get("execution_duration")
        return None if duration is None else item.get("request_time", 0) + duration
    if key == "status":
        return item.get("state")
    if key == "client_request_id":
        return item.get("client_request_id")
    if key == "experiment_id":
        return int(item["experiment_id"])
    return None


def value_of(item: dict[str, Any], kind: str, key: str) -> Any:
    if kind == "tag":
        return _tags(item).get(key)
    if kind == "request_metadata":
        return (item.get("trace_metadata") or {}).get(key)
    return attribute(item, key)


def _compare(comparator: str, lhs: Any, value: Any) -> bool:
    if comparator in ("IN", "NOT IN"):
        found = lhs in value
        return found if comparator == "IN" else not found
    if comparator == "LIKE":
        return like_match(str(lhs), value, case_sensitive=True)
    if comparator == "ILIKE":
        return like_match(str(lhs), value, case_sensitive=False)
    if comparator == "RLIKE":
        return re.search(value, str(lhs)) is not None
    if comparator == "=":
        return lhs == value
    if comparator == "!=":
        return lhs != value
    if comparator == ">":
        return lhs > value
    if comparator == ">=":
        return lhs >= value
    if comparator == "<":
        return lhs < value
    if comparator == "<=":
        return lhs <= value
    return False


def span_clauses(clauses: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The clauses one of a trace's spans must meet together (``span.content``, ``span.name/type/status``)."""
    return [clause for clause in clauses if clause["type"] == "span"]


def span_matches(fields: dict[str, Any], clauses: list[dict[str, Any]]) -> bool:
    """Whether one span (``content``, ``name``, ``type``, ``status`` as MLflow's spans table holds them) meets
    every span clause: SQL's comparison on that span's row."""
    for clause in clauses:
        lhs = fields.get(clause["key"])
        if lhs is None or not _compare(clause["comparator"].upper(), lhs, clause["value"]):
            return False
    return True


def matches(item: dict[str, Any], clauses: list[dict[str, Any]]) -> bool:
    """The clauses a trace info answers (span clauses are checked on the trace's spans: ``span_matches``)."""
    for clause in clauses:
        kind, key, comparator, value = clause["type"], clause["key"], clause["comparator"].upper(), clause["value"]
        if kind == "span":
            continue
        if kind == "issue":  # issue.id = '<id>' (the only issue clause the grammar admits)
            if value not in issue_links.issue_ids(item):
                return False
            continue
        if kind == "request_metadata" and key == SOURCE_RUN and comparator in ("=", "IN"):
            # A run's traces are those logged under it and those linked to it (link-to-run).
            linked = set(item.get("linked_runs") or ())
            runs = {(item.get("trace_metadata") or {}).get(SOURCE_RUN)} | linked
            wanted = {value} if comparator == "=" else set(value)
            if not runs & wanted:
                return False
            continue
        if kind == "tag" and key == LINKED_PROMPTS_TAG:
            if value not in (item.get("linked_prompts") or ()):
                return False
            continue
        if comparator == "IS NULL":
            if value_of(item, kind, key) is not None:
                return False
            continue
        if comparator == "IS NOT NULL":
            if value_of(item, kind, key) is None:
                return False
            continue
        lhs = value_of(item, kind, key)
        if lhs is None or not _compare(comparator, lhs, value):
            return False
    return True


def time_bounds(clauses: list[dict[str, Any]]) -> tuple[int | None, int | None]:
    """Inclusive request-time bounds implied by ``timestamp_ms`` comparisons (lsi2 key range)."""
    low: int | None = None
    high: int | None = None
    for clause in clauses:
        if clause["type"] != "attribute" or clause["key"] != "timestamp_ms":
            continue
        value, comparator = clause["value"], clause["comparator"]
        if not isinstance(value, (int, float)) or not math.isfinite(value):
            continue  # the filter itself still applies to every trace read
        if isinstance(value, int) and not INT64_MIN <= value <= INT64_MAX:
            # MLflow's store fails on it ("Python int too large to convert to SQLite INTEGER", a 500).
            raise invalid(f"Invalid value {value} for the trace timestamp filter: outside the 64-bit integer range.")
        if comparator in (">", ">="):
            bound = int(value) + 1 if comparator == ">" and float(value).is_integer() else int(-(-value // 1))
            low = bound if low is None else max(low, bound)
        elif comparator in ("<", "<="):
            bound = int(value) - 1 if comparator == "<" and float(value).is_integer() else int(value // 1)
            high = bound if high is None else min(high, bound)
        elif comparator == "=":
            low = int(value) if low is None else max(low, int(value))
            high = int(value) if high is None else min(high, int(value))
    # A bound past int64 (a timestamp no trace has) reads to the end of the key range; the filter decides.
    return (None if low is None else min(max(low, INT64_MIN), INT64_MAX)), (None if high is None else min(max(high, INT64_MIN), INT64_MAX))


def name_equals(clauses: list[dict[str, Any]]) -> list[str] | None:
    """Trace names an equality/IN filter on the trace name restricts the search to (lsi4), if any."""
    for clause in clauses:
        if clause["type"] == "tag" and clause["key"] == TRACE_NAME_TAG:
            if clause["comparator"] == "=":
                return [clause["value"]]
            if clause["comparator"].upper() == "IN":
                return list(clause["value"])
    return None


def states_equal(clauses: list[dict[str, Any]]) -> list[str] | None:
    """Trace states a ``status =`` / ``IN`` filter restricts the search to (read from lsi3), if any."""
    for clause in clauses:
        if clause["type"] == "attribute" and clause["key"] == "status":
            if clause["comparator"] == "=":
                return [clause["value"]]
            if clause["comparator"].upper() == "IN":
                return list(dict.fromkeys(clause["value"]))
    return None


def name_clauses(clauses: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The clauses on the trace name that only a named trace meets (every comparator but ``IS NULL``): a search
    with any of them reads just the partition names meeting all of them (``name_meets``), through the name index."""
    return [c for c in clauses if c["type"] == "tag" and c["key"] == TRACE_NAME_TAG and c["comparator"].upper() != "IS NULL"]


def name_meets(name: str, clauses: list[dict[str, Any]]) -> bool:
    """Whether a trace named ``name`` meets every clause of ``name_clauses`` (as ``matches`` compares it)."""
    return all(c["comparator"].upper() == "IS NOT NULL" or _compare(c["comparator"].upper(), name, c["value"]) for c in clauses)


def name_pattern(clauses: list[dict[str, Any]]) -> str | None:
    """The LIKE/ILIKE pattern of a trace-name filter (trace-name FTS narrows the search with it)."""
    for clause in clauses:
        if clause["type"] == "tag" and clause["key"] == TRACE_NAME_TAG and clause["comparator"].upper() in ("LIKE", "ILIKE"):
            return clause["value"]
    return None
