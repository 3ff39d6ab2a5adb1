"""Evaluate a parsed `Filter` on entity dicts the way MLflow's SqlAlchemyStore does on sqlite.

`matches(entity, filter)` reproduces the SQL semantics (see like.py for LIKE/ILIKE):
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

from serverless_mlflow.core.errors import invalid
from serverless_mlflow.search.filters import (
    EXPERIMENT,
    IS_PROMPT_TAG_KEY,
    MAX_FLOAT,
    MLFLOW_RUN_NAME,
    MODEL_VERSION,
    REGISTERED_MODEL,
    RUN,
    STAGE_DELETED_INTERNAL,
    Filter,
    Normalized,
)
from serverless_mlflow.search.grammar import _unanswered_by_mlflow
from serverless_mlflow.search.like import like_match


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
# package is imported), so dependencies run one way: logged_models -> filter_matching, never back.
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
