"""MLflow's trace search grammar (``SearchTraceUtils``) and how a trace info item matches and sorts.

The grammar is the run grammar with the trace identifiers (``tag``, ``request_metadata``/``metadata``,
``attribute``/``trace``), the trace attribute keys and their aliases (``name`` -> the ``mlflow.traceName`` tag,
``run_id`` -> the ``mlflow.sourceRun`` metadata, ``timestamp`` -> ``timestamp_ms`` ...). ``trace.text`` /
``span.content`` and ``span.name/type/status`` are checked on the trace's spans (one span meeting every span
clause, as the SQL store's subquery has it). Span attribute, assessment and issue filters are refused with
INVALID_PARAMETER_VALUE rather than answered wrongly.
"""

from __future__ import annotations

import math
import re
from typing import Any, ClassVar

from serverless_mlflow.errors import invalid
from serverless_mlflow.keys import INT64_MAX, INT64_MIN
from serverless_mlflow.search.grammar import RunGrammar
from serverless_mlflow.search.like import like_match

TRACE_NAME_TAG = "mlflow.traceName"
SOURCE_RUN = "mlflow.sourceRun"
SPAN_CONTENT = "content"
SPAN_FIELDS = frozenset({"name", "type", "status"})
VALID_SPAN_CONTENT_COMPARATORS = {"LIKE", "ILIKE"}
VALID_SPAN_FIELD_COMPARATORS = {"!=", "=", "IN", "NOT IN", "LIKE", "ILIKE", "RLIKE"}
# ``prompt = "name/version"``: the prompt versions linked to the trace (link-prompts), not the tag's JSON text.
LINKED_PROMPTS_TAG = "mlflow.linkedPrompts"


class TraceGrammar(RunGrammar):
    """Port of ``SearchTraceUtils`` parsing."""

    VALID_SEARCH_ATTRIBUTE_KEYS: ClassVar[set[str]] = {
        "request_id",
        "timestamp",
        "timestamp_ms",
        "execution_time",
        "execution_time_ms",
        "end_time",
        "end_time_ms",
        "status",
        "client_request_id",
        "name",
        "run_id",
        "prompt",
        "text",
    }
    VALID_ORDER_BY_ATTRIBUTE_KEYS: ClassVar[set[str]] = {
        "experiment_id",
        "timestamp",
        "timestamp_ms",
        "execution_time",
        "execution_time_ms",
        "end_time",
        "end_time_ms",
        "status",
        "request_id",
        "name",
        "run_id",
    }
    NUMERIC_ATTRIBUTES: ClassVar[set[str]] = {
        "timestamp_ms",
        "timestamp",
        "execution_time_ms",
        "execution_time",
        "end_time_ms",
        "end_time",
    }
    VALID_TAG_COMPARATORS: ClassVar[set[str]] = {"!=", "=", "LIKE", "ILIKE", "RLIKE", "IS NULL", "IS NOT NULL"}
    VALID_STRING_ATTRIBUTE_COMPARATORS: ClassVar[set[str]] = {"!=", "=", "IN", "NOT IN", "LIKE", "ILIKE", "RLIKE"}
    VALID_METADATA_COMPARATORS: ClassVar[set[str]] = {"!=", "=", "LIKE", "ILIKE", "RLIKE", "IS NULL", "IS NOT NULL"}
    LIST_SUPPORTED_KEYS: ClassVar[frozenset[str] | None] = frozenset({"name", "status", "request_id", "run_id", "client_request_id"})

    _REQUEST_METADATA_IDENTIFIER = "request_metadata"
    _TAG_IDENTIFIER = "tag"
    _ATTRIBUTE_IDENTIFIER = "attribute"
    _SPAN_IDENTIFIER = "span"
    _ALTERNATE_IDENTIFIERS: ClassVar[dict[str, str]] = {
        "tags": "tag",
        "attributes": "attribute",
        "trace": "attribute",
        "metadata": "request_metadata",
    }
    _IDENTIFIERS: ClassVar[list[str]] = ["tag", "request_metadata", "attribute", "span", "feedback", "expectation", "issue"]
    _VALID_IDENTIFIERS: ClassVar[set[str]] = set(_IDENTIFIERS) | set(_ALTERNATE_IDENTIFIERS)

    SEARCH_KEY_TO_TAG: ClassVar[dict[str, str]] = {"name": TRACE_NAME_TAG, "prompt": LINKED_PROMPTS_TAG}
    SEARCH_KEY_TO_METADATA: ClassVar[dict[str, str]] = {"run_id": SOURCE_RUN}
    SEARCH_KEY_TO_ATTRIBUTE: ClassVar[dict[str, str]] = {
        "timestamp": "timestamp_ms",
        "execution_time": "execution_time_ms",
        "end_time": "end_time_ms",
    }

    @classmethod
    def _valid_entity_type(cls, entity_type: str) -> str:
        entity_type = cls._trim_backticks(entity_type)
        if entity_type not in cls._VALID_IDENTIFIERS:
            raise invalid(f"Invalid entity type '{entity_type}'. Valid values are {cls._VALID_IDENTIFIERS}")
        return cls._ALTERNATE_IDENTIFIERS.get(entity_type, entity_type)

    @classmethod
    def _get_value(cls, identifier_type: str, key: str, token: Any) -> Any:
        if identifier_type in (cls._REQUEST_METADATA_IDENTIFIER, cls._TAG_IDENTIFIER):
            return cls._strip_quotes(token.value, expect_quoted_value=True)
        if identifier_type == cls._ATTRIBUTE_IDENTIFIER:
            return super()._get_value(identifier_type, key, token)
        if identifier_type == cls._SPAN_IDENTIFIER:
            from sqlparse.sql import Identifier, Parenthesis

            if token.ttype in cls.STRING_VALUE_TYPES or isinstance(token, Identifier):
                return cls._strip_quotes(token.value, expect_quoted_value=True)
            if isinstance(token, Parenthesis):
                return cls._parse_list_from_sql_token(token)
            raise invalid(f"Expected a quoted string value for {identifier_type} (e.g. 'my-value'). Got value {token.value}")
        # feedback / expectation / issue values: kept raw; matching refuses them below.
        return cls._strip_quotes(token.value)

    @classmethod
    def _get_comparison(cls, comparison: Any) -> dict[str, Any]:
        stripped = [token for token in comparison.tokens if not token.is_whitespace]
        cls._validate_comparison(stripped)
        comp = cls._get_identifier(stripped[0].value, cls.VALID_SEARCH_ATTRIBUTE_KEYS)
        if len(stripped) == 2:
            comp["comparator"] = stripped[1].value.upper()
            comp["value"] = None
            return comp
        comp["comparator"] = stripped[1].value
        comp["value"] = cls._get_value(comp["type"], comp["key"], stripped[2])
        return comp

    @classmethod
    def replace_key(cls, parsed: dict[str, Any]) -> dict[str, Any]:
        """``SearchTraceUtils._replace_key_to_tag_or_metadata``."""
        if parsed.get("type") == cls._SPAN_IDENTIFIER:
            return parsed
        key = parsed["key"].lower()
        if key in cls.SEARCH_KEY_TO_TAG:
            parsed["type"], parsed["key"] = cls._TAG_IDENTIFIER, cls.SEARCH_KEY_TO_TAG[key]
        elif key in cls.SEARCH_KEY_TO_METADATA:
            parsed["type"], parsed["key"] = cls._REQUEST_METADATA_IDENTIFIER, cls.SEARCH_KEY_TO_METADATA[key]
        elif key == "text":
            parsed["type"], parsed["key"] = cls._SPAN_IDENTIFIER, "content"
        elif key in cls.SEARCH_KEY_TO_ATTRIBUTE:
            parsed["key"] = cls.SEARCH_KEY_TO_ATTRIBUTE[key]
        return parsed


def parse_filter(filter_string: str | None) -> list[dict[str, Any]]:
    parsed = [TraceGrammar.replace_key(p) for p in TraceGrammar.parse_search_filter(filter_string)]
    for clause in parsed:
        _check_comparator(clause)
    return parsed


def _check_comparator(clause: dict[str, Any]) -> None:
    kind, key, comparator = clause["type"], clause["key"], clause["comparator"].upper()
    if kind == "tag":
        allowed = TraceGrammar.VALID_TAG_COMPARATORS
    elif kind == "request_metadata":
        allowed = TraceGrammar.VALID_METADATA_COMPARATORS
    elif kind == "attribute":
        allowed = (
            TraceGrammar.VALID_NUMERIC_ATTRIBUTE_COMPARATORS
            if key in TraceGrammar.NUMERIC_ATTRIBUTES
            else TraceGrammar.VALID_STRING_ATTRIBUTE_COMPARATORS
        )
    elif kind == "span" and key == SPAN_CONTENT:
        allowed = VALID_SPAN_CONTENT_COMPARATORS
        if comparator not in allowed:
            raise invalid(f"span.{key} comparator '{comparator}' not one of '{allowed}'")
    elif kind == "span" and key in SPAN_FIELDS:
        allowed = VALID_SPAN_FIELD_COMPARATORS
        if comparator not in allowed:
            raise invalid(f"span.{key} comparator '{comparator}' not one of '{allowed}'")
    else:
        raise invalid(f"Filtering traces by '{kind}.{key}' is not supported by this tracking server.")
    if comparator not in allowed:
        raise invalid(f"Invalid comparator '{comparator}' not one of '{allowed}'")
    if kind == "tag" and key == LINKED_PROMPTS_TAG:
        # SqlAlchemyStore reads the trace/prompt-version associations for this key, with these two checks.
        if comparator != "=":
            raise invalid(
                f"Invalid comparator '{comparator}' for prompts filter. Only '=' is supported with format: prompt = \"name/version\""
            )
        if str(clause["value"]).count("/") != 1:
            raise invalid(f"Invalid prompts filter value '{clause['value']}'. Expected format: prompt = \"name/version\"")


def parse_order_by(order_by: list[str] | None) -> list[tuple[str, str, bool]]:
    out: list[tuple[str, str, bool]] = []
    seen: set[tuple[str, str]] = set()
    for clause in order_by or []:
        token_value, ascending = TraceGrammar._parse_order_by_string(clause)
        identifier = TraceGrammar.replace_key(TraceGrammar._get_identifier(token_value.strip(), TraceGrammar.VALID_ORDER_BY_ATTRIBUTE_KEYS))
        if identifier["type"] not in ("attribute", "tag", "request_metadata"):
            raise invalid(f"Invalid identifier type '{identifier['type']}'")
        pair = (identifier["type"], identifier["key"])
        if pair in seen:
            raise invalid(f"`order_by` contains duplicate fields: {order_by}")
        seen.add(pair)
        out.append((identifier["type"], identifier["key"], ascending))
    return out


# --- matching -------------------------------------------------------------------------------------


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


def name_pattern(clauses: list[dict[str, Any]]) -> str | None:
    """The LIKE/ILIKE pattern of a trace-name filter (trace-name FTS narrows the search with it)."""
    for clause in clauses:
        if clause["type"] == "tag" and clause["key"] == TRACE_NAME_TAG and clause["comparator"].upper() in ("LIKE", "ILIKE"):
            return clause["value"]
    return None


Term = tuple[str, str, bool]  # (kind, key, ascending)
TIMESTAMP: Term = ("attribute", "timestamp_ms", False)
REQUEST_ID: Term = ("attribute", "request_id", True)


def full_order(order: list[Term]) -> list[Term]:
    """MLflow's complete order: the given terms, then timestamp desc and request id asc unless given."""
    terms = list(order)
    keys = {(kind, key) for kind, key, _ in terms}
    for default in (TIMESTAMP, REQUEST_ID):
        if default[:2] not in keys:
            terms.append(default)
    return terms


def term_values(item: dict[str, Any], terms: list[Term]) -> list[Any]:
    """The item's value of each order term (a page token keeps them as its position)."""
    return [value_of(item, kind, key) for kind, key, _ in terms]


def position_key(values: list[Any], terms: list[Term]) -> tuple[Any, ...]:
    """The sort key of a position (term values), comparable with ``sort_key``'s."""
    return tuple(_Ordered(value, ascending) for value, (_, _, ascending) in zip(values, terms, strict=True))


def sort_key(order: list[Term]) -> Any:
    """MLflow's order: the given terms (NULLs last), then timestamp desc and request id asc."""
    terms = full_order(order)

    def key(item: dict[str, Any]) -> tuple[Any, ...]:
        return position_key(term_values(item, terms), terms)

    return key


class _Ordered:
    """One sort term: NULLs last in both directions (the SQL store's explicit null ordering)."""

    __slots__ = ("ascending", "value")

    def __init__(self, value: Any, ascending: bool) -> None:
        self.value, self.ascending = value, ascending

    def __lt__(self, other: _Ordered) -> bool:
        if self.value is None or other.value is None:
            return other.value is None and self.value is not None
        if self.value == other.value:
            return False
        return (self.value < other.value) if self.ascending else (self.value > other.value)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Ordered) and self.value == other.value
