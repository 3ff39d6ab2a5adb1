"""The gateway's invocation routes (MLflow's ``mlflow/server/gateway_api.py``), independent of the transport.

``answer`` takes a request and returns an ``Answer``: a status, headers and either a body or an iterator of
bytes (a stream). The HTTP API handler buffers a stream into one body; the function URL's server
(``stream_server.py``) writes it out as it comes. Per call: resolve the endpoint (its secrets decrypted here
only), check budgets, call the provider (fallbacks in order), record the usage trace and spend.
"""

from __future__ import annotations

import json
import random
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from serverless_mlflow.errors import MlflowError
from serverless_mlflow.llm_gateway import config as endpoint_config
from serverless_mlflow.llm_gateway import providers as p
from serverless_mlflow.llm_gateway.upstream import GatewayHTTPError

from . import budgets, pricing, tracing

GATEWAY_PREFIX = "/gateway"
_GEMINI = re.compile(r"^/gemini/v1beta/models/(?P<endpoint>[^/:]+):(?P<action>generateContent|streamGenerateContent)$")
_INVOCATIONS = re.compile(r"^/(?P<endpoint>[^/]+)/mlflow/invocations$")
_PROXY = re.compile(r"^/proxy/(?P<endpoint>[^/]+)/(?P<path>.+)$")


@dataclass
class Answer:
    status: int = 200
    body: bytes = b""
    stream: Iterator[bytes] | None = None
    headers: dict[str, str] = field(default_factory=lambda: {"content-type": "application/json"})


@dataclass
class Call:
    method: str
    path: str  # below /gateway
    query: str
    headers: dict[str, str]
    body: bytes
    username: str | None = None
    auth_context: dict[str, Any] | None = None


def json_answer(status: int, payload: Any) -> Answer:
    return Answer(status, json.dumps(payload, separators=(",", ":")).encode("utf-8"))


def detail(status: int, value: Any) -> Answer:
    """FastAPI's HTTPException answer: ``{"detail": ...}``."""
    return json_answer(status, {"detail": value})


def sse(chunks: Iterator[bytes]) -> Answer:
    return Answer(200, stream=chunks, headers={"content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache"})


def answer(call: Call) -> Answer:
    try:
        return _route(call)
    except GatewayHTTPError as error:
        return detail(error.status, error.detail)
    except MlflowError as error:
        # MLflow's translate_http_exception: an MlflowException becomes {"detail": {error_code, message}}.
        return detail(error.http_status, {"error_code": error.error_code, "message": error.message})


def _route(call: Call) -> Answer:
    path = call.path
    if call.method == "GET" and path == "/mlflow/v1/models":
        names = endpoint_config.list_endpoint_names()
        return json_answer(
            200, {"object": "list", "data": [{"id": n, "object": "model", "created": c // 1000, "owned_by": "mlflow"} for n, c in names]}
        )
    if call.method != "POST":
        return detail(405, "Method Not Allowed")
    if path == "/mlflow/v1/chat/completions":
        body = _body(call)
        return _unified_chat(call, _pop_model(body), body)
    if match := _INVOCATIONS.match(path):
        return _invocations(call, match["endpoint"], _body(call))
    passthrough = {
        "/openai/v1/chat/completions": p.OPENAI_CHAT,
        "/openai/v1/embeddings": p.OPENAI_EMBEDDINGS,
        "/openai/v1/responses": p.OPENAI_RESPONSES,
        "/anthropic/v1/messages": p.ANTHROPIC_MESSAGES,
    }
    if path in passthrough:
        body = _body(call)
        return _passthrough(call, _pop_model(body), passthrough[path], body)
    if match := _GEMINI.match(path):
        action = p.GEMINI_GENERATE if match["action"] == "generateContent" else p.GEMINI_STREAM
        return _passthrough(call, match["endpoint"], action, _body(call))
    if match := _PROXY.match(path):
        return _proxy(call, match["endpoint"], match["path"] + (f"?{call.query}" if call.query else ""), _body(call))
    return detail(404, "Not Found")


def _body(call: Call) -> dict[str, Any]:
    try:
        body = json.loads(call.body or b"")
    except ValueError as error:
        raise GatewayHTTPError(400, f"Invalid JSON payload: {error}") from None
    if not isinstance(body, dict):
        raise GatewayHTTPError(400, "Invalid JSON payload: the body must be a JSON object")
    return body


def _pop_model(body: dict[str, Any]) -> str:
    name = body.pop("model", None)
    if not name:
        raise GatewayHTTPError(400, "Missing required 'model' parameter in request body")
    return str(name)


def _chat_payload(body: dict[str, Any]) -> dict[str, Any]:
    """MLflow's ``chat.RequestPayload``: messages required (at least one, each with a role); n and stream default."""
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages or not all(isinstance(m, dict) and isinstance(m.get("role"), str) for m in messages):
        raise GatewayHTTPError(400, "Invalid chat payload: 'messages' must be a non-empty list of messages, each with a 'role'")
    return {
        "n": body.get("n", 1),
        "stream": bool(body.get("stream", False)),
        **{k: v for k, v in body.items() if k not in ("n", "stream") and v is not None},
    }


# --- the call itself: providers in order, traced and metered -------------------------------------------------


def _endpoint(name: str) -> endpoint_config.EndpointConfig:
    config = endpoint_config.resolve(name)
    if not config.primary:
        raise MlflowError(f"Endpoint '{config.endpoint_name}' has no PRIMARY models configured", "RESOURCE_DOES_NOT_EXIST")
    return config


def _candidates(config: endpoint_config.EndpointConfig) -> list[endpoint_config.ModelConfig]:
    """The primary (by weight under traffic split, else the first) then, with a fallback config, the fallbacks."""
    primary = config.primary
    if config.routing_strategy == "REQUEST_BASED_TRAFFIC_SPLIT" and len(primary) > 1:
        first = random.choices(primary, weights=[max(m.weight, 0.0) or 1e-9 for m in primary])[0]
    else:
        first = primary[0]
    chain = [first]
    if config.fallback and config.fallbacks:
        attempts = config.fallback.get("max_attempts") or len(config.fallbacks)
        chain += config.fallbacks[:attempts]
    return chain


def _run(
    call: Call,
    endpoint_name: str,
    request_type: str,
    function_name: str,
    inputs: Any,
    invoke: Callable[[p.Provider], Any],
    streaming: bool,
    message_format: str | None = None,
    on_chunk: Callable[[Any], str] | None = None,
) -> Any:
    """Call the endpoint's providers in order; returns the provider's answer (or stream, wrapped so that the
    trace and spend are recorded when it ends)."""
    config = _endpoint(endpoint_name)
    budgets.check(config, call.username)
    trace = tracing.GatewayTrace(
        config, request_type, function_name, call.headers, inputs, username=call.username, message_format=message_format
    )
    last_error: GatewayHTTPError | None = None
    for model in _candidates(config):
        provider = p.provider_for(model)
        span = tracing.ProviderSpan(model.provider, model.model_name, function_name, time.time_ns(), streaming=streaming)
        trace.providers.append(span)
        try:
            result = invoke(provider)
        except GatewayHTTPError as error:
            span.end_ns, span.error, last_error = time.time_ns(), str(error.detail), error
            continue
        if streaming:
            return _finish_when_done(trace, span, provider, result, call, on_chunk)
        _close_span(span, provider)
        trace.outputs = result
        _finish(trace, call)
        return result
    assert last_error is not None
    trace.error = str(last_error.detail)
    _finish(trace, call)
    raise last_error


def _close_span(span: tracing.ProviderSpan, provider: p.Provider) -> None:
    span.end_ns = time.time_ns()
    if provider.usage.known:
        span.usage = provider.usage.as_attribute()
        span.cost = pricing.cost(span.provider, span.model, span.usage)


def _finish(trace: tracing.GatewayTrace, call: Call) -> None:
    trace.end_ns = time.time_ns()
    budgets.record_spend(trace.endpoint, call.username, trace.total_cost())
    tracing.record(trace, call.auth_context)


def _finish_when_done(
    trace: tracing.GatewayTrace,
    span: tracing.ProviderSpan,
    provider: p.Provider,
    stream: Iterator[Any],
    call: Call,
    on_chunk: Callable[[Any], str] | None,
) -> Iterator[Any]:
    collected: list[Any] = []
    try:
        for item in stream:
            collected.append(item)
            if on_chunk is not None:
                trace.chunks.append((time.time_ns(), on_chunk(item)))
            yield item
    except GatewayHTTPError as error:
        span.error = trace.error = str(error.detail)
        raise
    finally:
        _close_span(span, provider)
        trace.outputs = _aggregate(collected) if on_chunk is not None else None
        _finish(trace, call)


def _aggregate(chunks: list[dict[str, Any]]) -> dict[str, Any] | None:
    """MLflow's ``aggregate_chat_stream_chunks``: the streamed chat as one completion."""
    if not chunks:
        return None
    states: dict[int, dict[str, Any]] = {}
    for chunk in chunks:
        for choice in chunk.get("choices") or []:
            state = states.setdefault(choice["index"], {"role": None, "content": [], "finish_reason": None})
            delta = choice.get("delta") or {}
            if delta.get("role") and state["role"] is None:
                state["role"] = delta["role"]
            if delta.get("content"):
                state["content"].append(delta["content"])
            if choice.get("finish_reason"):
                state["finish_reason"] = choice["finish_reason"]
    last = chunks[-1]
    result: dict[str, Any] = {
        "id": last.get("id"),
        "object": "chat.completion",
        "created": last.get("created"),
        "model": last.get("model"),
        "choices": [
            {
                "index": i,
                "message": {"role": s["role"] or "assistant", "content": "".join(s["content"]) or None},
                "finish_reason": s["finish_reason"] or "stop",
            }
            for i, s in sorted(states.items())
        ],
    }
    if usage := last.get("usage"):
        result["usage"] = usage
    return result


# --- routes ------------------------------------------------------------------------------------------------


def _unified_chat(call: Call, endpoint_name: str, body: dict[str, Any]) -> Answer:
    payload = _chat_payload(body)
    return _chat(call, endpoint_name, payload)


def _chat(call: Call, endpoint_name: str, payload: dict[str, Any]) -> Answer:
    if payload["stream"]:
        chunks = _run(
            call,
            endpoint_name,
            "unified/chat",
            "_guarded_stream",
            payload,
            lambda prov: _with_provider(prov.chat_stream(payload), prov),
            True,
            on_chunk=json.dumps,
        )
        return sse(_sse_chunks(chunks))
    result = _run(
        call, endpoint_name, "unified/chat", "_guarded_chat", payload, lambda prov: {**prov.chat(payload), "provider": prov.name}, False
    )
    return json_answer(200, result)


def _with_provider(chunks: Iterator[dict[str, Any]], provider: p.Provider) -> Iterator[dict[str, Any]]:
    for chunk in chunks:
        yield {**chunk, "provider": provider.name}


def _sse_chunks(chunks: Iterator[dict[str, Any]]) -> Iterator[bytes]:
    """MLflow's ``safe_stream(to_sse_chunk(...))``: a failure after the first byte is an SSE error chunk."""
    try:
        for chunk in chunks:
            yield f"data: {json.dumps(chunk, separators=(',', ':'))}\n\n".encode()
    except GatewayHTTPError as error:
        yield _sse_error(error)


def _sse_error(error: GatewayHTTPError) -> bytes:
    return f"data: {json.dumps({'error': {'message': str(error.detail), 'status_code': error.status}})}\n\n".encode()


def _invocations(call: Call, endpoint_name: str, body: dict[str, Any]) -> Answer:
    if "messages" in body:
        return _chat(call, endpoint_name, _chat_payload(body))
    if "input" in body:
        payload = {k: v for k, v in body.items() if v is not None}
        result = _run(call, endpoint_name, "unified/embeddings", "embeddings", payload, lambda prov: prov.embeddings(payload), False)
        return json_answer(200, result)
    raise GatewayHTTPError(400, "Invalid request: payload format must be either chat or embeddings")


_REQUEST_TYPES = {
    p.OPENAI_CHAT: "passthrough/model/openai-chat",
    p.OPENAI_EMBEDDINGS: "passthrough/model/openai-embeddings",
    p.OPENAI_RESPONSES: "passthrough/model/openai-responses",
    p.ANTHROPIC_MESSAGES: "passthrough/model/anthropic-messages",
    p.GEMINI_GENERATE: "passthrough/model/gemini-generateContent",
    p.GEMINI_STREAM: "passthrough/model/gemini-generateContent",
}
_FORMATS = {p.ANTHROPIC_MESSAGES: "anthropic", p.GEMINI_GENERATE: "gemini", p.GEMINI_STREAM: "gemini"}


def _passthrough(call: Call, endpoint_name: str, action: str, body: dict[str, Any]) -> Answer:
    streaming = action == p.GEMINI_STREAM or (action != p.OPENAI_EMBEDDINGS and bool(body.get("stream")))
    result = _run(
        call,
        endpoint_name,
        _REQUEST_TYPES[action],
        "passthrough",
        body,
        lambda prov: prov.passthrough(action, dict(body), call.headers),
        streaming,
        message_format=_FORMATS.get(action),
    )
    if streaming:
        return sse(_raw_stream(result))
    return json_answer(200, result)


def _raw_stream(lines: Iterator[bytes]) -> Iterator[bytes]:
    try:
        yield from lines
    except GatewayHTTPError as error:
        yield _sse_error(error)


def _proxy(call: Call, endpoint_name: str, path: str, body: dict[str, Any]) -> Answer:
    streaming_holder: list[bool] = []

    def invoke(prov: p.Provider) -> Any:
        streaming, result = prov.proxy(path, body, call.headers)
        streaming_holder.append(streaming)
        return iter([result]) if not streaming else result

    # Whether the upstream streams is known only from its answer: the call is made as a stream and a single
    # JSON answer comes through it as one item (MLflow peeks at the first item the same way).
    items = _run(call, endpoint_name, "proxy/raw", "_do_proxy", body, invoke, True)
    first = next(items, None)
    if streaming_holder and streaming_holder[-1]:
        return sse(_raw_stream(_prepend(first, items)))
    for _ in items:  # drain: records the trace
        pass
    return json_answer(200, first)


def _prepend(first: Any, rest: Iterator[Any]) -> Iterator[Any]:
    if first is not None:
        yield first
    yield from rest
