"""The rows one trace contributes to each metrics view, as MLflow's SQL store derives its columns.

A trace row (``trace_info`` columns: name, status, duration, the token usage and session promoted from its
metadata), one row per span (name, type, status, latency, model, provider and cost from its attributes, as
``log_spans`` stores them) and one row per *valid* assessment (name, type, value as JSON text, its numeric
``aggregate_value``). The rollups (indexer) and the raw path (query) both read rows from here, so they agree.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any

from serverless_mlflow.store import assessments, span_content, traces

TOKEN_USAGE_METADATA = "mlflow.trace.tokenUsage"
SESSION_METADATA = "mlflow.trace.session"
TOKEN_KEYS = ("input_tokens", "output_tokens", "total_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
COST_KEYS = ("input_cost", "output_cost", "total_cost")
SPAN_TYPE_ATTRIBUTE = "mlflow.spanType"
MODEL_ATTRIBUTE = "mlflow.llm.model"
PROVIDER_ATTRIBUTE = "mlflow.llm.provider"
COST_ATTRIBUTE = "mlflow.llm.cost"
MODEL_DIMENSION_MAX_LENGTH = 500
_STATUS_CODES = {0: "UNSET", 1: "OK", 2: "ERROR"}
_BIGINT = 2**63


@dataclass
class TraceRow:
    trace_id: str
    timestamp_ms: int
    name: str | None
    status: str
    latency: int | None
    session_id: str | None
    tags: dict[str, str]
    metadata: dict[str, str]
    tokens: dict[str, int] = field(default_factory=dict)


@dataclass
class SpanRow:
    span_id: str
    start_ms: int  # span start (nanoseconds // 1e6): the time span costs are bucketed by
    name: str | None
    type: str | None
    status: str
    latency: int | None
    model_name: str | None
    model_provider: str | None
    costs: dict[str, float] = field(default_factory=dict)


@dataclass
class AssessmentRow:
    name: str
    type: str
    value: str  # the value as MLflow stores it: json.dumps of the value
    numeric: float | None


def _json_object(value: Any) -> dict[str, Any]:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return {}
    return value if isinstance(value, dict) else {}


def token_count(value: Any) -> int | None:
    """``token_count_or_none``: an integral, finite count within BIGINT, else nothing."""
    if value is None or isinstance(value, bool):
        return None
    try:
        parsed = Decimal(str(value))
    except (InvalidOperation, ValueError):
        return None
    if not parsed.is_finite() or parsed != parsed.to_integral_value() or not -_BIGINT <= parsed < _BIGINT:
        return None
    return int(parsed)


def finite_float(value: Any) -> float | None:
    """``finite_float_or_none``."""
    if value is None or isinstance(value, bool):
        return None
    try:
        parsed = float(value)
    except (TypeError, ValueError, OverflowError):
        return None
    return parsed if math.isfinite(parsed) else None


def trace_row(info: dict[str, Any]) -> TraceRow:
    metadata = dict(info.get("trace_metadata") or {})
    usage = _json_object(metadata.get(TOKEN_USAGE_METADATA)) if TOKEN_USAGE_METADATA in metadata else {}
    tokens = {key: count for key in TOKEN_KEYS if key in usage and (count := token_count(usage[key])) is not None}
    duration = info.get("execution_duration")
    tags = traces.tags_of(info)
    if info.get("trace_name") is not None:
        tags["mlflow.traceName"] = info["trace_name"]
    return TraceRow(
        trace_id=info["trace_id"],
        timestamp_ms=int(info.get("request_time") or 0),
        name=info.get("trace_name"),
        status=info.get("state") or "STATE_UNSPECIFIED",
        latency=int(duration) if duration is not None else None,
        session_id=metadata.get(SESSION_METADATA),
        tags=tags,
        metadata=metadata,
        tokens=tokens,
    )


def _attribute(span: Any, key: str) -> Any:
    """An MLflow span attribute: JSON-encoded in an OTLP string value (``_try_parse_json_string``), or an OTLP
    value of another kind decoded as MLflow decodes it."""
    for attribute in span.attributes:
        if attribute.key == key:
            which = attribute.value.WhichOneof("value")
            if which == "string_value":
                text = attribute.value.string_value
                try:
                    return json.loads(text)
                except ValueError:
                    return text
            # Dicts and lists (token usage, costs) arrive as OTLP kvlist / array values from the OTLP exporter.
            return span_content.python_value(attribute.value)
    return None


def span_row(span: Any) -> SpanRow:
    """One OTLP span (``opentelemetry.proto.trace.v1.Span``) as ``log_spans`` stores its row."""
    span_type = _attribute(span, SPAN_TYPE_ATTRIBUTE)
    model = _attribute(span, MODEL_ATTRIBUTE)
    provider = _attribute(span, PROVIDER_ATTRIBUTE)
    cost = _json_object(_attribute(span, COST_ATTRIBUTE))
    end = span.end_time_unix_nano
    return SpanRow(
        span_id=span.span_id.hex(),
        start_ms=span.start_time_unix_nano // 1_000_000,
        name=span.name,
        type=span_type if isinstance(span_type, str) else None,
        status=_STATUS_CODES.get(span.status.code, "UNSET"),
        latency=(end - span.start_time_unix_nano) // 1_000_000 if end else None,
        model_name=model[:MODEL_DIMENSION_MAX_LENGTH] if isinstance(model, str) else None,
        model_provider=provider[:MODEL_DIMENSION_MAX_LENGTH] if isinstance(provider, str) else None,
        costs={key: value for key in COST_KEYS if (value := finite_float(cost.get(key))) is not None},
    )


def _stored_value(assessment: dict[str, Any], kind: str) -> Any:
    if kind == assessments.FEEDBACK:
        return assessment[kind].get("value")
    if kind == assessments.EXPECTATION:
        expectation = assessment[kind]
        if "serialized_value" in expectation:
            return json.loads(expectation["serialized_value"]["value"])
        return expectation.get("value")
    return {"issue_name": assessment[kind].get("issue_name")}


def aggregate_value(value: Any) -> float | None:
    """``assessment_aggregate``: the number MLflow aggregates an assessment value as (bools and yes/no count)."""
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, (int, float)):
        return finite_float(value)
    if isinstance(value, str) and value.strip().lower() in ("yes", "no"):
        return 1.0 if value.strip().lower() == "yes" else 0.0
    return None


def assessment_rows(info: dict[str, Any]) -> list[AssessmentRow]:
    """The trace's valid assessments (an overridden one is not counted)."""
    out = []
    for stored in (info.get("assessments") or {}).values():
        assessment = json.loads(stored)
        if assessment.get("valid") is False:
            continue
        kind = assessments.kind_of(assessment)
        value = _stored_value(assessment, kind)
        out.append(AssessmentRow(assessment.get("assessment_name", ""), kind, json.dumps(value), aggregate_value(value)))
    return out
