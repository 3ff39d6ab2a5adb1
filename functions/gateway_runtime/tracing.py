"""Usage traces, as MLflow's gateway records them (``mlflow/gateway/tracing_utils.py``).

One trace per call on an endpoint with usage tracking, in the endpoint's experiment: the root span
``gateway/<endpoint>`` (the traced function's request in, its answer out, streamed chunks as events), and
under it what MLflow's providers record: one LLM span ``provider/<provider>/<model>`` per provider call, and what
its guardrails record (``guardrails``: a GUARDRAIL span per guardrail run, its judge's EVALUATOR span and a
sanitization's LLM span under it). Trace metadata names the endpoint, the request type, the caller and the user; the
trace's token usage and cost are summed from its spans as MLflow's store sums them.

The trace is handed to the ``traces`` function the way MLflow's client exports one (OTLP spans, then
``start_trace``), as asynchronous invocations: it lands after the answer, as with MLflow's own asynchronous
exporter, and the trace layout stays that function's.
"""

from __future__ import annotations

import json
import secrets
import time
from typing import Any

from serverless_mlflow.auth.checks import GATEWAY_USAGE_TRACE
from serverless_mlflow.http import siblings
from serverless_mlflow.llm_gateway.config import EndpointConfig
from serverless_mlflow.request import workspace as request_workspace

from .spans import COST, FUNCTION_NAME, INPUTS, OUTPUTS, UNSET, USAGE, Span, dumps

PREVIEW_CHARS = 1000  # TRACE_REQUEST_RESPONSE_PREVIEW_MAX_LENGTH_OSS
METADATA_VALUE_CHARS = 250  # MAX_CHARS_IN_TRACE_INFO_METADATA
_USAGE_KEYS = ("input_tokens", "output_tokens", "total_tokens")
_CACHE_KEYS = ("cache_read_input_tokens", "cache_creation_input_tokens")
_COST_KEYS = ("input_cost", "output_cost", "total_cost")


class GatewayTrace:
    """The spans of one gateway call. Inactive (records nothing) when the endpoint does not track usage."""

    def __init__(
        self,
        endpoint: EndpointConfig,
        request_type: str | None,
        headers: dict[str, str],
        user_metadata: dict[str, str],
        message_format: str | None = None,
        root_type: str = "UNKNOWN",
    ) -> None:
        self.endpoint = endpoint
        self.active = endpoint.usage_tracking and endpoint.experiment_id is not None
        self.metadata = dict(user_metadata)
        self.metadata["mlflow.gateway.endpointId"] = endpoint.endpoint_id
        if request_type:
            self.metadata["mlflow.gateway.requestType"] = request_type
        if caller := _caller(headers):
            self.metadata["mlflow.gateway.caller"] = caller
        attributes: dict[str, Any] = {"endpoint_id": endpoint.endpoint_id, "endpoint_name": endpoint.endpoint_name}
        if host := headers.get("host"):
            attributes["server_url"] = host
        if message_format:
            attributes["mlflow.message.format"] = message_format
        self.root = Span(f"gateway/{endpoint.endpoint_name}", root_type)
        self.root.attributes.update(attributes)
        self.spans: list[Span] = [self.root]
        self.caller_context: dict[str, Any] | None = None

    def traced_function(self, name: str | None, inputs: Any) -> None:
        """``@mlflow.trace`` on the gateway's function: its name (a generator's span has none), the request
        as its inputs."""
        if name:
            self.root.attributes[FUNCTION_NAME] = name
        self.root.set_inputs(inputs)

    def child(self, name: str, span_type: str = "LLM", attributes: dict[str, Any] | None = None, parent: Span | None = None) -> Span:
        span = Span(name, span_type, parent=parent or self.root)
        span.attributes.update(attributes or {})
        self.spans.append(span)
        return span

    def finish(self, outputs: Any = UNSET, error: BaseException | None = None) -> str | None:
        """End the root span and hand the trace over; its id, or None when usage is not tracked."""
        if error is not None:
            self.root.record_error(error)
        self.root.end(outputs)
        if not self.active:
            return None
        return _export(self)

    def total_cost(self) -> float:
        """The call's cost as MLflow's budget callback sums it (its model spans' costs)."""
        return sum((span.attributes.get(COST) or {}).get("total_cost", 0.0) for span in self.spans if span.parent is not None)


def _caller(headers: dict[str, str]) -> str | None:
    """MLflow's ``_extract_caller``: the caller header, else the User-Agent's product token."""
    if caller := headers.get("x-mlflow-gateway-caller"):
        return caller
    product = (headers.get("user-agent") or "").split("/")[0].strip()
    return product or None


def _sum_top(spans: list[Span], attribute: str, keys: tuple[str, ...], optional: tuple[str, ...], zero: float) -> dict[str, Any] | None:
    """MLflow's ``_aggregate_from_nodes``: the values of the topmost spans that carry the attribute."""
    totals: dict[str, Any] = dict.fromkeys(keys, zero)
    found = False
    for span in spans:
        data = span.attributes.get(attribute)
        ancestor, parent = False, span.parent
        while parent is not None:
            ancestor = ancestor or bool(parent.attributes.get(attribute))
            parent = parent.parent
        if data and not ancestor:
            found = True
            for key in keys:
                totals[key] += data.get(key, zero)
            for key in optional:
                if key in data:
                    totals[key] = totals.get(key, zero) + data[key]
    return totals if found else None


def _truncated(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _last_message_text(value: Any, role: str) -> str | None:
    """MLflow's ``_get_truncated_preview`` message extraction (chat requests and answers, Responses API)."""
    if not isinstance(value, dict):
        return None
    messages: list[Any] | None = None
    if isinstance(value.get("messages"), list) and value["messages"]:
        messages = value["messages"]
    elif isinstance(value.get("choices"), list) and value["choices"] and isinstance(value["choices"][0], dict):
        message = value["choices"][0].get("message")
        messages = [message] if _is_message(message) else None
    elif isinstance(value.get("input"), list) and value["input"]:
        messages = value["input"]
    elif isinstance(value.get("output"), list) and value["output"]:
        messages = value["output"]
    elif "request" in value:
        return _last_message_text(value["request"], role)
    messages = [m for m in messages or [] if _is_message(m)]
    if not messages:
        return None
    message = next((m for m in reversed(messages) if m.get("role") == role), messages[-1])
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        for part in content:
            if isinstance(part, str):
                return part
            if isinstance(part, dict) and part.get("type") in ("text", "output_text"):
                return part.get("text")
    return ""


def _is_message(item: Any) -> bool:
    return isinstance(item, dict) and "role" in item and "content" in item


def preview(value: Any, role: str) -> str | None:
    if value is UNSET or value is None:
        return None
    text = dumps(value) if not isinstance(value, str) else value
    return _truncated(_last_message_text(value, role) or text, PREVIEW_CHARS)


def _otlp_value(value: Any) -> dict[str, Any]:
    """An OTLP AnyValue; the traces function stores the decoded value JSON-encoded, as MLflow stores attributes."""
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    if isinstance(value, dict):
        return {"kvlistValue": {"values": [{"key": str(k), "value": _otlp_value(v)} for k, v in value.items()]}}
    if isinstance(value, list | tuple):
        return {"arrayValue": {"values": [_otlp_value(v) for v in value]}}
    if value is None:
        return {}
    return {"stringValue": str(value)}


def _otlp_span(span: Span, trace: GatewayTrace, otel_trace_id: str, trace_id: str) -> dict[str, Any]:
    attributes = {"mlflow.traceRequestId": trace_id, **span.attributes}
    if span.parent is None:
        attributes["mlflow.experimentId"] = trace.endpoint.experiment_id
    status = (
        {"code": "STATUS_CODE_ERROR", "message": span.status_message}
        if span.status == "ERROR"
        else {"code": "STATUS_CODE_OK", "message": ""}
    )
    out: dict[str, Any] = {
        "traceId": otel_trace_id,
        "spanId": span.span_id,
        "name": span.name,
        "startTimeUnixNano": str(span.start_ns),
        "endTimeUnixNano": str(span.end_ns or span.start_ns),
        "attributes": [{"key": k, "value": _otlp_value(v)} for k, v in attributes.items() if v is not None],
        "events": [
            {
                "name": event["name"],
                "timeUnixNano": str(event["time_ns"]),
                "attributes": [{"key": k, "value": {"stringValue": v}} for k, v in event["attributes"].items()],
            }
            for event in span.events
        ],
        "status": status,
    }
    if span.parent is not None:
        out["parentSpanId"] = span.parent.span_id
    return out


def _size_stats(spans: list[dict[str, Any]], info: dict[str, Any]) -> dict[str, int]:
    """MLflow's ``add_size_stats_to_trace_metadata``, over the exported span dicts."""
    sizes = sorted(len(json.dumps(span).encode("utf-8")) for span in spans)
    total = sum(sizes) + len(json.dumps({"info": info, "data": {"spans": []}}).encode("utf-8")) + (len(sizes) - 1) * 2

    def percentile(q: float) -> int:
        index = (len(sizes) - 1) * q
        lower, upper = int(index), min(int(index) + 1, len(sizes) - 1)
        return int(sizes[lower] * (1 - (index - lower)) + sizes[upper] * (index - lower))

    return {
        "total_size_bytes": total,
        "num_spans": len(sizes),
        "max": sizes[-1],
        "p25": percentile(0.25),
        "p50": percentile(0.5),
        "p75": percentile(0.75),
    }


def _export(trace: GatewayTrace) -> str:
    otel_trace_id = secrets.token_hex(16)
    trace_id = f"tr-{otel_trace_id}"
    root = trace.root
    inputs, outputs = root.attributes.get(INPUTS, UNSET), root.attributes.get(OUTPUTS, UNSET)
    metadata = {"mlflow.trace_schema.version": "3", **trace.metadata}
    # MLflow's processor always sets both, empty when the root span has none (a call that failed).
    metadata["mlflow.traceInputs"] = "" if inputs is UNSET else _truncated(dumps(inputs), METADATA_VALUE_CHARS)
    metadata["mlflow.traceOutputs"] = "" if outputs is UNSET else _truncated(dumps(outputs), METADATA_VALUE_CHARS)
    if usage := _sum_top(trace.spans, USAGE, _USAGE_KEYS, _CACHE_KEYS, 0):
        metadata["mlflow.trace.tokenUsage"] = json.dumps(usage)
    if cost := _sum_top(trace.spans, COST, _COST_KEYS, (), 0.0):
        metadata["mlflow.trace.cost"] = json.dumps(cost)
    spans = [_otlp_span(span, trace, otel_trace_id, trace_id) for span in trace.spans]
    info: dict[str, Any] = {
        "trace_id": trace_id,
        "trace_location": {"type": "MLFLOW_EXPERIMENT", "mlflow_experiment": {"experiment_id": trace.endpoint.experiment_id}},
        "request_time": _timestamp(root.start_ns),
        "execution_duration": f"{(root.end_ns - root.start_ns) / 1e9:.3f}s",
        "state": "ERROR" if root.status == "ERROR" else "OK",
        "trace_metadata": metadata,
        "tags": {"mlflow.traceName": root.name},
    }
    if (request := preview(inputs, "user")) is not None:
        info["request_preview"] = request
    if (response := preview(outputs, "assistant")) is not None:
        info["response_preview"] = response
    stats = _size_stats(spans, info)
    metadata["mlflow.trace.sizeStats"] = json.dumps(stats)
    metadata["mlflow.trace.sizeBytes"] = str(stats["total_size_bytes"])
    otlp = {"resourceSpans": [{"resource": {}, "scopeSpans": [{"scope": {"name": "mlflow-serverless.gateway"}, "spans": spans}]}]}
    # The endpoint's experiment is in the call's workspace: the traces function serves the events there.
    scope = {request_workspace.HEADER: request_workspace.current()} if request_workspace.enabled() else {}
    events = [
        siblings.api_event("POST", "/v1/traces", otlp, {"x-mlflow-experiment-id": trace.endpoint.experiment_id, **scope}),
        siblings.api_event("POST", "/api/3.0/mlflow/traces", {"trace": {"trace_info": info}}, scope),
    ]
    # The usage trace is the gateway's own record of the call (MLflow's gateway writes it through its store): under
    # basic auth it goes as the caller, marked as the gateway's usage trace, which the traces function admits
    # whatever the caller's rights on the endpoint's experiment (a user with USE on the endpoint leaves one).
    context = {**trace.caller_context, "service": GATEWAY_USAGE_TRACE} if trace.caller_context else None
    for event in events:  # the traces function accepts spans and info in either order
        if context:
            event["requestContext"]["authorizer"] = {"lambda": context}
        siblings.invoke("traces", event, wait=False)
    return trace_id


def _timestamp(ns: int) -> str:
    seconds, rest = divmod(ns, 1_000_000_000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{rest // 1_000_000:03d}Z"
