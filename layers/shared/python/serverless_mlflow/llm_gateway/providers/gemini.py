"""Gemini (MLflow's ``gemini.py``): unified chat over generateContent, the generateContent passthroughs and
the raw proxy. MLflow's Gemini config has no ``api_base``; an ``api_base`` in the secret's auth config is
honoured here (a mock provider in tests)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any, ClassVar

from ..upstream import builtin_base, join, post_json, post_proxy, post_stream, sse_events
from .base import GEMINI_GENERATE, GEMINI_STREAM, Provider, chat_usage, merged_headers, sse_data, usage_from
from .openai import proxy_root_url

API_ORIGIN = builtin_base("https://generativelanguage.googleapis.com")


def _gemini_usage(metadata: Any) -> dict[str, int] | None:
    return usage_from(metadata, "promptTokenCount", "candidatesTokenCount", "totalTokenCount", cache_read_key="cachedContentTokenCount")


class GeminiProvider(Provider):
    DISPLAY_NAME = "Gemini"
    PASSTHROUGH_PATHS: ClassVar[dict[str, str]] = {
        GEMINI_GENERATE: "{model}:generateContent",
        GEMINI_STREAM: "{model}:streamGenerateContent?alt=sse",
    }

    @property
    def base_url(self) -> str:
        return self.model.auth_config.get("api_base") or f"{API_ORIGIN}/v1beta/models"

    def headers(self, incoming: dict[str, str] | None = None) -> dict[str, str]:
        return merged_headers({"x-goog-api-key": self.model.secret_value.get("api_key", "")}, incoming, ("x-goog-api-key",))

    def _contents(self, payload: dict[str, Any]) -> dict[str, Any]:
        contents, system = [], []
        for m in payload.get("messages") or []:
            if m.get("role") == "system":
                system.append({"text": str(m.get("content"))})
            else:
                contents.append({"role": "model" if m.get("role") == "assistant" else "user", "parts": [{"text": str(m.get("content"))}]})
        body: dict[str, Any] = {"contents": contents}
        if system:
            body["system_instruction"] = {"parts": system}
        config = {
            target: payload[source]
            for source, target in (
                ("temperature", "temperature"),
                ("max_tokens", "maxOutputTokens"),
                ("top_p", "topP"),
                ("stop", "stopSequences"),
            )
            if payload.get(source) is not None
        }
        if config:
            body["generationConfig"] = config
        return body

    def _unified(self, resp: dict[str, Any], chunk: bool) -> dict[str, Any]:
        usage = resp.get("usageMetadata")
        choices = []
        for i, candidate in enumerate(resp.get("candidates") or []):
            text = "".join(p.get("text", "") for p in (candidate.get("content") or {}).get("parts") or [])
            finish = {"STOP": "stop", "MAX_TOKENS": "length"}.get(candidate.get("finishReason") or "", None if chunk else "stop")
            if chunk:
                choices.append({"index": i, "finish_reason": finish, "delta": {"role": "assistant", "content": text, "tool_calls": None}})
            else:
                message = {"role": "assistant", "content": text, "tool_calls": None, "refusal": None}
                choices.append({"index": i, "message": message, "finish_reason": finish})
        return {
            "id": resp.get("responseId") or f"gemini-chat-{int(time.time())}",
            "object": "chat.completion.chunk" if chunk else "chat.completion",
            "created": int(time.time()),
            "model": self.model.model_name,
            "choices": choices,
            "usage": chat_usage(usage.get("promptTokenCount"), usage.get("candidatesTokenCount"), usage.get("totalTokenCount"))
            if usage
            else None,
        }

    def chat(self, payload: dict[str, Any]) -> dict[str, Any]:
        url = join(self.base_url, f"{self.model.model_name}:generateContent")
        return self._unified(post_json(url, self.headers(), self._contents(payload)), chunk=False)

    def chat_stream(self, payload: dict[str, Any]) -> Iterator[dict[str, Any]]:
        url = join(self.base_url, f"{self.model.model_name}:streamGenerateContent?alt=sse")
        for _, data in sse_events(post_stream(url, self.headers(), self._contents(payload))):
            yield self._unified(json.loads(data), chunk=True)

    def passthrough(self, action: str, payload: dict[str, Any], headers: dict[str, str]) -> Any:
        path = self.check_passthrough(action).format(model=self.model.model_name)
        if action == GEMINI_STREAM:
            return self.metered(post_stream(join(self.base_url, path), self.headers(headers), payload))
        return post_json(join(self.base_url, path), self.headers(headers), payload)

    def proxy(self, path: str, payload: dict[str, Any], headers: dict[str, str]) -> tuple[bool, Any]:
        api_base = self.model.auth_config.get("api_base")
        origin = proxy_root_url(api_base) if api_base else API_ORIGIN
        return post_proxy(join(origin, path), self.headers(headers), payload)

    def passthrough_usage(self, action: str, answer: dict[str, Any]) -> dict[str, int] | None:
        return _gemini_usage(answer.get("usageMetadata")) if isinstance(answer, dict) else None

    def chunk_usage(self, chunk: bytes) -> dict[str, int]:
        for data in sse_data(chunk):
            if found := _gemini_usage(data.get("usageMetadata")):
                return found
        return {}
