"""Each gateway route's call, in MLflow's order (``mlflow/server/gateway_api.py``): resolve the endpoint,
check its budgets, build its providers, then run the traced function: the endpoint's BEFORE guardrails, the
provider chain, its AFTER guardrails (``guardrails``; unified chat calls), the spend recorded when it ends.

A unary call answers the result or MLflow's error; a streamed one answers 200 and turns a failure after that
into an SSE error chunk (MLflow's ``safe_stream``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

from serverless_mlflow.core.errors import MlflowError, wrong_state
from serverless_mlflow.llm_gateway import config as endpoint_config
from serverless_mlflow.llm_gateway import providers as p
from serverless_mlflow.llm_gateway.upstream import GatewayHTTPError

from . import aggregate, budgets, guardrails, payloads
from .answers import Answer, Call, json_answer, sse
from .chain import Chain
from .spans import exception_type
from .tracing import GatewayTrace

SYSTEM_ONE_CHAT_REJECTION = (
    "System One models only support structured evaluation through /gateway/typesafe/v1/systemone. Use a chat model for chat completions."
)
_REQUEST_TYPES = {
    p.OPENAI_CHAT: "passthrough/model/openai-chat",
    p.OPENAI_EMBEDDINGS: "passthrough/model/openai-embeddings",
    p.OPENAI_RESPONSES: "passthrough/model/openai-responses",
    p.OPENAI_RESPONSES_COMPACT: "passthrough/model/openai-responses",
    p.ANTHROPIC_MESSAGES: "passthrough/model/anthropic-messages",
    p.TYPESAFE_SYSTEM_ONE: "passthrough/model/typesafe-systemone",
    p.GEMINI_GENERATE: "passthrough/model/gemini-generateContent",
    p.GEMINI_STREAM: "passthrough/model/gemini-generateContent",
}
_FORMATS = {p.ANTHROPIC_MESSAGES: "anthropic", p.GEMINI_GENERATE: "gemini", p.GEMINI_STREAM: "gemini"}
_REDUCERS: dict[str, Callable[[list[Any]], Any]] = {
    p.ANTHROPIC_MESSAGES: aggregate.anthropic_chunks,
    p.GEMINI_STREAM: aggregate.gemini_chunks,
    p.OPENAI_RESPONSES: aggregate.openai_responses_chunks,
}


# --- set-up -------------------------------------------------------------------------------------------


def _check_system_one(config: endpoint_config.EndpointConfig, system_one_route: bool) -> None:
    """MLflow's ``_validate_system_one_endpoint`` over every model of the endpoint."""
    supported = [p.supports_system_one(model.provider, model.model_name) for model in config.models]
    if system_one_route:
        if not any(supported):
            raise GatewayHTTPError(
                422, "Gateway endpoint does not use a System One model. Use a TypeSafe or OpenRouter Jev decision model.", "HTTPException"
            )
        if not all(supported):
            raise GatewayHTTPError(
                400,
                "System One endpoints cannot mix System One and chat models. Every primary and fallback model must support System One.",
                "HTTPException",
            )
    elif any(supported):
        raise GatewayHTTPError(400, SYSTEM_ONE_CHAT_REJECTION, "HTTPException")


def _resolve(name: str, system_one: bool = False) -> endpoint_config.EndpointConfig:
    """``_create_provider_from_endpoint_name``'s checks (``get_endpoint_config``, System One)."""
    config = endpoint_config.resolve(name)
    _check_system_one(config, system_one)
    return config


def _user_metadata(call: Call) -> dict[str, str]:
    return {"mlflow.auth.username": call.username} if call.username else {}


def _chain(call: Call, config: endpoint_config.EndpointConfig, request_type: str, message_format: str | None = None) -> Chain:
    """``_create_provider``: the endpoint's providers, their calls traced into the call's trace."""
    if not config.primary:
        raise MlflowError(f"Endpoint '{config.endpoint_name}' has no PRIMARY models configured", "RESOURCE_DOES_NOT_EXIST")
    trace = GatewayTrace(config, request_type, call.headers, _user_metadata(call), message_format)
    trace.caller_context = call.auth_context
    return Chain(config, trace)


def _admit(call: Call, config: endpoint_config.EndpointConfig) -> None:
    """``check_budget_limit``."""
    budgets.check(config, call.username, call.auth_context)


def _unguarded(call: Call, config: endpoint_config.EndpointConfig) -> None:
    """Guardrails run on the unified chat routes only (``guardrails``); MLflow runs them on the passthrough and
    proxy routes too, so an endpoint that has any refuses those routes rather than serve them unguarded."""
    if guardrails.load(call, config.endpoint_id):
        raise wrong_state(
            f"Endpoint '{config.endpoint_name}' has guardrails, which this gateway runs on its unified chat routes only "
            "(/gateway/<endpoint>/mlflow/invocations, /gateway/mlflow/v1/chat/completions)."
        )


# --- running the traced function ----------------------------------------------------------------------


def _finish(trace: GatewayTrace, call: Call, outputs: Any = None, error: BaseException | None = None) -> None:
    """The traced function's end: the spend recorded (MLflow's on_complete), then the root span closed."""
    if trace.active:
        budgets.record_spend(trace.endpoint, call.username, trace.total_cost())
    if error is not None:
        trace.finish(error=error)
    else:
        trace.finish(outputs)


def _unary(call: Call, chain: Chain, function: str, inputs: Any, run: Callable[[], Any]) -> Answer:
    trace = chain.trace
    trace.traced_function(function, inputs)
    try:
        result = run()
    except Exception as error:
        _finish(trace, call, error=error)
        raise
    _finish(trace, call, result)
    return json_answer(200, result)


def _streamed(
    call: Call, chain: Chain, inputs: Any, items: Callable[[], Iterator[Any]], reducer: Callable[[list[Any]], Any] | None
) -> Iterator[Any]:
    """An ``@mlflow.trace``d generator: the root span opens at the first item asked for, records each item,
    and ends with the reduced items (or the list of them) or the error."""
    chain.trace.traced_function(None, inputs)  # MLflow's generator spans carry no function name
    yield from _recorded(call, chain.trace, items(), reducer)


def _recorded(call: Call, trace: GatewayTrace, items: Iterator[Any], reducer: Callable[[list[Any]], Any] | None) -> Iterator[Any]:
    """Each item as a chunk event of the root span; the trace finished when the items end or fail."""
    collected: list[Any] = []
    try:
        for item in items:
            collected.append(item)
            trace.root.chunk(item)
            yield item
    except Exception as error:
        _finish(trace, call, error=error)
        raise
    _finish(trace, call, reducer(collected) if reducer else collected)


def _safe(chunks: Iterator[bytes]) -> Iterator[bytes]:
    """MLflow's ``safe_stream``: a failure once the answer has begun is its last chunk."""
    try:
        yield from chunks
    except Exception as error:
        message = json.dumps({"error": {"message": str(error), "type": exception_type(error)}})
        yield f"data: {message}\n\n".encode()


def _sse_json(chunks: Iterator[dict[str, Any]]) -> Iterator[bytes]:
    for chunk in chunks:
        yield f"data: {json.dumps(chunk, separators=(',', ':'), ensure_ascii=False)}\n\n".encode()


# --- unified routes -----------------------------------------------------------------------------------


def invocations(call: Call, endpoint_name: str, body: dict[str, Any]) -> Answer:
    config = endpoint_config.resolve(endpoint_name)
    _admit(call, config)
    if "messages" in body:
        payload = payloads.chat(body)
        _check_system_one(config, False)
        return _chat(call, _chain(call, config, "unified/chat"), payload)
    if "input" in body:
        payload = payloads.embeddings(body)
        _check_system_one(config, False)
        chain = _chain(call, config, "unified/embeddings")
        return _unary(call, chain, "embeddings", payload, lambda: chain.unified("embeddings", payload))
    raise GatewayHTTPError(400, "Invalid request: payload format must be either chat or embeddings", "HTTPException")


def chat_completions(call: Call, endpoint_name: str, body: dict[str, Any]) -> Answer:
    config = _resolve(endpoint_name)
    chain = _chain(call, config, "unified/chat")
    _admit(call, config)
    return _chat(call, chain, payloads.chat(body))


def _judge_chat(call: Call) -> guardrails.ChatCall:
    """A guardrail's judge or sanitizer call: this gateway's chat route, in process, as the caller, with the
    guardrail bypass header (MLflow sets it on sanitization calls; here judge calls carry it too, so a judge on
    a guarded endpoint cannot recurse)."""
    headers = {**call.headers, guardrails.BYPASS_HEADER: "1"}
    inner = Call("POST", "/mlflow/v1/chat/completions", "", headers, b"", call.username, call.is_admin, call.auth_context)

    def chat(endpoint_name: str, body: dict[str, Any]) -> dict[str, Any]:
        return guardrails.answer_json(chat_completions(inner, endpoint_name, body))

    return chat


def _guarded_request(
    guards: list[guardrails.Guardrail], judge: guardrails.ChatCall, trace: GatewayTrace, payload: dict[str, Any]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The BEFORE guardrails on the request's ``model_dump()`` (what MLflow's judge and spans see): (that dump as
    they let it through, the payload to send on: the caller's own unless a guardrail rewrote it)."""
    dumped = payloads.chat_dump(payload)
    guarded = guardrails.before(guards, judge, trace, dumped)
    return guarded, payload if guarded == dumped else payloads.chat(payloads.without_none(guarded))


def _chat(call: Call, chain: Chain, payload: dict[str, Any]) -> Answer:
    guards = guardrails.load(call, chain.trace.endpoint.endpoint_id)
    judge = _judge_chat(call)
    if payload.get("stream"):
        # As in MLflow, AFTER guardrails do not run on streamed answers; BEFORE ones do, inside the trace.

        def chunks() -> Iterator[dict[str, Any]]:
            yield from chain.chat_stream(_guarded_request(guards, judge, chain.trace, payload)[1] if guards else payload)

        return sse(_safe(_sse_json(_streamed(call, chain, payload, chunks, aggregate.chat_chunks))))

    def run() -> Any:
        if not guards:
            return chain.unified("chat", payload)
        guarded, forwarded = _guarded_request(guards, judge, chain.trace, payload)
        return guardrails.after(guards, judge, chain.trace, guarded, chain.unified("chat", forwarded))

    # MLflow's traced function is named so whether or not the endpoint has guardrails.
    return _unary(call, chain, "_guarded_chat", payload, run)


# --- passthrough routes -------------------------------------------------------------------------------


# The fields each OpenAI passthrough route's provider reads first (checked before the call: see payloads).
_SHAPED_FIELDS = {p.OPENAI_CHAT: ("messages",), p.OPENAI_EMBEDDINGS: ("input",), p.OPENAI_RESPONSES: ("input",)}


def passthrough(call: Call, action: str, body: dict[str, Any]) -> Answer:
    if action == p.OPENAI_RESPONSES_COMPACT and body.get("stream"):
        raise GatewayHTTPError(400, "stream=true is not supported on /responses/compact; compaction is a unary request.", "HTTPException")
    endpoint_name = payloads.pop_model(body)
    payloads.passthrough_shape(_SHAPED_FIELDS.get(action, ()), body)
    if action == p.TYPESAFE_SYSTEM_ONE and body.get("stream"):
        raise GatewayHTTPError(400, "TypeSafe System One does not support streaming.", "HTTPException")
    config = _resolve(endpoint_name, system_one=action == p.TYPESAFE_SYSTEM_ONE)
    chain = _chain(call, config, _REQUEST_TYPES[action], _FORMATS.get(action))
    _admit(call, config)
    _unguarded(call, config)
    if action == p.OPENAI_EMBEDDINGS:
        return _unary(call, chain, "passthrough", body, lambda: chain.passthrough(p.OPENAI_EMBEDDINGS, body, call.headers))
    streaming = action not in (p.OPENAI_RESPONSES_COMPACT, p.TYPESAFE_SYSTEM_ONE) and bool(body.get("stream", False))
    return _native(call, chain, action, body, streaming)


def gemini(call: Call, endpoint_name: str, action: str, body: dict[str, Any]) -> Answer:
    config = _resolve(endpoint_name)
    chain = _chain(call, config, _REQUEST_TYPES[action], _FORMATS[action])
    _admit(call, config)
    _unguarded(call, config)
    return _native(call, chain, action, body, action == p.GEMINI_STREAM)


def _native(call: Call, chain: Chain, action: str, body: dict[str, Any], streaming: bool) -> Answer:
    if streaming:

        def chunks() -> Iterator[bytes]:
            yield from chain.passthrough(action, body, call.headers)

        return sse(_safe(_streamed(call, chain, body, chunks, _REDUCERS.get(action))))
    return _unary(call, chain, "_guarded_passthrough", body, lambda: chain.passthrough(action, body, call.headers))


def proxy(call: Call, endpoint_name: str, path: str, body: dict[str, Any]) -> Answer:
    """The raw proxy: whether the answer streams is known from the upstream's content type only."""
    config = _resolve(endpoint_name)
    chain = _chain(call, config, "proxy/raw")
    _admit(call, config)
    _unguarded(call, config)
    trace = chain.trace
    trace.traced_function(None, body)  # an async generator in MLflow: no function name
    try:
        streaming, result = chain.proxy(path, body, call.headers)
    except Exception as error:
        _finish(trace, call, error=error)
        raise
    if not streaming:
        # MLflow leaves this root span open (its generator is never drained); here the trace is complete.
        trace.root.chunk(result)
        _finish(trace, call, [result])
        return json_answer(200, result)
    return sse(_safe(_recorded(call, trace, result, None)))
