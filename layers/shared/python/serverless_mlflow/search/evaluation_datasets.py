"""search_datasets (GenAI evaluation datasets): MLflow's `SearchEvaluationDatasetsUtils` grammar and the
SqlAlchemyStore semantics (`_get_search_datasets_filter_clauses`, `_get_search_datasets_order_by_clauses`).

Dataset dict shape (None = SQL NULL)::

    {"dataset_id": str, "name": str, "created_time": int, "last_update_time": int,
     "created_by": str | None, "last_updated_by": str | None, "tags": {key: str}}

Semantics: string attributes take `=`, `!=`, `LIKE`, `ILIKE` (and `name IN (...)`); NULL never matches (SQL);
numeric attributes (`created_time`, `last_update_time`) take `> >= = != < <=` with an integer; tags take
`= != LIKE ILIKE` and a tag filter matches datasets that HAVE the tag (an inner join). Order: the user's
attribute terms (name | created_time | last_update_time, default `created_time DESC`), then `dataset_id DESC`
unless ordered by it; plain `col ASC|DESC` on sqlite (NULL smallest).
"""

from __future__ import annotations

from typing import Any, ClassVar

from sqlparse.sql import Comparison
from sqlparse.tokens import Token as TokenType

from serverless_mlflow.core.errors import invalid
from serverless_mlflow.core.validation import validate_max_results_param
from serverless_mlflow.search.filter_matching import compare
from serverless_mlflow.search.grammar import RunGrammar
from serverless_mlflow.search.ordering import OrderBy, OrderTerm, sort_key
from serverless_mlflow.search.paging import decode_page_token, is_after, page
from serverless_mlflow.search.sql_tokens import join_in_comparison_tokens

KIND = "evaluation_dataset"


class DatasetGrammar(RunGrammar):
    """Port of `SearchEvaluationDatasetsUtils` (mlflow 3.17.2)."""

    VALID_SEARCH_ATTRIBUTE_KEYS: ClassVar[set[str]] = {"name", "created_time", "last_update_time", "created_by", "last_updated_by"}
    VALID_ORDER_BY_ATTRIBUTE_KEYS: ClassVar[set[str]] = {"name", "created_time", "last_update_time"}
    NUMERIC_ATTRIBUTES: ClassVar[set[str]] = {"created_time", "last_update_time"}
    VALID_TAG_COMPARATORS: ClassVar[set[str]] = {"!=", "=", "LIKE", "ILIKE"}
    LIST_SUPPORTED_KEYS: ClassVar[frozenset[str] | None] = frozenset({"name"})

    @classmethod
    def _get_comparison(cls, comparison: Any) -> dict[str, Any]:
        comp = super()._get_comparison(comparison)
        if isinstance(comp["value"], tuple) and comp["comparator"] != "IN":
            raise invalid("List values for 'name' are only supported with the IN comparator.")
        return comp

    @classmethod
    def _invalid_statement_token(cls, token: Any) -> bool:
        return not (isinstance(token, Comparison) or token.is_whitespace or token.match(ttype=TokenType.Keyword, values=["AND"]))

    @classmethod
    def _process_statement(cls, statement: Any) -> list[dict[str, Any]]:
        tokens = join_in_comparison_tokens(statement.tokens)
        invalids = [t for t in tokens if cls._invalid_statement_token(t)]
        if invalids:
            raise invalid(f"Invalid clause(s) in filter string: {', '.join(map(str, invalids))}")
        return [cls._get_comparison(t) for t in tokens if isinstance(t, Comparison)]

    @classmethod
    def _get_identifier(cls, identifier: str, valid_attributes: set[str]) -> dict[str, Any]:
        tokens = identifier.split(".", maxsplit=1)
        if len(tokens) == 1:
            key = tokens[0]
            if key not in valid_attributes:
                raise invalid(f"Invalid attribute key '{key}' specified. Valid keys are: {valid_attributes}")
            return {"type": "attribute", "key": key}
        if tokens[0] == "tags":
            return {"type": "tag", "key": tokens[1]}
        raise invalid(f"Invalid identifier token '{tokens[0]}' specified")


_STRING_OPS = ("=", "!=", "LIKE", "ILIKE")
# What SearchUtils.get_sql_comparison_func can turn into SQL; string attributes then compare as text (`name > 'a'`).
_SQL_OPS = ("=", "!=", ">", ">=", "<", "<=", "LIKE", "ILIKE", "IN", "NOT IN")


def parse_filter(filter_string: str | None) -> list[dict[str, Any]]:
    """Parsed and checked comparisons (`_get_search_datasets_filter_clauses`'s checks, in its order)."""
    out = []
    for f in DatasetGrammar.parse_search_filter(filter_string):
        type_, key, comparator, value = f["type"], f["key"], f["comparator"], f["value"]
        # Comparators are matched case-sensitively, as MLflow does (`like` is not `LIKE` there).
        if type_ == "attribute":
            is_string = key not in DatasetGrammar.NUMERIC_ATTRIBUTES and comparator in DatasetGrammar.VALID_STRING_ATTRIBUTE_COMPARATORS
            if is_string and comparator not in _STRING_OPS and not (key == "name" and comparator == "IN"):
                raise invalid(f"Invalid comparator for string attribute: {comparator}")
            if key not in DatasetGrammar.NUMERIC_ATTRIBUTES and comparator not in _SQL_OPS:
                # MLflow's SQL layer fails on it (a 500 there).
                raise invalid(f"Invalid comparator for string attribute: {comparator}")
            if key in DatasetGrammar.NUMERIC_ATTRIBUTES:
                if comparator not in DatasetGrammar.VALID_NUMERIC_ATTRIBUTE_COMPARATORS:
                    raise invalid(f"Invalid comparator for numeric attribute: {comparator}")
                if isinstance(value, float):
                    raise invalid(f"Invalid value for numeric attribute '{key}': {str(value)!r}")
                value = int(value)
        elif comparator not in _STRING_OPS:
            raise invalid(f"Invalid comparator for tag: {comparator}")
        out.append({"type": type_, "key": key, "comparator": comparator, "value": value})
    return out


def matches(dataset: dict[str, Any], comparisons: list[dict[str, Any]]) -> bool:
    for f in comparisons:
        if f["type"] == "attribute":
            lhs = dataset.get(f["key"])
        else:
            tags = dataset.get("tags") or {}
            if f["key"] not in tags:
                return False
            lhs = tags[f["key"]]
        # A SQL comparison with NULL is never true.
        if lhs is None or not compare(f["comparator"], lhs, f["value"]):
            return False
    return True


def parse_order_by(order_by: list[str] | None) -> OrderBy:
    terms: list[OrderTerm] = []
    for clause in order_by or ["created_time DESC"]:
        token_value, ascending = DatasetGrammar._parse_order_by_string(clause)
        identifier = DatasetGrammar._get_identifier(token_value.strip(), DatasetGrammar.VALID_ORDER_BY_ATTRIBUTE_KEYS)
        if identifier["type"] != "attribute":
            raise invalid(f"Invalid order_by entity: {identifier['type']}")
        terms.append(OrderTerm("attribute", identifier["key"], ascending, False))
    terms.append(OrderTerm("attribute", "dataset_id", False, False))
    return OrderBy(KIND, terms)


class DatasetSearch:
    """A validated search_datasets request (MLflow's order: max_results, page token, filter, order_by)."""

    def __init__(self, filter_string: str | None, max_results: int | None, order_by: list[str] | None, page_token: str | None) -> None:
        validate_max_results_param(max_results)
        self.max_results = max_results
        self.filter = parse_filter(filter_string)
        self.order_by = parse_order_by(order_by)
        self.position = decode_page_token(page_token, self.order_by)

    def run(self, datasets: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], str | None]:
        selected = [d for d in datasets if matches(d, self.filter) and is_after(d, self.position, self.order_by)]
        selected.sort(key=lambda d: sort_key(d, self.order_by))
        return page(selected, self.order_by, self.max_results, None)
