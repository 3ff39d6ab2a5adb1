"""Assessments (feedback, expectations, issue references) as MLflow's server stores and answers them.

MLflow turns a request's ``Assessment`` proto into an entity (``Feedback`` / ``Expectation`` /
``IssueReference.from_proto``), stores it as a ``SqlAssessments`` row (the value as JSON, a fresh id and
times when none were given, ``valid`` true) and answers ``to_mlflow_entity().to_proto()``. Each step drops
or rewrites something: an expectation loses its rationale and ``overrides``, a structured expectation value
travels as ``serialized_value`` JSON, numbers in a ``Value`` come back as doubles, empty strings become
unset. ``canonical`` runs that pipeline once, on write, so the stored document *is* MLflow's answer and
every read (get, the trace info's list, search) returns it as is.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from typing import Any

from google.protobuf import json_format
from google.protobuf.struct_pb2 import Value
from google.protobuf.timestamp_pb2 import Timestamp

from serverless_mlflow.core.deferred import deferred
from serverless_mlflow.core.errors import invalid
from serverless_mlflow.core.validation.json_values import validate_finite_json

protos = deferred("serverless_mlflow.request.protos")

ID_PREFIX = "a-"  # mlflow.tracing.constant.ASSESSMENT_ID_PREFIX
JSON_FORMAT = "JSON_FORMAT"
# mlflow.tracing.constant.AssessmentMetadataKey.SOURCE_RUN_ID: the run an assessment came from.
SOURCE_RUN_ID = "mlflow.assessment.sourceRunId"
_STACK_TRACE_LIMIT = 10000
_STACK_TRACE_PREFIX = "[Stack trace is truncated]\n...\n"
FEEDBACK, EXPECTATION, ISSUE = "feedback", "expectation", "issue"


def new_id() -> str:
    """``generate_assessment_id``: ``a-`` and 32 hex digits."""
    return ID_PREFIX + uuid.uuid4().hex


def content_id(trace_id: str, raw: dict[str, Any]) -> str:
    """A stable id for an assessment a client sent without one inside ``StartTraceV3``: a retried call
    (same trace, same document, same client-set create time) lands on the same entry instead of a second one."""
    digest = hashlib.sha256(json.dumps([trace_id, raw], sort_keys=True, default=str).encode()).hexdigest()
    return ID_PREFIX + digest[:32]


def dumps(assessment: dict[str, Any]) -> str:
    return json.dumps(assessment, separators=(",", ":"))


def stored(entries: dict[str, dict[str, Any]]) -> dict[str, str]:
    """The info item's ``assessments`` map entries (id -> JSON) for these assessments."""
    return {assessment_id: dumps(assessment) for assessment_id, assessment in entries.items()}


def kind_of(assessment: dict[str, Any]) -> str:
    for kind in (FEEDBACK, EXPECTATION, ISSUE):
        if kind in assessment:
            return kind
    raise ValueError("stored assessment without a value")


def _timestamp_json(millis: int) -> str:
    stamp = Timestamp()
    stamp.FromMilliseconds(int(millis))
    return stamp.ToJsonString()


def _value_json(python_value: Any) -> Any:
    """A ``google.protobuf.Value`` built from a Python value, as JSON (numbers come back as doubles)."""
    return json_format.MessageToDict(json_format.ParseDict(python_value, Value()))


def _error_json(error: Any) -> dict[str, Any]:
    """``AssessmentError.from_proto(...).to_proto()``: empty message/trace unset, long traces cut."""
    out: dict[str, Any] = {"error_code": error.error_code}
    if error.error_message:
        out["error_message"] = error.error_message
    if trace := error.stack_trace:
        if len(trace) > _STACK_TRACE_LIMIT:
            trace = _STACK_TRACE_PREFIX + trace[-(_STACK_TRACE_LIMIT - len(_STACK_TRACE_PREFIX)) :]
        out["stack_trace"] = trace
    return out


def expectation_json(value: Any) -> dict[str, Any]:
    """``ExpectationValue.to_proto``: a primitive as a ``Value``; None, lists and dicts as serialized JSON."""
    if value is not None and not isinstance(value, (int, float, bool, str)):
        return {"serialized_value": {"serialization_format": JSON_FORMAT, "value": json.dumps(value)}}
    return {"value": _value_json(value)}


def _expectation_value(expectation: Any) -> Any:
    if expectation.HasField("serialized_value"):
        serialized = expectation.serialized_value
        if serialized.serialization_format != JSON_FORMAT:
            raise invalid(f"Unknown serialization format: {serialized.serialization_format}. Only JSON_FORMAT is supported.")
        try:
            return json.loads(serialized.value)
        except ValueError:
            raise invalid(
                f"Invalid value {serialized.value!r} for parameter 'assessment.expectation.serialized_value.value' supplied: not JSON."
            ) from None
    return json_format.MessageToDict(expectation.value)


def parse(raw: Any, field: str = "assessment") -> Any:
    # A value is a protobuf Value: it takes a NaN or an infinity and then cannot be written back as JSON.
    validate_finite_json(raw, field)
    return protos.parse("Assessment", raw, field)


def canonical(raw: Any, trace_id: str, now_ms: int, assessment_id: str | None = None, field: str = "assessment") -> dict[str, Any]:
    """The stored form (= MLflow's answer) of an assessment a client sends: ``from_proto`` -> row -> proto.

    ``assessment_id``: the id to give it when the client sent none (default: a fresh one).
    """
    proto = parse(raw, field)
    kind = proto.WhichOneof("value")
    if kind is None:
        raise invalid("Unknown assessment type: None")
    source = {"source_type": protos.ENUMS["SourceType"][proto.source.source_type]}
    if proto.source.source_id:
        source["source_id"] = proto.source.source_id
    # An unset (or zero) time is "now", as SqlAssessments.from_mlflow_entity has it.
    created = proto.create_time.ToMilliseconds() if proto.HasField("create_time") else 0
    updated = proto.last_update_time.ToMilliseconds() if proto.HasField("last_update_time") else 0
    out: dict[str, Any] = {
        "assessment_id": proto.assessment_id or assessment_id or new_id(),
        "assessment_name": proto.assessment_name,
        "trace_id": trace_id,
        "source": source,
        "create_time": _timestamp_json(created or now_ms),
        "last_update_time": _timestamp_json(updated or now_ms),
        "valid": True,
    }
    if proto.span_id:
        out["span_id"] = proto.span_id
    metadata = dict(proto.metadata)
    if metadata:
        out["metadata"] = metadata
    if kind == FEEDBACK:
        feedback: dict[str, Any] = {"value": _value_json(json_format.MessageToDict(proto.feedback.value))}
        if proto.feedback.HasField("error"):
            feedback["error"] = _error_json(proto.feedback.error)
        out[FEEDBACK] = feedback
        if proto.rationale:
            out["rationale"] = proto.rationale
        if proto.overrides:
            out["overrides"] = proto.overrides
    elif kind == EXPECTATION:
        value = _expectation_value(proto.expectation)
        if value is None:
            raise invalid("The `value` field must be specified.")
        out[EXPECTATION] = expectation_json(value)
    else:
        out[ISSUE] = {"issue_name": proto.issue.issue_name}
        if proto.rationale:
            out["rationale"] = proto.rationale
    return out


def updated(existing: dict[str, Any], raw: Any, paths: list[str], trace_id: str, now_ms: int) -> dict[str, Any]:
    """``SqlAlchemyStore.update_assessment`` with the handler's field mask: the new stored form."""
    proto = parse(raw)
    kind = kind_of(existing)
    expectation = EXPECTATION in paths
    feedback = FEEDBACK in paths
    if expectation and feedback:
        raise invalid("Cannot specify both `expectation` and `feedback` parameters.")
    if "valid" in paths:
        # MLflow's handler passes `valid` to a store method that has no such parameter (an internal error).
        raise invalid("The `valid` field of an assessment cannot be updated; create an override instead.")
    if expectation:
        new_value = _expectation_value(proto.expectation)
        if new_value is None:
            raise invalid("The `value` field must be specified.")
        if kind != EXPECTATION:
            raise invalid("Cannot update expectation value on a Feedback assessment.")
    if feedback and kind != FEEDBACK:
        raise invalid("Cannot update feedback value on an Expectation assessment.")
    out = {k: v for k, v in existing.items() if k not in ("rationale", "metadata")}
    out["trace_id"] = trace_id
    out["last_update_time"] = _timestamp_json(now_ms)
    if "assessment_name" in paths:
        out["assessment_name"] = proto.assessment_name
    metadata = {**(existing.get("metadata") or {}), **(dict(proto.metadata) if "metadata" in paths else {})}
    if metadata:
        out["metadata"] = metadata
    if kind == EXPECTATION:
        if expectation:
            out[EXPECTATION] = expectation_json(new_value)
        return out
    if feedback:
        value: dict[str, Any] = {"value": _value_json(json_format.MessageToDict(proto.feedback.value))}
        if proto.feedback.HasField("error"):
            value["error"] = _error_json(proto.feedback.error)
        out[FEEDBACK] = value
    if kind == ISSUE:
        # The store rebuilds an issue reference as feedback; keep it what it is (its value is not editable).
        out.pop(FEEDBACK, None)
    if "rationale" in paths:
        out["rationale"] = proto.rationale
    elif "rationale" in existing:
        out["rationale"] = existing["rationale"]
    return out
