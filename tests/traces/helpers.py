"""What the client reads back about traces, reduced to what must agree between our server and SqlAlchemyStore."""

from __future__ import annotations

from typing import Any

# Server-assigned or location-specific values (ids, artifact locations) differ by store, not by behaviour.
STORE_SPECIFIC_TAGS = {"mlflow.artifactLocation", "mlflow.trace.spansLocation"}
STORE_SPECIFIC_METADATA = {"mlflow.trace.sizeStats", "mlflow.trace.sizeBytes"}


def span_view(span: Any, names: dict[str, str]) -> tuple[Any, ...]:
    attributes = {k: v for k, v in span.attributes.items() if k != "mlflow.traceRequestId"}
    return (
        span.name,
        names.get(span.parent_id) if span.parent_id else None,
        span.span_type,
        repr(span.inputs),
        repr(span.outputs),
        repr(sorted(attributes.items())),
        span.status.status_code.value if hasattr(span.status.status_code, "value") else str(span.status.status_code),
        span.end_time_ns >= span.start_time_ns,
    )


def trace_view(trace: Any) -> dict[str, Any]:
    info = trace.info
    names = {span.span_id: span.name for span in trace.data.spans}
    return {
        "name": info.tags.get("mlflow.traceName"),
        "state": str(info.state),
        "request_preview": info.request_preview,
        "response_preview": info.response_preview,
        "tags": {k: v for k, v in info.tags.items() if k not in STORE_SPECIFIC_TAGS},
        "metadata": {k: v for k, v in info.trace_metadata.items() if k not in STORE_SPECIFIC_METADATA},
        "spans": sorted(span_view(span, names) for span in trace.data.spans),
        "assessments": sorted(assessment_view(a) for a in info.assessments),
    }


def assessment_view(assessment: Any) -> tuple[Any, ...]:
    value = assessment.feedback.value if getattr(assessment, "feedback", None) else assessment.expectation.value
    return (
        assessment.name,
        type(assessment).__name__,
        repr(value),
        assessment.rationale,
        repr(sorted((assessment.metadata or {}).items())),
        str(assessment.source.source_type),
        assessment.source.source_id,
        # Expectation.from_proto never reads `valid` (None over any REST server; True straight from the store).
        assessment.valid if type(assessment).__name__ == "Feedback" else None,
        assessment.overrides is not None,
    )
