"""Parse + validate filter strings the way MLflow's SqlAlchemyStore does, and evaluate them on entity dicts.

`parse_*_filter` runs MLflow's parser (grammar.py) and then the checks the SQL store performs while building
its WHERE clause (comparator per key type, numeric coercions), so every error MLflow raises for a filter is
raised here, with its text and code. The result is a `Filter`: a list equal to MLflow's parsed comparisons
(`[{"type", "key", "comparator", "value"}, ...]`) that also carries the entity kind and the normalized form
`matches` evaluates.

`matches(entity, filter)` reproduces the SQL semantics on sqlite (see like.py for LIKE/ILIKE):
- a missing tag/param/metric/attribute (NULL) never satisfies a comparison (not even `!=` / `NOT IN`),
  except IS NULL / IS NOT NULL;
- metrics: the run's LATEST value per key (see `latest_metric`); NaN satisfies only `!=`;
  +/-inf compare as +/-1.7976931348623157e308 (the value the SQL store writes for them);
- strings compare by code point (sqlite BINARY collation on UTF-8 orders the same way).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any

from serverless_mlflow.errors import invalid
from serverless_mlflow.request.enums import ACTIVE_ONLY, ALL, DELETED_ONLY, VIEW_TYPE_NUMBERS
from serverless_mlflow.search.entity_grammars import ExperimentGrammar, ModelVersionGrammar, RegisteredModelGrammar
from serverless_mlflow.search.grammar import RunGrammar, _unanswered_by_mlflow
from serverless_mlflow.search.like import like_match

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
# Evaluation
# --------------------------------------------------------------------------------------------------------


def metric_value(value: float) -> float:
    """A metric value as the SQL store keeps it: +/-inf become +/-MAX_FLOAT (NaN is kept; callers test it)."""
    if math.isinf(value):
        return MAX_FLOAT if value > 0 else -MAX_FLOAT
    return value


def compare(comparator: str, lhs: Any, value: Any) -> bool:
    """`lhs <comparator> value` for a non-NULL lhs, as sqlite evaluates it (comparator upper-case)."""
    if comparator == "=":
        return bool(lhs == value)
    if comparator == "!=":
        return bool(lhs != value)
    if comparator == ">":
        return bool(lhs > value)
    if comparator == ">=":
        return bool(lhs >= value)
    if comparator == "<":
        return bool(lhs < value)
    if comparator == "<=":
        return bool(lhs <= value)
    if comparator == "LIKE":
        return like_match(lhs, value, True)
    if comparator == "ILIKE":
        return like_match(lhs, value, False)
    if comparator == "IN":
        return lhs in value
    if comparator == "NOT IN":
        return lhs not in value
    raise _unanswered_by_mlflow(f"Unsupported comparator '{comparator}'")


def _cmp_nullable(comparator: str, lhs: Any, value: Any) -> bool:
    return lhs is not None and compare(comparator, lhs, value)


def _run_matches(run: dict[str, Any], normalized: list[Normalized]) -> bool:
    info = run.get("info") or {}
    for key_type, key, comparator, value in normalized:
        if key_type == "attribute":
            # run_name filters read the `mlflow.runName` tag, like the SQL store (it orders by the column).
            lhs = (run.get("tags") or {}).get(MLFLOW_RUN_NAME) if key == "run_name" else info.get(key)
            if not _cmp_nullable(comparator, lhs, value):
                return False
        elif key_type == "metric":
            lhs = (run.get("metrics") or {}).get(key)
            if lhs is None:
                return False
            if math.isnan(lhs):
                if comparator != "!=":
                    return False
            elif not compare(comparator, metric_value(float(lhs)), value):
                return False
        elif key_type in ("parameter", "tag"):
            values = (run.get("params") if key_type == "parameter" else run.get("tags")) or {}
            if comparator == "IS NULL":
                if key in values:
                    return False
            elif comparator == "IS NOT NULL":
                if key not in values:
                    return False
            elif not _cmp_nullable(comparator, values.get(key), value):
                return False
        elif key_type == "dataset":
            if not any(_cmp_nullable(comparator, ds.get(key), value) for ds in run.get("datasets") or ()):
                return False
        else:
            raise invalid(f"Invalid search expression type '{key_type}'")
    return True


def _experiment_matches(experiment: dict[str, Any], normalized: list[Normalized]) -> bool:
    for type_, key, comparator, value in normalized:
        if type_ == "attribute":
            lhs = experiment.get(key)
            if key == "experiment_id" and lhs is not None:
                lhs = int(lhs)
            if not _cmp_nullable(comparator, lhs, value):
                return False
        else:
            tags = experiment.get("tags") or {}
            if comparator == "IS NULL":
                if key in tags:
                    return False
            elif comparator == "IS NOT NULL":
                if key not in tags:
                    return False
            elif not _cmp_nullable(comparator, tags.get(key), value):
                return False
    return True


def _is_prompt(entity: dict[str, Any]) -> bool:
    if "model_is_prompt" in entity:
        return bool(entity["model_is_prompt"])
    return (entity.get("tags") or {}).get(IS_PROMPT_TAG_KEY) == "true"


def _registry_matches(entity: dict[str, Any], flt: Filter) -> bool:
    if flt.kind == MODEL_VERSION and entity.get("current_stage") == STAGE_DELETED_INTERNAL:
        return False
    if not flt.querying_prompts and _is_prompt(entity):
        return False
    tags = entity.get("tags") or {}
    for type_, key, comparator, value in flt.normalized:
        lhs = entity.get(key) if type_ == "attribute" else tags.get(key)
        if key == "version" and type_ == "attribute" and lhs is not None:
            lhs = int(lhs)  # an INTEGER column; our dicts may carry it as a string
        if not _cmp_nullable(comparator, lhs, value):
            return False
    return True


# Matchers of filter kinds that live in their own module (``search.logged_models`` registers its own when the
# package is imported), so dependencies run one way: logged_models -> filters, never back.
KIND_MATCHERS: dict[str, Callable[[dict[str, Any], Filter], bool]] = {}


def matches(entity: dict[str, Any], comparisons: Filter) -> bool:
    """True when `entity` (a dict of the kind `comparisons` was parsed for) satisfies every comparison.

    Registered models / model versions: also applies MLflow's implicit rules (prompts excluded unless the filter
    selects them; model versions in stage `Deleted_Internal` never match), so `matches(e, parse_..._filter(None))`
    is the "is it listed at all" test. Runs/experiments: lifecycle (view_type) is NOT checked here; see
    `view_type_stages`.
    """
    if not isinstance(comparisons, Filter):
        raise TypeError("matches() needs a Filter returned by parse_*_filter")
    kind = comparisons.kind
    if kind == RUN:
        return _run_matches(entity, comparisons.normalized)
    if kind == EXPERIMENT:
        return _experiment_matches(entity, comparisons.normalized)
    if kind in (REGISTERED_MODEL, MODEL_VERSION):
        return _registry_matches(entity, comparisons)
    matcher = KIND_MATCHERS.get(kind)
    if matcher is not None:
        return matcher(entity, comparisons)
    raise ValueError(f"unknown filter kind {kind!r}")


def filter_entities(entities: Iterable[dict[str, Any]], comparisons: Filter) -> list[dict[str, Any]]:
    return [e for e in entities if matches(e, comparisons)]


def matcher(comparisons: Filter) -> Callable[[dict[str, Any]], bool]:
    return lambda entity: matches(entity, comparisons)


# --------------------------------------------------------------------------------------------------------
# Helpers for other modules
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


def is_more_recent_metric(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """The SQL store's latest-metric rule: `a` ({value, timestamp, step}) replaces the latest `b` when
    (step, timestamp, value) is strictly greater, comparing NaN as 0 and +/-inf as +/-MAX_FLOAT."""

    def k(m: dict[str, Any]) -> tuple[int, int, float]:
        v = float(m["value"])
        return (int(m.get("step") or 0), int(m["timestamp"]), 0.0 if math.isnan(v) else metric_value(v))

    return k(a) > k(b)


def latest_metric(history: Iterable[dict[str, Any]]) -> dict[str, Any] | None:
    """The metric the SQL store keeps as latest (first logged wins ties), from logging order."""
    latest: dict[str, Any] | None = None
    for m in history:
        if latest is None or is_more_recent_metric(m, latest):
            latest = m
    return latest


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
