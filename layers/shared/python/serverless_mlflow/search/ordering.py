"""ORDER BY exactly as MLflow's SqlAlchemyStore sorts on sqlite, as Python sort keys on entity dicts.

An `OrderBy` is the complete ORDER BY the SQL store would run, tie-breakers included, so sorting by it is a
total order (the last term is a unique id) and a keyset position is well defined. Each `OrderTerm` says how
missing values sort:

- runs (`_get_orderby_clauses`): a CASE column sorts present values first in both directions, so NULLs
  (missing param/tag/metric, NULL end_time) are last; for metrics: values, then NaN, then missing;
- experiments / registry: plain `col ASC|DESC`; sqlite treats NULL as the smallest value (first when ASC,
  last when DESC).
A term's sort value is `(rank, value)`: rank orders the null classes (always ascending), value the rest.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from serverless_mlflow.core.errors import invalid
from serverless_mlflow.search.entity_grammars import ExperimentGrammar, ModelVersionGrammar
from serverless_mlflow.search.filter_matching import metric_value
from serverless_mlflow.search.filters import (
    EXPERIMENT,
    MODEL_VERSION,
    REGISTERED_MODEL,
    RUN,
)
from serverless_mlflow.search.grammar import RunGrammar, _unanswered_by_mlflow


@dataclass(frozen=True)
class OrderTerm:
    """One ORDER BY term.

    type: "metric" | "parameter" | "tag" | "attribute" (registry/experiment terms are all "attribute").
    key: the entity field (runs: metric/param/tag key or info field, `start_time` for `created`; experiments:
        name | experiment_id | creation_time | last_update_time; registered models: name |
        last_updated_timestamp; model versions: name | version | creation_timestamp | last_updated_timestamp;
        logged models: see logged_models.py).
    ascending: direction of the value part.
    nulls_last: True = missing values after all values whatever the direction (runs' CASE); False = sqlite's
        NULL-is-smallest default.
    """

    type: str
    key: str
    ascending: bool
    nulls_last: bool = True


class OrderBy(list):  # type: ignore[type-arg]
    """A list of OrderTerm (the full ORDER BY incl. tie-breakers) plus the entity kind."""

    def __init__(self, kind: str, terms: Iterable[OrderTerm]):
        super().__init__(terms)
        self.kind = kind


# --------------------------------------------------------------------------------------------------------
# Parsing
# --------------------------------------------------------------------------------------------------------


def parse_run_order_by(order_by: list[str] | None) -> OrderBy:
    """`_get_orderby_clauses`: user terms, then `start_time DESC` (unless ordered by start_time), then `run_id ASC`."""
    g = RunGrammar
    terms: list[OrderTerm] = []
    observed: set[tuple[str, str]] = set()
    for clause in order_by or []:
        key_type, key, ascending = g.parse_order_by_for_search_runs(clause)
        key = g.translate_key_alias(key)
        if not (g.is_string_attribute(key_type, key, "=") or g.is_numeric_attribute(key_type, key, "=")):
            if not (g.is_metric(key_type, "=") or g.is_tag(key_type, "=") or g.is_param(key_type, "=")):
                raise invalid(f"Invalid identifier type '{key_type}'")
        if (key_type, key) in observed:
            raise _unanswered_by_mlflow(f"`order_by` contains duplicate fields: {order_by}")
        observed.add((key_type, key))
        terms.append(OrderTerm(key_type, key, ascending, True))
    if ("attribute", "start_time") not in observed:
        # No CASE column for the implicit term: sqlite puts NULL last in DESC, the same as nulls_last.
        terms.append(OrderTerm("attribute", "start_time", False, True))
    terms.append(OrderTerm("attribute", "run_id", True, True))
    return OrderBy(RUN, terms)


def parse_experiment_order_by(order_by: list[str] | None) -> OrderBy:
    """`_get_search_experiments_order_by_clauses`; default `creation_time DESC, experiment_id ASC`;
    tie-breaker `experiment_id DESC` (sic) when the user's terms lack it. experiment_id sorts as an integer."""
    terms: list[OrderTerm] = []
    for type_, key, ascending in map(
        ExperimentGrammar.parse_order_by_for_search_experiments, order_by or ["creation_time DESC", "experiment_id ASC"]
    ):
        if type_ != "attribute":
            raise invalid(f"Invalid order_by entity: {type_}")
        terms.append(OrderTerm("attribute", key, ascending, False))
    if not any(t.key == "experiment_id" for t in terms):
        terms.append(OrderTerm("attribute", "experiment_id", False, False))
    return OrderBy(EXPERIMENT, terms)


def parse_registered_model_order_by(order_by: list[str] | None) -> OrderBy:
    """`_parse_search_registered_models_order_by`: keys name | timestamp | last_updated_timestamp (both timestamps
    sort by last_updated_timestamp, as MLflow does); tie-breaker `name ASC`."""
    terms: list[OrderTerm] = []
    observed: set[str] = set()
    for clause in order_by or []:
        token, ascending = RunGrammar.parse_order_by_for_search_registered_models(clause)
        if token == "name":
            field = "name"
        elif token in RunGrammar.VALID_TIMESTAMP_ORDER_BY_KEYS:
            field = "last_updated_timestamp"
        else:  # unreachable: the parser already rejected it
            raise invalid(
                f"Invalid order by key '{token}' specified.Valid keys are '{RunGrammar.RECOMMENDED_ORDER_BY_KEYS_REGISTERED_MODELS}'"
            )
        if field in observed:
            raise _unanswered_by_mlflow(f"`order_by` contains duplicate fields: {order_by}")
        observed.add(field)
        terms.append(OrderTerm("attribute", field, ascending, False))
    if "name" not in observed:
        terms.append(OrderTerm("attribute", "name", True, False))
    return OrderBy(REGISTERED_MODEL, terms)


_MV_FIELDS = {
    "version_number": "version",
    "creation_timestamp": "creation_timestamp",
    "last_updated_timestamp": "last_updated_timestamp",
    "name": "name",
}


def parse_model_version_order_by(order_by: list[str] | None) -> OrderBy:
    """`_parse_search_model_versions_order_by`; default `last_updated_timestamp DESC, name ASC, version_number
    DESC`; tie-breakers `name ASC`, `version DESC`. (MLflow ignores the entity type here: `tags.name` = `name`.)"""
    terms: list[OrderTerm] = []
    observed: set[str] = set()
    order_by = order_by or ["last_updated_timestamp DESC", "name ASC", "version_number DESC"]
    for clause in order_by:
        _, key, ascending = ModelVersionGrammar.parse_order_by_for_search_model_versions(clause)
        if key not in ModelVersionGrammar.VALID_ORDER_BY_ATTRIBUTE_KEYS:
            raise invalid(f"Invalid order by key '{key}' specified. Valid keys are {ModelVersionGrammar.VALID_ORDER_BY_ATTRIBUTE_KEYS}")
        field = _MV_FIELDS[key]
        if field in observed:
            raise _unanswered_by_mlflow(f"`order_by` contains duplicate fields: {order_by}")
        observed.add(field)
        terms.append(OrderTerm("attribute", field, ascending, False))
    if "name" not in observed:
        terms.append(OrderTerm("attribute", "name", True, False))
    if "version" not in observed:
        terms.append(OrderTerm("attribute", "version", False, False))
    return OrderBy(MODEL_VERSION, terms)


# --------------------------------------------------------------------------------------------------------
# Sort values and keys
# --------------------------------------------------------------------------------------------------------


class _Desc:
    """Reverses the order of a sort value (descending terms)."""

    __slots__ = ("v",)

    def __init__(self, v: Any) -> None:
        self.v = v

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Desc) and self.v == other.v

    def __lt__(self, other: _Desc) -> bool:
        return bool(other.v < self.v)

    def __hash__(self) -> int:
        return hash(self.v)


# Order values of kinds that live in their own module (``search.logged_models`` registers its own when the
# package is imported), so dependencies run one way: logged_models -> ordering, never back.
KIND_RAW_VALUES: dict[str, Callable[[dict[str, Any], OrderTerm], Any]] = {}


def raw_value(entity: dict[str, Any], kind: str, term: OrderTerm) -> Any:
    """The entity's raw value for a term (None when missing)."""
    if kind == RUN:
        if term.type == "metric":
            return (entity.get("metrics") or {}).get(term.key)
        if term.type == "parameter":
            return (entity.get("params") or {}).get(term.key)
        if term.type == "tag":
            return (entity.get("tags") or {}).get(term.key)
        return (entity.get("info") or {}).get(term.key)
    if kind == EXPERIMENT and term.key == "experiment_id":
        v = entity.get("experiment_id")
        return None if v is None else int(v)  # an INTEGER column
    if kind == MODEL_VERSION and term.key == "version":
        v = entity.get("version")
        return None if v is None else int(v)
    raw = KIND_RAW_VALUES.get(kind)
    if raw is not None:
        return raw(entity, term)
    return entity.get(term.key)


def term_value(entity: dict[str, Any], kind: str, term: OrderTerm) -> tuple[int, Any]:
    """(rank, value): JSON-friendly and what page tokens store. rank orders null classes (always ascending)."""
    v = raw_value(entity, kind, term)
    if isinstance(v, Decimal):  # DynamoDB numbers: keep tokens JSON-serializable
        v = int(v) if v == v.to_integral_value() else float(v)
    if term.type == "metric":
        if v is None:
            return (2, None)
        v = float(v)
        if math.isnan(v):
            return (1, None)
        return (0, metric_value(v))
    if v is None:
        # nulls_last: values rank 0, NULL rank 1. sqlite default: NULL smallest, i.e. first when ascending.
        return (1, None) if term.nulls_last or not term.ascending else (0, None)
    return (0, v) if term.nulls_last or not term.ascending else (1, v)


def _key_part(rank: int, value: Any, term: OrderTerm) -> tuple[int, Any]:
    return (rank, value if term.ascending or value is None else _Desc(value))


def sort_key(entity: dict[str, Any], order_by: OrderBy) -> tuple[Any, ...]:
    """A key such that `sorted(entities, key=lambda e: sort_key(e, order_by))` is the SQL store's order."""
    return tuple(_key_part(*term_value(entity, order_by.kind, t), t) for t in order_by)


def position(entity: dict[str, Any], order_by: OrderBy) -> list[list[Any]]:
    """The entity's keyset position: [[rank, value], ...] per term (JSON-serializable)."""
    return [list(term_value(entity, order_by.kind, t)) for t in order_by]


def position_key(pos: list[list[Any]], order_by: OrderBy) -> tuple[Any, ...]:
    """The sort key of a keyset position: compare with `sort_key(entity, ...)` (entity after pos <=> key > this)."""
    return tuple(_key_part(rank, value, t) for (rank, value), t in zip(pos, order_by, strict=True))


def sort(entities: Iterable[dict[str, Any]], order_by: OrderBy) -> list[dict[str, Any]]:
    return sorted(entities, key=lambda e: sort_key(e, order_by))
