"""Searches of MCP servers, versions and access endpoints: MLflow's filter grammar, order_by keys and
offset page tokens (``SearchUtils.create_page_token``), evaluated over the registry read in one Query."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from typing import Any, ClassVar

from sqlparse.engine.grouping import group_comparison
from sqlparse.sql import Identifier, Token
from sqlparse.tokens import Token as TokenType

from serverless_mlflow.core.errors import invalid
from serverless_mlflow.request.pages import token_json
from serverless_mlflow.search.filter_matching import compare
from serverless_mlflow.search.grammar import RunGrammar

from . import semver

_COMPARATORS = {"=", "!=", ">", ">=", "<", "<=", "LIKE", "ILIKE", "IN", "NOT IN"}
SEARCH_MAX_RESULTS_THRESHOLD = 50000
SERVER_MAX_RESULTS = 1000


class ServerGrammar(RunGrammar):
    VALID_SEARCH_ATTRIBUTE_KEYS: ClassVar[set[str]] = {
        "name",
        "display_name",
        "status",
        "has_access_endpoints",
        "created_at",
        "last_updated_at",
    }
    NUMERIC_ATTRIBUTES: ClassVar[set[str]] = {"created_at", "last_updated_at"}
    LIST_SUPPORTED_KEYS: ClassVar[frozenset[str] | None] = frozenset({"status", "name"})


def _as_name(statement: Any, keyword: str) -> None:
    """sqlparse reads ``keyword`` as a SQL keyword and leaves its comparison ungrouped: MLflow turns it back
    into a name and groups the comparisons again."""
    for index, token in enumerate(statement.tokens):
        if token.ttype == TokenType.Keyword and token.value == keyword:
            statement.tokens[index] = Identifier([Token(TokenType.Name, token.value)])
    group_comparison(statement)


class VersionGrammar(RunGrammar):
    VALID_SEARCH_ATTRIBUTE_KEYS: ClassVar[set[str]] = {"name", "version", "status", "created_at", "last_updated_at"}
    NUMERIC_ATTRIBUTES: ClassVar[set[str]] = {"created_at", "last_updated_at"}
    LIST_SUPPORTED_KEYS: ClassVar[frozenset[str] | None] = frozenset({"status"})

    @classmethod
    def _process_statement(cls, statement: Any) -> list[dict[str, Any]]:
        _as_name(statement, "version")
        return super()._process_statement(statement)


class EndpointGrammar(RunGrammar):
    VALID_SEARCH_ATTRIBUTE_KEYS: ClassVar[set[str]] = {"status", "server_name", "transport_type", "created_at", "last_updated_at"}
    NUMERIC_ATTRIBUTES: ClassVar[set[str]] = {"created_at", "last_updated_at"}
    LIST_SUPPORTED_KEYS: ClassVar[frozenset[str] | None] = frozenset({"server_name"})

    @classmethod
    def _process_statement(cls, statement: Any) -> list[dict[str, Any]]:
        _as_name(statement, "server_name")
        return super()._process_statement(statement)


def validate_max_results(max_results: int) -> None:
    if max_results < 1:
        raise invalid(f"Invalid value {max_results} for parameter 'max_results' supplied. It must be a positive integer")
    if max_results > SEARCH_MAX_RESULTS_THRESHOLD:
        raise invalid(
            f"Invalid value {max_results} for parameter 'max_results' supplied. It must be at most {SEARCH_MAX_RESULTS_THRESHOLD}"
        )


def start_offset(page_token: str | None) -> int:
    """``SearchUtils.parse_start_offset_from_page_token``."""
    if not page_token:
        return 0
    # The shared reader: JSON nested past protobuf's cap is refused, not a RecursionError (issue 41).
    parsed = token_json(page_token)
    offset = parsed.get("offset") if isinstance(parsed, dict) else None
    if not offset:
        raise invalid(f"Invalid page token, parsed value={parsed}")
    try:
        return int(offset)
    except (TypeError, ValueError, OverflowError):
        raise invalid(f"Invalid page token, not stringable {offset}") from None


def page(rows: list[Any], offset: int, max_results: int) -> tuple[list[Any], str | None]:
    chunk = rows[offset : offset + max_results + 1]
    token = None
    if len(chunk) > max_results:
        token = base64.b64encode(json.dumps({"offset": offset + max_results}).encode("utf-8")).decode("ascii")
    return chunk[:max_results], token


def parse_filter(grammar: type[RunGrammar], filter_string: str | None, tags: bool = False) -> list[dict[str, Any]]:
    parsed = grammar.parse_search_filter(filter_string) if filter_string else []
    for comparison in parsed:
        kind, key, comparator = comparison["type"], comparison["key"], comparison["comparator"]
        if kind == "attribute" or (tags and kind == "tag"):
            if comparator not in _COMPARATORS:
                noun = "attribute" if kind == "attribute" else "tag"
                raise invalid(f"Invalid comparator '{comparator}' for {noun} '{key}'.")
        else:
            raise invalid(f"Invalid filter type '{kind}'.")
    return parsed


def matches(comparisons: list[dict[str, Any]], value_of: Callable[[dict[str, Any]], Any]) -> bool:
    """Every comparison holds; a NULL column matches nothing (SQL)."""
    for comparison in comparisons:
        lhs = value_of(comparison)
        if lhs is None or not compare(comparison["comparator"].upper(), lhs, comparison["value"]):
            return False
    return True


def version_comparison(comparator: str, value: str, item: dict[str, Any]) -> bool:
    """``version`` filters: equality on the raw string, ordering by SemVer precedence."""
    if comparator not in {"=", "!=", "<", "<=", ">", ">="}:
        raise invalid("version only supports semantic comparators '=', '!=', '<', '<=', '>', and '>='")
    if comparator in ("=", "!="):
        return compare(comparator, item["version"], value)
    target = semver.sort_key(value, "filter_string version")
    return compare(comparator, list(item["semver"]), target)


def parse_order_by(
    order_by: list[str] | None, valid: set[str], quote: Callable[[str], str] = str, unquote: Callable[[str], str] = str
) -> list[tuple[str, bool]]:
    """(key, ascending) terms: MLflow's checks (valid keys, no duplicates). ``quote`` prepares a clause for the
    parser and ``unquote`` cleans its key (the skill registry quotes keyword field names, then strips them)."""
    terms: list[tuple[str, bool]] = []
    for clause in order_by or []:
        token, ascending = RunGrammar._parse_order_by_string(quote(clause))
        key = unquote(token.strip())
        if key not in valid:
            raise invalid(f"Invalid order_by key '{key}'. Valid keys: {sorted(valid)}")
        if any(key == seen for seen, _ in terms):
            raise invalid(f"Duplicate order_by field: '{key}'")
        terms.append((key, ascending))
    return terms


def sort(rows: list[Any], terms: list[tuple[str, bool]], value_of: Callable[[Any, str], Any]) -> list[Any]:
    """Stable sorts from the last term to the first: a multi-key ORDER BY with per-key direction."""
    out = list(rows)
    for key, ascending in reversed(terms):
        out.sort(key=lambda row, key=key: value_of(row, key), reverse=not ascending)
    return out
