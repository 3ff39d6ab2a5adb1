"""Parse + validate filter strings the way MLflow's SqlAlchemyStore does.

`parse_*_filter` runs MLflow's parser (grammar.py) and then the checks the SQL store performs while building
its WHERE clause (comparator per key type, numeric coercions), so every error MLflow raises for a filter is
raised here, with its text and code. The result is a `Filter`: a list equal to MLflow's parsed comparisons
(`[{"type", "key", "comparator", "value"}, ...]`) that also carries the entity kind and the normalized form
`filter_matching.matches` evaluates on entity dicts. Also here: what a request's view type and a filter's name
comparisons select (`view_type_stages`, `name_patterns`), which callers use before any entity is read.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from serverless_mlflow.core.errors import invalid
from serverless_mlflow.request.enums import ACTIVE_ONLY, ALL, DELETED_ONLY, VIEW_TYPE_NUMBERS
from serverless_mlflow.search.entity_grammars import ExperimentGrammar, ModelVersionGrammar, RegisteredModelGrammar
from serverless_mlflow.search.grammar import RunGrammar

RUN = "run"
EXPERIMENT = "experiment"
REGISTERED_MODEL = "registered_model"
MODEL_VERSION = "model_version"
LOGGED_MODEL = "logged_model"

MLFLOW_RUN_NAME = "mlflow.runName"
IS_PROMPT_TAG_KEY = "mlflow.prompt.is_prompt"
STAGE_DELETED_INTERNAL = "Deleted_Internal"
MAX_FLOAT = 1.7976931348623157e308

# A normalized comparison: (type, key, COMPARATOR, value) with aliases resolved and values coerced.
Normalized = tuple[str, str, str, Any]


class Filter(list):  # type: ignore[type-arg]
    """Parsed comparisons (equal, as a list, to MLflow's parse result) plus what evaluating them needs.

    Attributes:
        kind: "run" | "experiment" | "registered_model" | "model_version" | "logged_model".
        normalized: [(type, key, COMPARATOR, value)] ready for `matches`.
        querying_prompts: registry only: True when the filter selects prompts (`tags.mlflow.prompt.is_prompt =
            'true'`); otherwise prompts are excluded and is_prompt tag comparisons are dropped (MLflow's rule).
    """

    def __init__(self, kind: str, comparisons: Iterable[dict[str, Any]], normalized: list[Normalized], querying_prompts: bool = False):
        super().__init__(comparisons)
        self.kind = kind
        self.normalized = normalized
        self.querying_prompts = querying_prompts


# --------------------------------------------------------------------------------------------------------
# Parsing + store-side validation
# --------------------------------------------------------------------------------------------------------


def parse_run_filter(filter_string: str | None) -> Filter:
    """Parse a search_runs filter; raise MLflow's INVALID_PARAMETER_VALUE errors (same text)."""
    return validate_run_filter(RunGrammar.parse_search_filter(filter_string))


def validate_run_filter(parsed: list[dict[str, Any]]) -> Filter:
    """The comparator checks of `_get_sqlalchemy_filter_clauses` (a separate step: MLflow runs it after order_by)."""
    g = RunGrammar
    normalized: list[Normalized] = []
    for comp in parsed:
        key_type = comp["type"]
        comparator = comp["comparator"].upper()
        key = g.translate_key_alias(comp["key"])
        value = comp["value"]
        if g.is_string_attribute(key_type, key, comparator) or g.is_numeric_attribute(key_type, key, comparator):
            pass
        elif g.is_metric(key_type, comparator):
            value = float(value)
        elif g.is_param(key_type, comparator) or g.is_tag(key_type, comparator) or g.is_dataset(key_type, comparator):
            pass
        else:
            raise invalid(f"Invalid search expression type '{key_type}'")
        normalized.append((key_type, key, comparator, value))
    return Filter(RUN, parsed, normalized)


def parse_experiment_filter(filter_string: str | None) -> Filter:
    """Parse a search_experiments filter (+ `_get_search_experiments_filter_clauses` checks)."""
    parsed = ExperimentGrammar.parse_search_filter(filter_string)
    g = ExperimentGrammar
    normalized: list[Normalized] = []
    for f in parsed:
        type_, key, comparator, value = f["type"], f["key"], f["comparator"], f["value"]
        if type_ == "attribute":
            if key == "experiment_id":
                if comparator not in ("=", "!=", "IN", "NOT IN"):
                    raise invalid(f"Invalid comparator for experiment_id: {comparator}")
                value = tuple(_parse_experiment_id(v) for v in value) if isinstance(value, tuple) else _parse_experiment_id(value)
            else:
                if g.is_string_attribute(type_, key, comparator) and comparator not in ("=", "!=", "LIKE", "ILIKE"):
                    raise invalid(f"Invalid comparator for string attribute: {comparator}")
                if g.is_numeric_attribute(type_, key, comparator):
                    if comparator not in ("=", "!=", "<", "<=", ">", ">="):
                        raise invalid(f"Invalid comparator for numeric attribute: {comparator}")
                    if isinstance(value, float):
                        raise invalid(f"Invalid value for numeric attribute '{key}': {str(value)!r}")
                    try:
                        value = int(value)
                    except (TypeError, ValueError):
                        raise invalid(f"Invalid value for numeric attribute '{key}': {value!r}") from None
        elif type_ == "tag":
            if comparator not in ("IS NULL", "IS NOT NULL", "=", "!=", "LIKE", "ILIKE"):
                raise invalid(f"Invalid comparator for tag: {comparator}")
        else:
            raise invalid(f"Invalid token type: {type_}")
        normalized.append((type_, key, comparator, value))
    return Filter(EXPERIMENT, parsed, normalized)


def _parse_experiment_id(experiment_id: Any) -> int:
    """mlflow.utils.validation._parse_experiment_id."""
    try:
        return int(experiment_id)
    except (ValueError, TypeError):
        raise invalid(f"Invalid experiment ID '{experiment_id}'. Experiment ID must be a valid integer.") from None


def parse_registered_model_filter(filter_string: str | None) -> Filter:
    """Parse a search_registered_models filter (+ `_get_search_registered_model_filter_query` checks).

    NB: MLflow runs these store checks after parsing order_by and the page token; `prepare_registered_model_search`
    keeps that order. Use `RegisteredModelGrammar.parse_search_filter` + `validate_registered_model_filter` to split.
    """
    return validate_registered_model_filter(RegisteredModelGrammar.parse_search_filter(filter_string))


def validate_registered_model_filter(parsed: list[dict[str, Any]]) -> Filter:
    normalized: list[Normalized] = []
    for f in parsed:
        type_, key, comparator, value = f["type"], f["key"], f["comparator"], f["value"]
        if type_ == "attribute":
            if key != "name":
                raise invalid(f"Invalid attribute name: {key}")
            if comparator not in ("=", "!=", "LIKE", "ILIKE", "IN", "NOT IN"):
                raise invalid(f"Invalid comparator for attribute: {comparator}")
        elif type_ == "tag":
            if comparator not in ("=", "!=", "LIKE", "ILIKE"):
                raise invalid(f"Invalid comparator for tag: {comparator}")
        else:
            raise invalid(f"Invalid token type: {type_}")
        normalized.append((type_, key, comparator, value))
    return _registry_filter(REGISTERED_MODEL, parsed, normalized)


def parse_model_version_filter(filter_string: str | None) -> Filter:
    """Parse a search_model_versions filter (+ `_get_search_model_versions_filter_clauses` checks)."""
    parsed = ModelVersionGrammar.parse_search_filter(filter_string)
    g = ModelVersionGrammar
    normalized: list[Normalized] = []
    for f in parsed:
        type_, key, comparator, value = f["type"], f["key"], f["comparator"], f["value"]
        if type_ == "attribute":
            if key not in g.VALID_SEARCH_ATTRIBUTE_KEYS:
                raise invalid(f"Invalid attribute name: {key}")
            if key in g.NUMERIC_ATTRIBUTES:
                if comparator not in g.VALID_NUMERIC_ATTRIBUTE_COMPARATORS:
                    raise invalid(f"Invalid comparator for attribute {key}: {comparator}")
                if isinstance(value, float):
                    raise invalid(f"Invalid value for numeric attribute '{key}': {value!r}")
                try:
                    value = int(value)
                except (TypeError, ValueError):
                    raise invalid(f"Invalid value for numeric attribute '{key}': {value!r}") from None
            elif comparator not in g.VALID_STRING_ATTRIBUTE_COMPARATORS or (
                comparator in ("IN", "NOT IN") and key not in ("run_id", "name")
            ):
                raise invalid(f"Invalid comparator for attribute: {comparator}")
            field = {"source_path": "source", "version_number": "version"}.get(key, key)
            normalized.append((type_, field, comparator, value))
        elif type_ == "tag":
            if comparator not in ("=", "!=", "LIKE", "ILIKE"):
                raise invalid(f"Invalid comparator for tag: {comparator}")
            normalized.append((type_, key, comparator, value))
        else:
            raise invalid(f"Invalid token type: {type_}")
    return _registry_filter(MODEL_VERSION, parsed, normalized)


def _registry_filter(kind: str, parsed: list[dict[str, Any]], normalized: list[Normalized]) -> Filter:
    """MLflow's prompt rule: unless the filter selects prompts, drop is_prompt tag comparisons and exclude prompts."""
    querying = False
    for f in parsed:
        if f["type"] != "tag" or f["key"] != IS_PROMPT_TAG_KEY:
            continue
        querying = (f["comparator"] == "=" and f["value"].lower() == "true") or (f["comparator"] == "!=" and f["value"].lower() == "false")
        break
    if not querying:
        normalized = [n for n in normalized if not (n[0] == "tag" and n[1] == IS_PROMPT_TAG_KEY)]
    return Filter(kind, parsed, normalized, querying_prompts=querying)


# --------------------------------------------------------------------------------------------------------
# What a request selects before any entity is read (lifecycle stages, name index hints)
# --------------------------------------------------------------------------------------------------------


def view_type_stages(view_type: int | str | None) -> set[str]:
    """Lifecycle stages a ViewType selects (1/"ACTIVE_ONLY" -> {"active"}, 2 -> {"deleted"}, 3 -> both)."""
    if isinstance(view_type, str):
        view_type = VIEW_TYPE_NUMBERS.get(view_type.upper(), ACTIVE_ONLY)
    view_type = view_type or ACTIVE_ONLY
    stages: set[str] = set()
    if view_type in (ACTIVE_ONLY, ALL):
        stages.add("active")
    if view_type in (DELETED_ONLY, ALL):
        stages.add("deleted")
    return stages


def name_patterns(comparisons: Filter) -> list[tuple[str, Any]]:
    """The (COMPARATOR, value) comparisons on the entity's name: runs `attributes.run_name`, experiments and
    registered models / model versions `name`. For index-backed candidate search (FTS) before `matches`."""
    key = "run_name" if comparisons.kind == RUN else "name"
    return [(c, v) for (t, k, c, v) in comparisons.normalized if t == "attribute" and k == key]


def is_simple_name_substring(comparisons: Filter) -> tuple[str, bool] | None:
    """(substring, case_sensitive) when the filter contains `name LIKE '%s%'` / `ILIKE` with a wildcard-free
    non-empty s (runs: `attributes.run_name`): every match contains s (ILIKE: in `ascii_lower`). Else None.
    Other comparisons may be present: apply `matches` to the candidates."""
    for comparator, value in name_patterns(comparisons):
        if comparator in ("LIKE", "ILIKE") and isinstance(value, str) and len(value) >= 3 and value[0] == "%" and value[-1] == "%":
            inner = value[1:-1]
            if inner and "%" not in inner and "_" not in inner:
                return inner, comparator == "LIKE"
    return None
