"""What every provider shares (MLflow's ``mlflow/gateway/providers/base.py``): the passthrough routes, the
unsupported-route answers, token usage read from answers as MLflow reads it, and the headers a passthrough
forwards upstream.

Providers are synchronous here (no asyncio on Lambda) and streams are lazy: a streamed call is sent when its
first chunk is asked for, so a provider's refusal surfaces inside the stream, as with MLflow's async
generators. Answers are plain dicts in the key order MLflow's pydantic models dump them.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any, ClassVar

from ..config import ModelConfig
from ..upstream import GatewayHTTPError

# MLflow's PassthroughAction values and the gateway routes they answer (PASSTHROUGH_ROUTES, same order).
OPENAI_CHAT, OPENAI_EMBEDDINGS = "openai_chat", "openai_embeddings"
OPENAI_RESPONSES, OPENAI_RESPONSES_COMPACT = "openai_responses", "openai_responses_compact"
ANTHROPIC_MESSAGES = "anthropic_messages"
TYPESAFE_SYSTEM_ONE = "typesafe_system_one"
GEMINI_GENERATE, GEMINI_STREAM = "gemini_generate_content", "gemini_stream_generate_content"
PASSTHROUGH_ROUTES = {
    OPENAI_CHAT: "/openai/v1/chat/completions",
    OPENAI_EMBEDDINGS: "/openai/v1/embeddings",
    OPENAI_RESPONSES: "/openai/v1/responses",
    OPENAI_RESPONSES_COMPACT: "/openai/v1/responses/compact",
    ANTHROPIC_MESSAGES: "/anthropic/v1/messages",
    TYPESAFE_SYSTEM_ONE: "/typesafe/v1/systemone",
    GEMINI_GENERATE: "/gemini/v1beta/models/{endpoint_name}:generateContent",
    GEMINI_STREAM: "/gemini/v1beta/models/{endpoint_name}:streamGenerateContent",
}

# Subscription CLI tools that bring their own provider credentials (MLflow's _USER_CREDENTIAL_AGENTS).
_CREDENTIAL_AGENTS = ("claude-cli", "codex", "geminicli")
_CLIENT_AUTH_HEADERS = ("authorization", "x-api-key", "x-goog-api-key", "api-key")
INPUT, OUTPUT, TOTAL = "input_tokens", "output_tokens", "total_tokens"
CACHE_READ, CACHE_CREATION = "cache_read_input_tokens", "cache_creation_input_tokens"


def client_provides_auth(headers: dict[str, str] | None) -> bool:
    if not headers:
        return False
    lower = {k.lower(): v for k, v in headers.items()}
    agent = lower.get("user-agent", "").lower()
    return any(a in agent for a in _CREDENTIAL_AGENTS) and any(key in lower for key in _CLIENT_AUTH_HEADERS)


def merged_headers(own: dict[str, str], incoming: dict[str, str] | None, own_auth: tuple[str, ...]) -> dict[str, str]:
    """MLflow's ``_get_headers``: the client's headers (without host, length and, unless a credential agent
    sends them, its auth headers) under the provider's own."""
    result = dict(own)
    if not incoming:
        return result
    client = {k: v for k, v in incoming.items() if k not in ("host", "content-length")}
    if client_provides_auth(incoming):
        for name in own_auth:
            result.pop(name, None)
    else:
        client = {k: v for k, v in client.items() if k.lower() not in _CLIENT_AUTH_HEADERS}
    return client | result


def _nested(data: dict[str, Any], key: str) -> Any:
    parent, _, child = key.partition(".")
    if not child:
        return data.get(key)
    value = data.get(parent)
    return value.get(child) if isinstance(value, dict) else None


def usage_from(
    usage: Any,
    input_key: str,
    output_key: str,
    total_key: str | None = None,
    cache_read_key: str | None = None,
    cache_creation_key: str | None = None,
) -> dict[str, int] | None:
    """MLflow's ``_extract_token_usage_from_dict``: MLflow's token usage keys from a provider's usage dict."""
    if not usage or not isinstance(usage, dict):
        return None
    out: dict[str, int] = {}
    if usage.get(input_key) is not None:
        out[INPUT] = usage[input_key]
    if usage.get(output_key) is not None:
        out[OUTPUT] = usage[output_key]
    if total_key and usage.get(total_key) is not None:
        out[TOTAL] = usage[total_key]
    elif INPUT in out and OUTPUT in out:
        out[TOTAL] = out[INPUT] + out[OUTPUT]
    if out:
        if cache_read_key and (cached := _nested(usage, cache_read_key)) is not None:
            out[CACHE_READ] = cached
        if cache_creation_key and (created := _nested(usage, cache_creation_key)) is not None:
            out[CACHE_CREATION] = created
    return out or None


def unified_usage(answer: dict[str, Any] | None) -> dict[str, int] | None:
    """MLflow's ``_extract_token_usage`` of a unified answer or chunk (its ``usage``: prompt/completion/total)."""
    usage = (answer or {}).get("usage")
    if not usage:
        return None
    out: dict[str, int] = {}
    for source, target in (("prompt_tokens", INPUT), ("completion_tokens", OUTPUT), ("total_tokens", TOTAL)):
        if usage.get(source) is not None:
            out[target] = usage[source]
    if usage.get(CACHE_READ) is not None:
        out[CACHE_READ] = usage[CACHE_READ]
    elif isinstance(usage.get("prompt_tokens_details"), dict) and usage["prompt_tokens_details"].get("cached_tokens") is not None:
        out[CACHE_READ] = usage["prompt_tokens_details"]["cached_tokens"]
    if usage.get(CACHE_CREATION) is not None:
        out[CACHE_CREATION] = usage[CACHE_CREATION]
    return out or None


def sse_data(chunk: bytes) -> Iterator[dict[str, Any]]:
    """MLflow's ``parse_sse_lines``: the JSON ``data:`` lines of a chunk ([DONE] and bad JSON skipped)."""
    try:
        text = chunk.decode("utf-8").strip()
    except UnicodeDecodeError:
        return
    for line in text.split("\n"):
        line = line.strip()
        if not line.startswith("data:"):
            continue
        data = line[5:].strip()
        if not data or data == "[DONE]":
            continue
        try:
            yield json.loads(data)
        except ValueError:
            continue


def unsupported_passthrough(display: str, action: str, supported: dict[str, str]) -> GatewayHTTPError:
    routes = ", ".join(f"/gateway{PASSTHROUGH_ROUTES[act]} (provider_path: {path})" for act, path in supported.items())
    return GatewayHTTPError(
        400,
        f"Unsupported passthrough endpoint '{PASSTHROUGH_ROUTES.get(action, action)}' for {display} provider. "
        f"Supported endpoints: {routes}",
    )


def chat_usage(prompt: int | None, completion: int | None, total: int | None = None) -> dict[str, Any]:
    """MLflow's ``ChatUsage`` dump."""
    if total is None and prompt is not None and completion is not None:
        total = prompt + completion
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": total}


class Provider:
    """One model of an endpoint. ``chat``/``embeddings`` answer unified dicts; ``chat_stream`` yields unified
    chunks; ``passthrough`` answers the provider's JSON or yields its raw lines; ``proxy`` answers
    ``(streaming, JSON or lines)``. The token usage of a streamed call is in ``stream_usage`` once it ends."""

    DISPLAY_NAME = ""
    PASSTHROUGH_PATHS: ClassVar[dict[str, str]] = {}

    def __init__(self, model: ModelConfig, tracing: bool = False) -> None:
        self.model = model
        self.tracing = tracing
        self.stream_usage: dict[str, int] = {}

    @property
    def name(self) -> str:
        """What answers carry as ``provider``: the configured provider (MLflow's ``_provider_name``)."""
        return self.model.provider

    @property
    def span_provider(self) -> str:
        """MLflow's ``get_provider_name`` (span names and the ``mlflow.llm.provider`` attribute)."""
        return self.DISPLAY_NAME.lower()

    def check_passthrough(self, action: str) -> str:
        if action not in self.PASSTHROUGH_PATHS:
            raise unsupported_passthrough(self.DISPLAY_NAME, action, self.PASSTHROUGH_PATHS)
        return self.PASSTHROUGH_PATHS[action]

    # Unified MLflow routes ------------------------------------------------------------------------
    def chat(self, payload: dict[str, Any]) -> dict[str, Any]:
        raise GatewayHTTPError(501, f"The chat route is not implemented for {self.DISPLAY_NAME} models.")

    def chat_stream(self, payload: dict[str, Any]) -> Iterator[dict[str, Any]]:
        raise GatewayHTTPError(501, f"The chat streaming route is not implemented for {self.DISPLAY_NAME} models.")

    def embeddings(self, payload: dict[str, Any]) -> dict[str, Any]:
        raise GatewayHTTPError(501, f"The embeddings route is not implemented for {self.DISPLAY_NAME} models.")

    def passthrough(self, action: str, payload: dict[str, Any], headers: dict[str, str]) -> Any:
        self.check_passthrough(action)
        raise GatewayHTTPError(
            501, f"The passthrough route '{PASSTHROUGH_ROUTES[action]}' is not implemented for {self.DISPLAY_NAME} models."
        )

    def proxy(self, path: str, payload: dict[str, Any], headers: dict[str, str]) -> tuple[bool, Any]:
        raise GatewayHTTPError(501, f"The proxy endpoint is not implemented for {self.DISPLAY_NAME} models.")

    # Token usage of provider-native answers (MLflow's _extract_passthrough/_streaming_token_usage) ----------
    def passthrough_usage(self, action: str, answer: dict[str, Any]) -> dict[str, int] | None:
        return None

    def chunk_usage(self, chunk: bytes) -> dict[str, int]:
        return {}

    def metered(self, chunks: Iterator[bytes]) -> Iterator[bytes]:
        """MLflow's ``_stream_passthrough_with_usage``: the chunks, their usage accumulated on the way."""
        usage: dict[str, int] = {}
        try:
            for chunk in chunks:
                usage.update(self.chunk_usage(chunk))
                yield chunk
        finally:
            if INPUT in usage and OUTPUT in usage and TOTAL not in usage:
                usage[TOTAL] = usage[INPUT] + usage[OUTPUT]
            self.stream_usage = usage

    @staticmethod
    def check_for_model_field(payload: dict[str, Any]) -> None:
        if "model" in payload:
            raise GatewayHTTPError(
                422,
                "The parameter 'model' is not permitted to be passed. The route being queried already defines a model instance.",
            )
