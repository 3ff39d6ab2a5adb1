"""MLflow's trace search grammar (``SearchTraceUtils``): the filter and order_by of a trace search, parsed.

The grammar is the run grammar with the trace identifiers (``tag``, ``request_metadata``/``metadata``,
``attribute``/``trace``), the trace attribute keys and their aliases (``name`` -> the ``mlflow.traceName`` tag,
``run_id`` -> the ``mlflow.sourceRun`` metadata, ``timestamp`` -> ``timestamp_ms`` ...). ``trace.text`` /
``span.content`` and ``span.name/type/status`` are checked on the trace's spans (one span meeting every span
clause, as the SQL store's subquery has it); ``issue.id`` on the trace's issue references. Span attribute and
assessment filters are refused with INVALID_PARAMETER_VALUE rather than answered wrongly.

Parsing only: how a parsed filter meets a trace is in ``trace_matching``, the order in ``trace_order``.
"""

from __future__ import annotations

from typing import Any, ClassVar

from serverless_mlflow.core.errors import invalid
from serverless_mlflow.search.grammar import RunGrammar

TRACE_NAME_TAG = "mlflow.traceName"
SOURCE_RUN = "mlflow.sourceRun"
SPAN_CONTENT = "content"
SPAN_FIELDS = frozenset({"name", "type", "status"})
VALID_SPAN_CONTENT_COMPARATORS = {"LIKE", "ILIKE"}
VALID_SPAN_FIELD_COMPARATORS = {"!=", "=", "IN", "NOT IN", "LIKE", "ILIKE", "RLIKE"}
VALID_ISSUE_COMPARATORS = {"="}
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
    elif kind == "issue" and key == "id":
        # The traces an issue was found in (their issue-reference assessments), as MLflow 3.17+ filters them.
        allowed = VALID_ISSUE_COMPARATORS
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
