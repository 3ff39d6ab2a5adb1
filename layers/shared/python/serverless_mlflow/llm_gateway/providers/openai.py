"""OpenAI and the OpenAI-compatible providers (MLflow's ``openai.py``, ``openai_compatible.py`` and the
thin Groq/DeepSeek/xAI/OpenRouter/Ollama subclasses): the unified routes, the passthroughs and the raw proxy."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any, ClassVar

from ..upstream import GatewayHTTPError, builtin_base, join, post_json, post_proxy, post_stream, sse_events
from .base import (
    OPENAI_CHAT,
    OPENAI_EMBEDDINGS,
    OPENAI_RESPONSES,
    OPENAI_RESPONSES_COMPACT,
    TYPESAFE_SYSTEM_ONE,
    Provider,
    chat_usage,
    merged_headers,
    sse_data,
    usage_from,
)

# Default API bases of the providers MLflow builds with an OpenAI-compatible config.
DEFAULT_BASES = {
    name: builtin_base(url)
    for name, url in {
        "openai": "https://api.openai.com/v1",
        "groq": "https://api.groq.com/openai/v1",
        "deepseek": "https://api.deepseek.com/v1",
        "xai": "https://api.x.ai/v1",
        "openrouter": "https://openrouter.ai/api/v1",
        "ollama": "http://localhost:11434/v1",
    }.items()
}
DISPLAY_NAMES = {"openai": "OpenAI", "groq": "Groq", "deepseek": "DeepSeek", "xai": "xAI", "openrouter": "OpenRouter", "ollama": "Ollama"}


def proxy_root_url(base_url: str) -> str:
    """MLflow's ``proxy_root_url``: the base URL without its last path segment (``/v1``)."""
    scheme, _, rest = base_url.partition("://")
    host, _, path = rest.partition("/")
    path = path.rstrip("/")
    return f"{scheme}://{host}" + ("/" + path.rsplit("/", 1)[0] if "/" in path else "")


class OpenAIProvider(Provider):
    PASSTHROUGH_PATHS: ClassVar[dict[str, str]] = {
        OPENAI_CHAT: "chat/completions",
        OPENAI_EMBEDDINGS: "embeddings",
        OPENAI_RESPONSES: "responses",
        OPENAI_RESPONSES_COMPACT: "responses/compact",
    }
    # OpenAI-compatible providers pass the three OpenAI routes through (OpenRouter adds System One).
    COMPATIBLE_PATHS: ClassVar[dict[str, str]] = {
        OPENAI_CHAT: "chat/completions",
        OPENAI_EMBEDDINGS: "embeddings",
        OPENAI_RESPONSES: "responses",
    }

    def __init__(self, model: Any, tracing: bool = False) -> None:
        super().__init__(model, tracing)
        self.DISPLAY_NAME = DISPLAY_NAMES.get(model.provider, "OpenAI")
        if model.provider == "openrouter":
            self.PASSTHROUGH_PATHS = {**self.COMPATIBLE_PATHS, TYPESAFE_SYSTEM_ONE: "systemone"}
        elif model.provider != "openai":
            self.PASSTHROUGH_PATHS = dict(self.COMPATIBLE_PATHS)

    @property
    def base_url(self) -> str:
        return self.model.auth_config.get("api_base") or DEFAULT_BASES.get(self.model.provider, DEFAULT_BASES["openai"])

    def headers(self, incoming: dict[str, str] | None = None) -> dict[str, str]:
        own = {"authorization": f"Bearer {self.model.secret_value.get('api_key', '')}"}
        if organization := self.model.auth_config.get("organization"):
            own["OpenAI-Organization"] = organization
        return merged_headers(own, incoming, ("authorization", "api-key"))

    def _with_model(self, payload: dict[str, Any]) -> dict[str, Any]:
        return {"model": self.model.model_name, **payload}

    def chat(self, payload: dict[str, Any]) -> dict[str, Any]:
        self.check_for_model_field(payload)
        resp = post_json(join(self.base_url, "chat/completions"), self.headers(), self._with_model(payload))
        usage = resp.get("usage") or {}
        return {
            "id": resp.get("id"),
            "object": resp.get("object", "chat.completion"),
            "created": resp.get("created"),
            "model": resp.get("model"),
            "choices": [
                {
                    "index": i,
                    "message": {
                        "role": c["message"]["role"],
                        "content": c["message"].get("content"),
                        "tool_calls": c["message"].get("tool_calls") or None,
                        "refusal": None,
                    },
                    "finish_reason": c.get("finish_reason"),
                }
                for i, c in enumerate(resp.get("choices") or [])
            ],
            "usage": chat_usage(usage.get("prompt_tokens"), usage.get("completion_tokens"), usage.get("total_tokens")),
        }

    def chat_stream(self, payload: dict[str, Any]) -> Iterator[dict[str, Any]]:
        self.check_for_model_field(payload)
        body = self._with_model(payload)
        body["stream_options"] = {"include_usage": True, **(body.get("stream_options") or {})}
        for _, data in sse_events(post_stream(join(self.base_url, "chat/completions"), self.headers(), body)):
            if data.strip() == "[DONE]":
                return
            resp = json.loads(data)
            usage = resp.get("usage")
            yield {
                "id": resp.get("id"),
                "object": resp.get("object", "chat.completion.chunk"),
                "created": resp.get("created"),
                "model": resp.get("model"),
                "choices": [
                    {
                        "index": c["index"],
                        "finish_reason": c.get("finish_reason"),
                        "delta": {
                            "role": c["delta"].get("role"),
                            "content": c["delta"].get("content"),
                            "tool_calls": c["delta"].get("tool_calls") or None,
                        },
                    }
                    for c in resp.get("choices") or []
                ],
                "usage": chat_usage(usage.get("prompt_tokens"), usage.get("completion_tokens"), usage.get("total_tokens"))
                if usage
                else None,
            }

    def embeddings(self, payload: dict[str, Any]) -> dict[str, Any]:
        self.check_for_model_field(payload)
        resp = post_json(join(self.base_url, "embeddings"), self.headers(), self._with_model(payload))
        usage = resp.get("usage") or {}
        return {
            "object": "list",
            "data": [{"object": "embedding", "embedding": d["embedding"], "index": d["index"]} for d in resp.get("data") or []],
            "model": resp.get("model"),
            "usage": {"prompt_tokens": usage.get("prompt_tokens"), "total_tokens": usage.get("total_tokens")},
        }

    def passthrough(self, action: str, payload: dict[str, Any], headers: dict[str, str]) -> Any:
        body = self._with_model(payload)
        path = self.check_passthrough(action)
        if action == TYPESAFE_SYSTEM_ONE:  # OpenRouter's System One: a typed route, no caller headers
            if body.get("stream"):
                raise GatewayHTTPError(400, "TypeSafe System One does not support streaming.")
            return post_json(join(self.base_url, path), self.headers(), body)
        request_headers = self.headers(headers)
        if action != OPENAI_EMBEDDINGS and body.get("stream"):
            if self.tracing and action == OPENAI_CHAT:
                body["stream_options"] = {"include_usage": True, **(body.get("stream_options") or {})}
            return self.metered(post_stream(join(self.base_url, path), request_headers, body))
        return post_json(join(self.base_url, path), request_headers, body)

    def proxy(self, path: str, payload: dict[str, Any], headers: dict[str, str]) -> tuple[bool, Any]:
        return post_proxy(join(proxy_root_url(self.base_url), path), self.headers(headers), payload)

    def passthrough_usage(self, action: str, answer: dict[str, Any]) -> dict[str, int] | None:
        usage = answer.get("usage") if isinstance(answer, dict) else None
        if not usage:
            return None
        if action == TYPESAFE_SYSTEM_ONE:
            return usage_from(usage, "input_tokens", "output_tokens")
        if action in (OPENAI_RESPONSES, OPENAI_RESPONSES_COMPACT):
            return usage_from(usage, "input_tokens", "output_tokens", "total_tokens", "input_tokens_details.cached_tokens")
        return usage_from(usage, "prompt_tokens", "completion_tokens", "total_tokens", "prompt_tokens_details.cached_tokens")

    def chunk_usage(self, chunk: bytes) -> dict[str, int]:
        for data in sse_data(chunk):
            response = data.get("response")
            response_usage = response.get("usage") if isinstance(response, dict) else None
            if response_usage:
                found = usage_from(response_usage, "input_tokens", "output_tokens", "total_tokens", "input_tokens_details.cached_tokens")
            elif data.get("usage"):
                found = usage_from(
                    data["usage"], "prompt_tokens", "completion_tokens", "total_tokens", "prompt_tokens_details.cached_tokens"
                )
            else:
                continue
            if found:
                return found
        return {}
