"""An endpoint's providers as MLflow composes them (``TrafficRouteProvider``, ``FallbackProvider``), each call
recorded as MLflow's providers record it (``BaseProvider._maybe_trace_method`` and friends).

The primary model is the first PRIMARY one, or one of them picked by weight under traffic split; with a
fallback configuration the FALLBACK models follow in their order, ``max_attempts`` of them. A failed attempt
moves on to the next model; when every attempt fails the call answers MLflow's "All N fallback attempts
failed" with the last status. A stream falls back only before its first chunk.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from typing import Any

from serverless_mlflow.llm_gateway import providers as p
from serverless_mlflow.llm_gateway.config import EndpointConfig, ModelConfig
from serverless_mlflow.llm_gateway.providers.base import unified_usage
from serverless_mlflow.llm_gateway.upstream import GatewayHTTPError

from .spans import FUNCTION_NAME, MODEL, PROVIDER, USAGE, Span
from .tracing import GatewayTrace


class Chain:
    def __init__(self, config: EndpointConfig, trace: GatewayTrace) -> None:
        self.trace = trace
        primary = config.primary
        if config.routing_strategy == "REQUEST_BASED_TRAFFIC_SPLIT":
            weights = [int(m.weight * 100) for m in primary]
            first = random.choices(primary, weights=weights)[0] if sum(weights) > 0 else primary[0]
        else:
            first = primary[0]
        models: list[ModelConfig] = [first]
        self.fallback = bool(config.fallback) and bool(config.fallbacks)
        if self.fallback:
            assert config.fallback is not None
            attempts = (config.fallback.get("max_attempts") or len(config.fallbacks)) + 1
            models += config.fallbacks
            models = models[: min(attempts, len(models))]
        # Every provider is built before the call (an unknown or disallowed provider fails it first).
        self.providers = [p.provider_for(model, tracing=True) for model in models]

    @property
    def primary(self) -> p.Provider:
        return self.providers[0]

    def _span(self, provider: p.Provider, extra: dict[str, Any]) -> Span:
        attributes = {PROVIDER: provider.span_provider, MODEL: provider.model.model_name, **extra}
        return self.trace.child(f"provider/{provider.span_provider}/{provider.model.model_name}", "LLM", attributes)

    def _exhausted(self, last: BaseException | None) -> GatewayHTTPError:
        status = last.status if isinstance(last, GatewayHTTPError) else 500
        return GatewayHTTPError(status, f"All {len(self.providers)} fallback attempts failed. Last error: {last!s}")

    # --- unary calls ----------------------------------------------------------------------------------
    def unified(self, method: str, payload: dict[str, Any]) -> dict[str, Any]:
        """``chat`` or ``embeddings``: the unified answer (a chat answer names its provider)."""

        def attempt(provider: p.Provider) -> dict[str, Any]:
            span = self._span(provider, {"method": method})
            try:
                result = getattr(provider, method)(dict(payload))
            except Exception as error:
                span.record_error(error)
                span.end()
                raise
            if usage := unified_usage(result):
                span.attributes[USAGE] = usage
            span.end()
            return {**result, "provider": provider.name} if method == "chat" else result

        return self._with_fallback(attempt)

    def passthrough(self, action: str, payload: dict[str, Any], headers: dict[str, str]) -> Any:
        """The provider's own answer, or (streamed) an iterator of its raw chunks."""

        def attempt(provider: p.Provider) -> Any:
            return self._traced_native(provider, {"action": action}, lambda: provider.passthrough(action, dict(payload), headers), action)

        if payload.get("stream") and self.fallback:
            return self._stream_with_fallback(attempt)
        return self._with_fallback(attempt)

    def proxy(self, path: str, payload: dict[str, Any], headers: dict[str, str]) -> tuple[bool, Any]:
        streaming: list[bool] = []

        def attempt(provider: p.Provider) -> Any:
            def call() -> Any:
                is_stream, result = provider.proxy(path, payload, headers)
                streaming.append(is_stream)
                return result

            return self._traced_native(provider, {"proxy_path": path}, call, None, function="proxy")

        result = self._with_fallback(attempt)
        return streaming[-1], result

    def _traced_native(
        self, provider: p.Provider, extra: dict[str, Any], call: Callable[[], Any], action: str | None, function: str = "passthrough"
    ) -> Any:
        """MLflow's traced passthrough/proxy: a failed call is an error span; an answer an ``@mlflow.trace`` span
        (inputs ``{}``, the answer or the chunks as outputs, the usage the provider reads from them)."""
        try:
            result = call()
        except Exception as error:
            span = self._span(provider, extra)
            span.record_error(error)
            span.end()
            raise
        if isinstance(result, Iterator):
            return self._traced_chunks(provider, extra, result, function)
        span = self._span(provider, {FUNCTION_NAME: function, **extra})
        span.set_inputs({})
        if action is not None and (usage := provider.passthrough_usage(action, result)):
            span.attributes[USAGE] = usage
        span.end(result)
        return result

    def _traced_chunks(self, provider: p.Provider, extra: dict[str, Any], chunks: Iterator[bytes], function: str) -> Iterator[bytes]:
        span: Span | None = None
        collected: list[bytes] = []
        try:
            for chunk in chunks:
                if span is None:
                    span = self._start_stream_span(provider, extra, function)
                collected.append(chunk)
                span.chunk(chunk)
                yield chunk
        except Exception as error:
            span = span or self._start_stream_span(provider, extra, function)
            span.record_error(error)
            span.end()
            raise
        span = span or self._start_stream_span(provider, extra, function)
        if provider.stream_usage:
            span.attributes[USAGE] = dict(provider.stream_usage)
        span.end(collected)

    def _start_stream_span(self, provider: p.Provider, extra: dict[str, Any], function: str) -> Span:
        span = self._span(provider, extra)  # a generator's span: no function name
        span.set_inputs({})
        return span

    # --- streamed unified chat ---------------------------------------------------------------------------
    def chat_stream(self, payload: dict[str, Any]) -> Iterator[dict[str, Any]]:
        def attempt(provider: p.Provider) -> Iterator[dict[str, Any]]:
            return self._traced_chat_stream(provider, payload)

        if self.fallback:
            return self._stream_with_fallback(attempt)
        return attempt(self.primary)

    def _traced_chat_stream(self, provider: p.Provider, payload: dict[str, Any]) -> Iterator[dict[str, Any]]:
        span = self._span(provider, {"method": "chat_stream", "streaming": True})
        last = None
        try:
            for chunk in provider.chat_stream(dict(payload)):
                last = chunk
                yield {**chunk, "provider": provider.name}
        except Exception as error:
            span.record_error(error)
            span.end()
            raise
        if last is not None and (usage := unified_usage(last)):
            span.attributes[USAGE] = usage
        span.end()

    # --- fallback ----------------------------------------------------------------------------------------
    def _with_fallback(self, attempt: Callable[[p.Provider], Any]) -> Any:
        if not self.fallback:
            return attempt(self.primary)
        last: BaseException | None = None
        for provider in self.providers:
            try:
                return attempt(provider)
            except Exception as error:
                last = error
        raise self._exhausted(last)

    def _stream_with_fallback(self, attempt: Callable[[p.Provider], Iterator[Any]]) -> Iterator[Any]:
        last: BaseException | None = None
        for provider in self.providers:
            yielded = False
            try:
                for item in attempt(provider):
                    yielded = True
                    yield item
                return
            except Exception as error:
                if yielded:
                    raise
                last = error
        raise self._exhausted(last)
