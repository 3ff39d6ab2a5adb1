"""Searches of skills and skill versions: MLflow's skill registry filter grammar, order_by keys and its
query-bound page tokens (``SkillRegistryPaginationToken``), evaluated over the registry read in one Query."""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Callable
from typing import Any, ClassVar

import sqlparse
from sqlparse import tokens as token_types

from serverless_mlflow.core.errors import invalid
from serverless_mlflow.search.grammar import RunGrammar

from ..mcp import search as mcp_search

MAX_RESULTS_THRESHOLD = 1000
_NUMERIC = {"created_at", "last_updated_at"}
_TAG_COMPARATORS = {"=", "!=", "LIKE", "ILIKE"}
_KEYWORD_FIELDS = {"organization", "version"}
_WHITESPACE = re.compile(r"\s+")


def _quote_keyword_fields(text: str) -> str:
    """``_quote_keyword_fields``: field names sqlparse lexes as keywords, backtick-quoted."""
    return "".join(
        f"`{value}`" if ttype in token_types.Keyword and value.lower() in _KEYWORD_FIELDS else value
        for ttype, value in sqlparse.lexer.tokenize(text)
    )


def _number(value: Any) -> Any:
    try:
        return int(value)
    except (TypeError, ValueError):
        return float(value)


class _RegistryGrammar(RunGrammar):
    """``_SkillRegistrySearchBase``."""

    LIST_SUPPORTED_KEYS: ClassVar[frozenset[str] | None] = frozenset({"status"})

    @classmethod
    def validate_list_supported(cls, key: str) -> None:
        if key != "status":
            raise invalid(f"Only 'status' supports IN and NOT IN comparisons, got '{key}'.")

    @classmethod
    def parse(cls, filter_string: str | None) -> list[dict[str, Any]]:
        parsed = cls.parse_search_filter(_quote_keyword_fields(filter_string) if filter_string else filter_string)
        for comparison in parsed:
            cls._check(comparison)
        return parsed

    @classmethod
    def _check(cls, comparison: dict[str, Any]) -> None:
        kind, key = comparison["type"], comparison["key"]
        if kind == "tag":
            allowed = _TAG_COMPARATORS
        elif kind == "attribute":
            allowed = cls.VALID_NUMERIC_ATTRIBUTE_COMPARATORS if key in cls.NUMERIC_ATTRIBUTES else cls.VALID_STRING_ATTRIBUTE_COMPARATORS
        else:
            raise invalid(f"Invalid filter type '{kind}' for '{key}'. Only attributes and tags.<key> are supported.")
        comparator = comparison["comparator"].upper()
        if comparator not in allowed:
            raise invalid(f"Invalid comparator '{comparison['comparator']}' for {kind} '{key}'. Supported comparators: {sorted(allowed)}")
        if kind == "attribute" and key in cls.NUMERIC_ATTRIBUTES:
            comparison["value"] = _number(comparison["value"])
        takes_list = comparator in ("IN", "NOT IN")
        if isinstance(comparison["value"], (list, tuple, set)) != takes_list:
            expected = "a parenthesized list of values" if takes_list else "a single value"
            raise invalid(f"Comparator '{comparator}' for {kind} '{key}' requires {expected}, got {comparison['value']!r}.")
        comparison["comparator"] = comparator


class SkillGrammar(_RegistryGrammar):
    VALID_SEARCH_ATTRIBUTE_KEYS: ClassVar[set[str]] = {
        "name",
        "organization",
        "description",
        "search_text",
        "status",
        "source_type",
        *_NUMERIC,
    }
    NUMERIC_ATTRIBUTES: ClassVar[set[str]] = set(_NUMERIC)


class VersionGrammar(_RegistryGrammar):
    VALID_SEARCH_ATTRIBUTE_KEYS: ClassVar[set[str]] = {"status", "organization", "source_type", "digest", "version", *_NUMERIC}
    NUMERIC_ATTRIBUTES: ClassVar[set[str]] = {*_NUMERIC, "version"}


def search_text(name: str, description: str | None) -> str:
    """``build_skill_search_text``: the name and description, whitespace runs collapsed."""
    parts = [_WHITESPACE.sub(" ", text).strip() for text in (name, description or "")]
    return " ".join(part for part in parts if part)


def validate_max_results(max_results: int) -> None:
    if max_results < 1:
        raise invalid(f"max_results must be at least 1, got {max_results}.")
    if max_results > MAX_RESULTS_THRESHOLD:
        raise invalid(f"max_results must be at most {MAX_RESULTS_THRESHOLD}, got {max_results}.")


def start_offset(page_token: str | None, filter_string: str | None, order_by: list[str] | None, scope: str) -> int:
    """``SkillRegistryPaginationToken.decode`` and ``validate``."""
    if not page_token:
        return 0
    try:
        payload = json.loads(base64.b64decode(page_token))
        token = {name: payload[name] for name in ("filter_string", "order_by", "offset", "query_scope")}
    except (KeyError, TypeError):
        raise invalid("Invalid page token: missing or malformed fields.") from None
    except Exception:
        raise invalid("Invalid page token: could not decode.") from None
    offset = token["offset"]
    if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
        raise invalid("Invalid page token: offset must be a non-negative integer.")
    if (token["filter_string"] or None) != (filter_string or None):
        raise invalid("Page token was issued for a different filter_string and cannot be used with the current request.")
    if (token["order_by"] or None) != (order_by or None):
        raise invalid("Page token was issued for a different order_by and cannot be used with the current request.")
    if token["query_scope"] != scope:
        raise invalid("Page token was issued for a different query scope and cannot be used with the current request.")
    return offset


def page(
    rows: list[Any], offset: int, max_results: int, filter_string: str | None, order_by: list[str] | None, scope: str
) -> tuple[list[Any], str | None]:
    chunk = rows[offset : offset + max_results + 1]
    token = None
    if len(chunk) > max_results:
        payload = {"filter_string": filter_string, "offset": offset + max_results, "order_by": order_by, "query_scope": scope}
        token = base64.b64encode(json.dumps(payload, sort_keys=True).encode()).decode()
    return chunk[:max_results], token


def parse_order_by(order_by: list[str] | None, valid: set[str]) -> list[tuple[str, bool]]:
    """``parse_skill_registry_order_by``: keyword field names quoted for the parser, the key's quotes stripped."""
    return mcp_search.parse_order_by(
        order_by, valid, _quote_keyword_fields, lambda key: RunGrammar._trim_backticks(RunGrammar._strip_quotes(key))
    )


def sort(rows: list[Any], terms: list[tuple[str, bool]], value_of: Callable[[Any, str], Any]) -> list[Any]:
    """A multi-key ORDER BY with per-key direction; NULL sorts first ascending, as sqlite sorts it."""

    def nullable(row: Any, key: str) -> tuple[int, Any]:
        value = value_of(row, key)
        return (0, "") if value is None else (1, value)

    return mcp_search.sort(rows, terms, nullable)


matches = mcp_search.matches
