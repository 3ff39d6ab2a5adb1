"""Usage traces, as MLflow's gateway records them (``mlflow/gateway/tracing_utils.py``).

One trace per call in the endpoint's experiment: a root span ``gateway/<endpoint>`` (the request as input, the
answer as output; chunks as ``mlflow.chunk.item.<n>`` events when streamed) and one LLM span per provider call,
``provider/<provider>/<model>``, carrying the token usage and its cost. Trace metadata names the endpoint, the
request type and the caller, and sums tokens and cost, which budgets read. The trace is handed to the
``traces`` function the way MLflow's client exports one (OTLP spans, then ``start_trace``), asynchronously:
it lands after the answer, as with MLflow's own asynchronous exporter; the layout stays that function's.
"""

from __future__ import annotations

import json
import secrets
import time
from dataclasses import dataclass, field
from typing import Any

from serverless_mlflow import siblings
from serverless_mlflow.llm_gateway.config import EndpointConfig

PREVIEW_CHARS = 1000
METADATA_VALUE_CHARS = 250


@dataclass
class ProviderSpan:
    provider: str
    model: str
    method: str
    start_ns: int
    end_ns: int = 0
    streaming: bool = False
    usage: dict[str, int] | None = None
    cost: dict[str, float] | None = None
    error: str | None = None


@dataclass
class GatewayTrace:
    endpoint: EndpointConfig
    request_type: str
    function_name: str
    headers: dict[str, str]
    inputs: Any
    start_ns: int = field(default_factory=time.time_ns)
    end_ns: int = 0
    outputs: Any = None
    chunks: list[tuple[int, str]] = field(default_factory=list)
    providers: list[ProviderSpan] = field(default_factory=list)
    error: str | None = None
    username: str | None = None
    message_format: str | None = None

    @property
    def enabled(self) -> bool:
        return self.endpoint.usage_tracking and self.endpoint.experiment_id is not None

    def total_cost(self) -> float:
        return sum((span.cost or {}).get("total_cost", 0.0) for span in self.providers)

    def usage(self) -> dict[str, int]:
        total = {"input_tokens": 0, "output_tokens": 0, "total_tokens": 0}
        for span in self.providers:
            for key in total:
                total[key] += (span.usage or {}).get(key, 0)
        return total


def _hex(bits: int) -> str:
    return secrets.token_hex(bits // 8)


def any_value(value: Any) -> dict[str, Any]:
    """An OTLP AnyValue; the traces store JSON-encodes the decoded value, as ``Span.from_otel_proto`` does."""
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    if isinstance(value, dict):
        return {"kvlistValue": {"values": [{"key": str(k), "value": any_value(v)} for k, v in value.items()]}}
    if isinstance(value, list | tuple):
        return {"arrayValue": {"values": [any_value(v) for v in value]}}
    if value is None:
        return {}
    return {"stringValue": str(value)}


def _attributes(values: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"key": key, "value": any_value(value)} for key, value in values.items() if value is not None]


def _status(error: str | None) -> dict[str, Any]:
    return {"code": "STATUS_CODE_ERROR", "message": error} if error else {"code": "STATUS_CODE_OK", "message": ""}


def _caller(headers: dict[str, str]) -> str | None:
    """MLflow's ``_extract_caller``: the caller header, else the User-Agent's product token."""
    if caller := headers.get("x-mlflow-gateway-caller"):
        return caller
    product = (headers.get("user-agent") or "").split("/")[0].strip()
    return product or None


def _preview(value: Any) -> str:
    """The chat's last user message or the answer's text (MLflow's previews), else the JSON."""
    if isinstance(value, dict):
        messages = value.get("messages")
        if isinstance(messages, list) and messages and isinstance(messages[-1], dict) and isinstance(messages[-1].get("content"), str):
            return messages[-1]["content"][:PREVIEW_CHARS]
        choices = value.get("choices")
        if isinstance(choices, list) and choices and isinstance(choices[0], dict):
            content = (choices[0].get("message") or {}).get("content")
            if isinstance(content, str):
                return content[:PREVIEW_CHARS]
    return json.dumps(value)[:PREVIEW_CHARS]


def _truncated(value: Any) -> str:
    text = json.dumps(value)
    return text if len(text) <= METADATA_VALUE_CHARS else text[: METADATA_VALUE_CHARS - 3] + "..."


def record(trace: GatewayTrace, caller_context: dict[str, Any] | None = None) -> str | None:
    """Hand the finished trace to the traces function; its id, or None when the endpoint does not track usage."""
    if not trace.enabled:
        return None
    trace.end_ns = trace.end_ns or time.time_ns()
    otel_trace_id, root_id = _hex(128), _hex(64)
    trace_id = f"tr-{otel_trace_id}"
    root_attributes = {
        "mlflow.traceRequestId": trace_id,
        "mlflow.experimentId": trace.endpoint.experiment_id,
        "mlflow.spanType": "UNKNOWN",
        "endpoint_id": trace.endpoint.endpoint_id,
        "endpoint_name": trace.endpoint.endpoint_name,
        "server_url": trace.headers.get("host"),
        "mlflow.message.format": trace.message_format,
        "mlflow.spanFunctionName": trace.function_name,
        "mlflow.spanInputs": trace.inputs,
        "mlflow.spanOutputs": trace.outputs,
        "mlflow.llm.model": trace.providers[-1].model if trace.providers else None,
    }
    spans = [
        {
            "traceId": otel_trace_id,
            "spanId": root_id,
            "name": f"gateway/{trace.endpoint.endpoint_name}",
            "startTimeUnixNano": str(trace.start_ns),
            "endTimeUnixNano": str(trace.end_ns),
            "attributes": _attributes(root_attributes),
            "events": [
                {
                    "name": f"mlflow.chunk.item.{i}",
                    "timeUnixNano": str(at),
                    "attributes": [{"key": "mlflow.chunk.value", "value": {"stringValue": chunk}}],
                }
                for i, (at, chunk) in enumerate(trace.chunks)
            ]
            + (
                [
                    {
                        "name": "exception",
                        "timeUnixNano": str(trace.end_ns),
                        "attributes": [{"key": "exception.message", "value": {"stringValue": trace.error}}],
                    }
                ]
                if trace.error
                else []
            ),
            "status": _status(trace.error),
        }
    ]
    for span in trace.providers:
        attributes = {
            "mlflow.traceRequestId": trace_id,
            "mlflow.spanType": "LLM",
            "mlflow.llm.provider": span.provider,
            "mlflow.llm.model": span.model,
            "method": span.method,
            "streaming": True if span.streaming else None,
            "mlflow.chat.tokenUsage": span.usage,
            "mlflow.llm.cost": span.cost,
        }
        spans.append(
            {
                "traceId": otel_trace_id,
                "spanId": _hex(64),
                "parentSpanId": root_id,
                "name": f"provider/{span.provider}/{span.model}",
                "startTimeUnixNano": str(span.start_ns),
                "endTimeUnixNano": str(span.end_ns or trace.end_ns),
                "attributes": _attributes(attributes),
                "status": _status(span.error),
            }
        )
    metadata = {
        "mlflow.trace_schema.version": "3",
        "mlflow.gateway.endpointId": trace.endpoint.endpoint_id,
        "mlflow.gateway.requestType": trace.request_type,
        "mlflow.traceInputs": _truncated(trace.inputs),
        "mlflow.traceOutputs": _truncated(trace.outputs),
        "mlflow.trace.sizeStats": json.dumps({"num_spans": len(spans)}),
    }
    if caller := _caller(trace.headers):
        metadata["mlflow.gateway.caller"] = caller
    if trace.username:
        metadata["mlflow.auth.username"] = trace.username
    if any(span.usage for span in trace.providers):
        metadata["mlflow.trace.tokenUsage"] = json.dumps(trace.usage())
    if any(span.cost for span in trace.providers):
        costs = {
            key: sum((span.cost or {}).get(key, 0.0) for span in trace.providers) for key in ("input_cost", "output_cost", "total_cost")
        }
        metadata["mlflow.trace.cost"] = json.dumps(costs)
    headers = {"x-mlflow-experiment-id": trace.endpoint.experiment_id}
    otlp = {"resourceSpans": [{"resource": {}, "scopeSpans": [{"scope": {"name": "mlflow-serverless.gateway"}, "spans": spans}]}]}
    info = {
        "trace_id": trace_id,
        "trace_location": {"type": "MLFLOW_EXPERIMENT", "mlflow_experiment": {"experiment_id": trace.endpoint.experiment_id}},
        "request_time": _timestamp(trace.start_ns),
        "execution_duration": f"{(trace.end_ns - trace.start_ns) / 1e9:.3f}s",
        "state": "ERROR" if trace.error else "OK",
        "request_preview": _preview(trace.inputs),
        "response_preview": _preview(trace.outputs) if trace.outputs is not None else "",
        "trace_metadata": metadata,
        "tags": {"mlflow.traceName": f"gateway/{trace.endpoint.endpoint_name}"},
    }
    events = [
        siblings.api_event("POST", "/v1/traces", otlp, headers),
        siblings.api_event("POST", "/api/3.0/mlflow/traces", {"trace": {"trace_info": info}}),
    ]
    for event in events:  # the traces function accepts spans and info in either order
        if caller_context:
            event["requestContext"]["authorizer"] = {"lambda": caller_context}
        siblings.invoke("traces", event, wait=False)
    return trace_id


def _timestamp(ns: int) -> str:
    seconds, rest = divmod(ns, 1_000_000_000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{rest // 1_000_000:03d}Z"
