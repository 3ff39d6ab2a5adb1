"""One call per search API: validate everything in MLflow's order, then filter/sort/page entity dicts."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from serverless_mlflow.search.entity_grammars import RegisteredModelGrammar
from serverless_mlflow.search.filter_matching import matches
from serverless_mlflow.search.filters import (
    Filter,
    parse_experiment_filter,
    parse_model_version_filter,
    validate_registered_model_filter,
    validate_run_filter,
)
from serverless_mlflow.search.grammar import RunGrammar
from serverless_mlflow.search.ordering import (
    OrderBy,
    parse_experiment_order_by,
    parse_model_version_order_by,
    parse_registered_model_order_by,
    parse_run_order_by,
    sort_key,
)
from serverless_mlflow.search.paging import (
    SEARCH_MAX_RESULTS_DEFAULT,
    SEARCH_MODEL_VERSION_MAX_RESULTS_DEFAULT,
    SEARCH_REGISTERED_MODEL_MAX_RESULTS_DEFAULT,
    Position,
    check_max_results_experiments,
    check_max_results_model_versions,
    check_max_results_registered_models,
    check_max_results_runs,
    decode_page_token,
    is_after,
    page,
)


@dataclass
class SearchQuery:
    """A validated search: `filter` (Filter), `order_by` (OrderBy, complete), `position` (keyset position to
    resume after, or None), `max_results` (None = unlimited, runs only), `page_token` (as given)."""

    filter: Filter
    order_by: OrderBy
    position: Position | None
    max_results: int | None
    page_token: str | None

    def matches(self, entity: dict[str, Any]) -> bool:
        return matches(entity, self.filter)

    def sort_key(self, entity: dict[str, Any]) -> tuple[Any, ...]:
        return sort_key(entity, self.order_by)

    def is_after_token(self, entity: dict[str, Any]) -> bool:
        """True when the entity belongs to this page or a later one (strictly after the token position)."""
        return is_after(entity, self.position, self.order_by)

    def page(self, sorted_entities: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], str | None]:
        """Page already filtered + sorted entities (all of them, or any superset of those after the token)."""
        return page(sorted_entities, self.order_by, self.max_results, self.page_token)

    def run(self, entities: Iterable[dict[str, Any]]) -> tuple[list[dict[str, Any]], str | None]:
        """Filter, sort and page candidates in memory (candidates may include non-matching entities)."""
        selected = [e for e in entities if self.matches(e) and self.is_after_token(e)]
        selected.sort(key=self.sort_key)
        # The candidates are already past the token: page from the start, keep the ordering for the next token.
        return page(selected, self.order_by, self.max_results, None)


def prepare_run_search(
    filter_string: str | None = None,
    order_by: list[str] | None = None,
    max_results: int | None = SEARCH_MAX_RESULTS_DEFAULT,
    page_token: str | None = None,
) -> SearchQuery:
    """search_runs: max_results, filter syntax, order_by, filter comparators, page token (MLflow's order)."""
    check_max_results_runs(max_results)
    parsed = RunGrammar.parse_search_filter(filter_string)
    order = parse_run_order_by(order_by)
    flt = validate_run_filter(parsed)
    pos = decode_page_token(page_token, order)
    return SearchQuery(flt, order, pos, max_results, page_token)


def prepare_experiment_search(
    filter_string: str | None = None,
    order_by: list[str] | None = None,
    max_results: int | None = SEARCH_MAX_RESULTS_DEFAULT,
    page_token: str | None = None,
) -> SearchQuery:
    """search_experiments: max_results, filter (syntax + comparators), order_by, page token."""
    check_max_results_experiments(max_results)
    flt = parse_experiment_filter(filter_string)
    order = parse_experiment_order_by(order_by)
    pos = decode_page_token(page_token, order)
    return SearchQuery(flt, order, pos, max_results, page_token)


def prepare_registered_model_search(
    filter_string: str | None = None,
    order_by: list[str] | None = None,
    max_results: int = SEARCH_REGISTERED_MODEL_MAX_RESULTS_DEFAULT,
    page_token: str | None = None,
) -> SearchQuery:
    """search_registered_models: max_results, filter syntax, order_by, page token, filter comparators."""
    check_max_results_registered_models(max_results)
    parsed = RegisteredModelGrammar.parse_search_filter(filter_string)
    order = parse_registered_model_order_by(order_by)
    pos = decode_page_token(page_token, order)
    flt = validate_registered_model_filter(parsed)
    return SearchQuery(flt, order, pos, max_results, page_token)


def prepare_model_version_search(
    filter_string: str | None = None,
    order_by: list[str] | None = None,
    max_results: int = SEARCH_MODEL_VERSION_MAX_RESULTS_DEFAULT,
    page_token: str | None = None,
) -> SearchQuery:
    """search_model_versions: max_results, filter (syntax + comparators), order_by, page token."""
    check_max_results_model_versions(max_results)
    flt = parse_model_version_filter(filter_string)
    order = parse_model_version_order_by(order_by)
    pos = decode_page_token(page_token, order)
    return SearchQuery(flt, order, pos, max_results, page_token)
