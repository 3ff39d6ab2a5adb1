"""What ``traces/metrics`` may be asked (``sql_trace_metrics_utils`` configs) and its filter grammar
(``SearchTraceMetricsUtils``), with MLflow's messages."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar

from serverless_mlflow.core.errors import invalid
from serverless_mlflow.search.grammar import RunGrammar

TRACES, SPANS, ASSESSMENTS = "TRACES", "SPANS", "ASSESSMENTS"
VIEW_TYPES = ("METRIC_VIEW_TYPE_UNSPECIFIED", TRACES, SPANS, ASSESSMENTS)
AGGREGATION_TYPES = ("AGGREGATION_TYPE_UNSPECIFIED", "COUNT", "SUM", "AVG", "PERCENTILE", "MIN", "MAX")
_STATS = frozenset({"SUM", "AVG", "MIN", "MAX", "PERCENTILE"})
_SPREAD = frozenset({"AVG", "MIN", "MAX", "PERCENTILE"})
TOKEN_METRICS = ("input_tokens", "output_tokens", "total_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
COST_METRICS = ("input_cost", "output_cost", "total_cost")
SPAN_DIMENSIONS = ("span_name", "span_type", "span_status", "span_model_name", "span_model_provider")

# view type -> metric -> (aggregation types, dimensions)
CONFIGS: dict[str, dict[str, tuple[frozenset[str], tuple[str, ...]]]] = {
    TRACES: {
        "trace_count": (frozenset({"COUNT"}), ("trace_name", "trace_status")),
        "session_count": (frozenset({"COUNT"}), ()),
        "latency": (_SPREAD, ("trace_name",)),
        **{name: (_STATS, ("trace_name",)) for name in TOKEN_METRICS},
    },
    SPANS: {
        "span_count": (frozenset({"COUNT"}), SPAN_DIMENSIONS),
        "latency": (_SPREAD, ("span_name", "span_status")),
        **{name: (_STATS, ("span_model_name", "span_model_provider")) for name in COST_METRICS},
    },
    ASSESSMENTS: {
        "assessment_count": (frozenset({"COUNT"}), ("assessment_name", "assessment_value")),
        "assessment_value": (_SPREAD, ("assessment_name",)),
    },
}
MAX_RESULTS_DEFAULT = 1000  # mlflow.store.tracking.MAX_RESULTS_QUERY_TRACE_METRICS


@dataclass(frozen=True)
class Aggregation:
    type: str
    percentile: float | None = None

    @property
    def label(self) -> str:
        """``str(MetricAggregation)``: the data point's value key."""
        return f"P{self.percentile}" if self.type == "PERCENTILE" else self.type


@dataclass(frozen=True)
class Filter:
    view: str  # trace / span / assessment
    entity: str
    key: str | None
    value: str


def _quoted_list(values: Any) -> str:
    return "[" + ", ".join(repr(v) for v in values) + "]"


def validate(view_type: str, metric_name: str, aggregations: list[Aggregation], dimensions: list[str]) -> None:
    """``validate_query_trace_metrics_params``."""
    if view_type not in CONFIGS:
        raise invalid(f"view_type must be one of {_quoted_list(CONFIGS)}, got '{view_type}'")
    configs = CONFIGS[view_type]
    if metric_name not in configs:
        raise invalid(f"metric_name must be one of {_quoted_list(configs)}, got '{metric_name}'")
    allowed, dimension_names = configs[metric_name]
    if bad := sorted({a.type for a in aggregations} - allowed):
        raise invalid(f"Found invalid aggregation_type(s): {bad}. Supported aggregation types: {sorted(allowed)}")
    if bad := sorted(set(dimensions) - set(dimension_names)):
        raise invalid(f"Found invalid dimension(s): {bad}. Supported dimensions: {sorted(dimension_names)}")


def aggregation_of(raw: Any) -> Aggregation:
    """``MetricAggregation.from_proto`` (aggregation_type by name or number; percentile_value for PERCENTILE)."""
    if not isinstance(raw, dict):
        raise invalid(f"Invalid value {raw!r} for parameter 'aggregations' supplied.")
    value = raw.get("aggregation_type", raw.get("aggregationType"))
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < len(AGGREGATION_TYPES):
        value = AGGREGATION_TYPES[value]
    if value not in AGGREGATION_TYPES or value == "AGGREGATION_TYPE_UNSPECIFIED":
        raise invalid(f"'{value}' is not a valid AggregationType")
    percentile = raw.get("percentile_value", raw.get("percentileValue"))
    if percentile is not None:
        if isinstance(percentile, bool) or not isinstance(percentile, (int, float, str)):
            raise invalid(f"Invalid value {percentile!r} for parameter 'aggregations.percentile_value' supplied.")
        try:
            percentile = float(percentile)
        except ValueError:
            raise invalid(f"Invalid value {percentile!r} for parameter 'aggregations.percentile_value' supplied.") from None
        if not math.isfinite(percentile):
            raise invalid(f"Percentile value must be between 0 and 100, got {percentile}")
    if value == "PERCENTILE":
        if percentile is None:
            raise invalid("Percentile value is required for PERCENTILE aggregation")
        if not 0 <= percentile <= 100:
            raise invalid(f"Percentile value must be between 0 and 100, got {percentile}")
    elif percentile is not None:
        raise invalid(f"Percentile value is only allowed for PERCENTILE aggregation type, got {value}")
    return Aggregation(value, percentile)


# --- filters -----------------------------------------------------------------------------------------

_ENTITIES: dict[str, dict[str, bool]] = {
    "trace": {"status": False, "tag": True, "metadata": True},
    "span": {"name": False, "status": False, "type": False},
    "assessment": {"name": False, "type": False},
}


class MetricsFilterGrammar(RunGrammar):
    """``SearchTraceMetricsUtils``: one ``<view>.<entity>[.<key>] = '<value>'`` clause per filter string."""

    _NAMES: ClassVar[dict[str, str]] = {"trace": "trace", "span": "span", "assessment": "assessment"}

    @classmethod
    def _invalid_statement_token(cls, token: Any) -> bool:
        from sqlparse.sql import Comparison

        return not (isinstance(token, Comparison) or token.is_whitespace)

    @classmethod
    def _process_statement(cls, statement: Any) -> list[dict[str, Any]]:
        from sqlparse.sql import Comparison

        tokens = statement.tokens
        if invalids := [t for t in tokens if cls._invalid_statement_token(t)]:
            raise invalid(f"Invalid clause(s) in filter string: {', '.join(map(str, invalids))}")
        return [cls._get_comparison(t) for t in tokens if isinstance(t, Comparison)]

    @classmethod
    def _identifier(cls, identifier: str) -> dict[str, Any]:
        message = f"Invalid identifier {identifier!r}. Columns should be specified as 'trace.<key>', 'span.<key>', 'assessment.<key>'."
        parts = identifier.split(".", 2)
        if len(parts) not in (2, 3):
            raise invalid(message)
        view, entity = cls._trim_backticks(parts[0]), parts[1]
        key = parts[2] if len(parts) == 3 else None
        if view not in _ENTITIES:
            raise invalid(f"Invalid view type '{view}'. Valid values are dict_keys({list(_ENTITIES)})")
        entities = _ENTITIES[view]
        if entity not in entities:
            raise invalid(f"Invalid entity '{entity}' specified for view type '{view}'. Valid entities are {list(entities)}")
        if entities[entity] and key is None:
            raise invalid(f"Filtering by {entity} requires a key, e.g. '{view}.{entity}.<key> = <value>'")
        if not entities[entity] and key is not None:
            raise invalid(f"Filtering by {entity} does not require a key, use '{view}.{entity}' instead")
        return {"view": view, "entity": entity, "key": cls._trim_backticks(cls._strip_quotes(key)) if key else None}

    @classmethod
    def _get_comparison(cls, comparison: Any) -> dict[str, Any]:
        from sqlparse.sql import Identifier

        stripped = [token for token in comparison.tokens if not token.is_whitespace]
        cls._validate_comparison(stripped)
        out = cls._identifier(stripped[0].value)
        if stripped[1].value != "=":
            raise invalid(f"Invalid comparator: '{stripped[1].value}', only '=' operator is supported")
        token = stripped[2]
        if token.ttype in cls.STRING_VALUE_TYPES or isinstance(token, Identifier):
            out["value"] = cls._strip_quotes(token.value, expect_quoted_value=True)
        else:
            raise invalid(f"Expected a quoted string value for {out['entity']} value (e.g. 'my-value'). Got value {token.value}")
        return out


def parse_filter(filter_string: str) -> Filter:
    parsed = MetricsFilterGrammar.parse_search_filter(filter_string)
    if len(parsed) != 1:
        raise invalid(f"Invalid filter: '{filter_string}'. Expected one filter clause.")
    clause = parsed[0]
    return Filter(clause["view"], clause["entity"], clause["key"], clause["value"])


def check_filters(filters: list[Filter], view_type: str) -> None:
    for f in filters:
        if f.view == "span" and view_type != SPANS:
            raise invalid(f"Filtering by span is only supported for {SPANS} view type, got {view_type}")
        if f.view == "assessment" and view_type != ASSESSMENTS:
            raise invalid(f"Filtering by assessment is only supported for {ASSESSMENTS} view type, got {view_type}")
