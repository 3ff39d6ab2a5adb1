"""The providers the runtime calls, as MLflow's gateway providers call them (``mlflow/gateway/providers``):
OpenAI and the OpenAI-compatible ones, Anthropic, Gemini and Amazon Bedrock (through the function's role).

Each provider turns MLflow's unified chat/embeddings payloads into its own request and its answer back into
MLflow's unified shapes, and passes provider-native payloads through. Usage (tokens) is read from every answer,
streamed or not, for traces and budgets. Answers are plain dicts in the JSON key order MLflow's pydantic models
give; no mlflow import.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, ClassVar

from .config import ModelConfig
from .upstream import GatewayHTTPError, join, post_json, post_proxy, post_stream, sse_events

# MLflow's PassthroughAction values and the gateway routes they answer (PASSTHROUGH_ROUTES).
OPENAI_CHAT, OPENAI_EMBEDDINGS, OPENAI_RESPONSES = "openai_chat", "openai_embeddings", "openai_responses"
ANTHROPIC_MESSAGES = "anthropic_messages"
GEMINI_GENERATE, GEMINI_STREAM = "gemini_generate_content", "gemini_stream_generate_content"
PASSTHROUGH_ROUTES = {
    OPENAI_CHAT: "/openai/v1/chat/completions",
    OPENAI_EMBEDDINGS: "/openai/v1/embeddings",
    OPENAI_RESPONSES: "/openai/v1/responses",
    ANTHROPIC_MESSAGES: "/anthropic/v1/messages",
    GEMINI_GENERATE: "/gemini/v1beta/models/{endpoint_name}:generateContent",
    GEMINI_STREAM: "/gemini/v1beta/models/{endpoint_name}:streamGenerateContent",
}
ANTHROPIC_DEFAULT_MAX_TOKENS = 8192
ANTHROPIC_MAXIMUM_MAX_TOKENS = 1_000_000
OPENAI_COMPATIBLE_BASES = {
    "openai": "https://api.openai.com/v1",
    "groq": "https://api.groq.com/openai/v1",
    "deepseek": "https://api.deepseek.com/v1",
    "xai": "https://api.x.ai/v1",
    "openrouter": "https://openrouter.ai/api/v1",
    "ollama": "http://localhost:11434/v1",
    "mistral": "https://api.mistral.ai/v1",
    "togetherai": "https://api.together.xyz/v1",
}


@dataclass
class Usage:
    """Token counts of one provider call (MLflow's TokenUsageKey names)."""

    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0
    extra: dict[str, int] = field(default_factory=dict)

    def add(self, input_tokens: int | None = None, output_tokens: int | None = None, total_tokens: int | None = None) -> None:
        if input_tokens is not None:
            self.input_tokens = int(input_tokens)
        if output_tokens is not None:
            self.output_tokens = int(output_tokens)
        self.total_tokens = int(total_tokens) if total_tokens is not None else self.input_tokens + self.output_tokens

    @property
    def known(self) -> bool:
        return bool(self.input_tokens or self.output_tokens)

    def as_attribute(self) -> dict[str, int]:
        return {"input_tokens": self.input_tokens, "output_tokens": self.output_tokens, "total_tokens": self.total_tokens, **self.extra}


def unsupported_passthrough(display: str, action: str, supported: dict[str, str]) -> GatewayHTTPError:
    routes = ", ".join(f"/gateway{PASSTHROUGH_ROUTES[act]} (provider_path: {path})" for act, path in supported.items())
    return GatewayHTTPError(
        400,
        f"Unsupported passthrough endpoint '{PASSTHROUGH_ROUTES.get(action, action)}' for {display} provider. Supported endpoints: {routes}",
    )


def chat_usage(prompt: int | None, completion: int | None, total: int | None = None) -> dict[str, Any]:
    """MLflow's ``ChatUsage`` dump."""
    if total is None and prompt is not None and completion is not None:
        total = prompt + completion
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": total}


class Provider:
    DISPLAY_NAME = ""
    PASSTHROUGH_PATHS: ClassVar[dict[str, str]] = {}

    def __init__(self, model: ModelConfig) -> None:
        self.model = model
        self.usage = Usage()

    @property
    def name(self) -> str:
        return self.model.provider

    # Unified MLflow routes ---------------------------------------------------------------------------
    def chat(self, payload: dict[str, Any]) -> dict[str, Any]:
        raise GatewayHTTPError(501, f"The chat route is not implemented for {self.DISPLAY_NAME} models.")

    def chat_stream(self, payload: dict[str, Any]) -> Iterator[dict[str, Any]]:
        raise GatewayHTTPError(501, f"The chat streaming route is not implemented for {self.DISPLAY_NAME} models.")

    def embeddings(self, payload: dict[str, Any]) -> dict[str, Any]:
        raise GatewayHTTPError(501, f"The embeddings route is not implemented for {self.DISPLAY_NAME} models.")

    def passthrough(self, action: str, payload: dict[str, Any], headers: dict[str, str]) -> Any:
        if action not in self.PASSTHROUGH_PATHS:
            raise unsupported_passthrough(self.DISPLAY_NAME, action, self.PASSTHROUGH_PATHS)
        raise GatewayHTTPError(
            501, f"The passthrough route '{PASSTHROUGH_ROUTES[action]}' is not implemented for {self.DISPLAY_NAME} models."
        )

    def proxy(self, path: str, payload: dict[str, Any], headers: dict[str, str]) -> tuple[bool, Any]:
        raise GatewayHTTPError(501, f"The raw proxy route is not implemented for {self.DISPLAY_NAME} models.")

    # Usage -------------------------------------------------------------------------------------------
    def note_usage(self, body: Any) -> None:
        """Read token usage from a provider-native answer (or stream event)."""


# --- OpenAI and OpenAI-compatible ------------------------------------------------------------------------


class OpenAIProvider(Provider):
    DISPLAY_NAME = "OpenAI"
    PASSTHROUGH_PATHS: ClassVar[dict[str, str]] = {
        OPENAI_CHAT: "chat/completions",
        OPENAI_EMBEDDINGS: "embeddings",
        OPENAI_RESPONSES: "responses",
    }

    @property
    def base_url(self) -> str:
        return self.model.auth_config.get("api_base") or OPENAI_COMPATIBLE_BASES.get(self.model.provider, OPENAI_COMPATIBLE_BASES["openai"])

    def headers(self, incoming: dict[str, str] | None = None) -> dict[str, str]:
        headers = {"Authorization": f"Bearer {self.model.secret_value.get('api_key', '')}"}
        if organization := self.model.auth_config.get("organization"):
            headers["OpenAI-Organization"] = organization
        return headers

    def _with_model(self, payload: dict[str, Any]) -> dict[str, Any]:
        return {"model": self.model.model_name, **{k: v for k, v in payload.items() if k != "model"}}

    def chat(self, payload: dict[str, Any]) -> dict[str, Any]:
        resp = post_json(join(self.base_url, "chat/completions"), self.headers(), self._with_model(payload))
        self.note_usage(resp)
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
        body = self._with_model(payload)
        body["stream_options"] = {**(body.get("stream_options") or {}), "include_usage": True}
        lines = post_stream(join(self.base_url, "chat/completions"), self.headers(), body)
        return self._unified_chunks(lines)

    def _unified_chunks(self, lines: Iterator[bytes]) -> Iterator[dict[str, Any]]:
        for _, data in sse_events(lines):
            if data.strip() == "[DONE]":
                return
            resp = json.loads(data)
            self.note_usage(resp)
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
        resp = post_json(join(self.base_url, "embeddings"), self.headers(), self._with_model(payload))
        self.note_usage(resp)
        usage = resp.get("usage") or {}
        return {
            "object": "list",
            "data": [{"object": "embedding", "embedding": d["embedding"], "index": d["index"]} for d in resp.get("data") or []],
            "model": resp.get("model"),
            "usage": {"prompt_tokens": usage.get("prompt_tokens"), "total_tokens": usage.get("total_tokens")},
        }

    def passthrough(self, action: str, payload: dict[str, Any], headers: dict[str, str]) -> Any:
        if action not in self.PASSTHROUGH_PATHS:
            raise unsupported_passthrough(self.DISPLAY_NAME, action, self.PASSTHROUGH_PATHS)
        body = self._with_model(payload)
        url = join(self.base_url, self.PASSTHROUGH_PATHS[action])
        if action != OPENAI_EMBEDDINGS and body.get("stream"):
            if action == OPENAI_CHAT:
                body["stream_options"] = {**(body.get("stream_options") or {}), "include_usage": True}
            return self._metered(post_stream(url, self.headers(headers), body))
        resp = post_json(url, self.headers(headers), body)
        self.note_usage(resp)
        return resp

    def proxy(self, path: str, payload: dict[str, Any], headers: dict[str, str]) -> tuple[bool, Any]:
        streaming, body = post_proxy(join(proxy_root_url(self.base_url), path), self.headers(headers), payload)
        if streaming:
            return True, self._metered(body)
        self.note_usage(body)
        return False, body

    def _metered(self, lines: Iterator[bytes]) -> Iterator[bytes]:
        for line in lines:
            if line.startswith(b"data:"):
                try:
                    self.note_usage(json.loads(line[5:]))
                except ValueError:
                    pass
            yield line

    def note_usage(self, body: Any) -> None:
        if not isinstance(body, dict):
            return
        response_usage = (body.get("response") or {}).get("usage") if isinstance(body.get("response"), dict) else None
        usage = response_usage or body.get("usage")
        if not isinstance(usage, dict):
            return
        if "input_tokens" in usage:
            self.usage.add(usage.get("input_tokens"), usage.get("output_tokens"), usage.get("total_tokens"))
        elif "prompt_tokens" in usage:
            self.usage.add(usage.get("prompt_tokens"), usage.get("completion_tokens"), usage.get("total_tokens"))


def proxy_root_url(base_url: str) -> str:
    """MLflow's ``proxy_root_url``: the base URL without its last path segment (``/v1``)."""
    scheme, _, rest = base_url.partition("://")
    host, _, path = rest.partition("/")
    path = path.rstrip("/")
    return f"{scheme}://{host}" + ("/" + path.rsplit("/", 1)[0] if "/" in path else "")


# --- Anthropic -----------------------------------------------------------------------------------------------


class AnthropicProvider(Provider):
    DISPLAY_NAME = "Anthropic"
    PASSTHROUGH_PATHS: ClassVar[dict[str, str]] = {ANTHROPIC_MESSAGES: "messages"}

    @property
    def base_url(self) -> str:
        return self.model.auth_config.get("api_base") or "https://api.anthropic.com/v1"

    def headers(self, incoming: dict[str, str] | None = None) -> dict[str, str]:
        return {
            "x-api-key": self.model.secret_value.get("api_key", ""),
            "anthropic-version": self.model.auth_config.get("version") or "2023-06-01",
        }

    def _to_model(self, payload: dict[str, Any]) -> dict[str, Any]:
        payload = {("stop_sequences" if k == "stop" else k): v for k, v in payload.items() if v is not None}
        payload["model"] = self.model.model_name
        if "top_p" in payload and "temperature" in payload:
            raise GatewayHTTPError(422, "Cannot set both 'temperature' and 'top_p' parameters.")
        max_completion = payload.pop("max_completion_tokens", None)
        max_tokens = payload.get("max_tokens") or max_completion or ANTHROPIC_DEFAULT_MAX_TOKENS
        if max_tokens > ANTHROPIC_MAXIMUM_MAX_TOKENS:
            raise GatewayHTTPError(422, f"Invalid value for max_tokens: cannot exceed {ANTHROPIC_MAXIMUM_MAX_TOKENS}.")
        payload["max_tokens"] = max_tokens
        if payload.pop("n", 1) != 1:
            raise GatewayHTTPError(422, "'n' must be '1' for the Anthropic provider. Received value: '{n}'.")
        messages = payload.get("messages") or []
        if system := [m for m in messages if m.get("role") == "system"]:
            payload["system"] = "\n".join(str(m.get("content")) for m in system)
        payload["messages"] = [m for m in messages if m.get("role") != "system"]
        payload.pop("stream_options", None)
        return payload

    @staticmethod
    def _finish(stop_reason: str | None) -> str:
        return {"max_tokens": "length", "tool_use": "tool_calls"}.get(stop_reason or "", "stop")

    @staticmethod
    def _usage(usage: dict[str, Any]) -> dict[str, Any]:
        prompt = usage.get("input_tokens")
        if prompt is not None:
            prompt += (usage.get("cache_read_input_tokens") or 0) + (usage.get("cache_creation_input_tokens") or 0)
        return chat_usage(prompt, usage.get("output_tokens"))

    def chat(self, payload: dict[str, Any]) -> dict[str, Any]:
        resp = post_json(join(self.base_url, "messages"), self.headers(), self._to_model(payload))
        self.note_usage(resp)
        text = "".join(part.get("text", "") for part in resp.get("content") or [] if part.get("type") == "text")
        tool_calls = [
            {"id": part["id"], "type": "function", "function": {"name": part["name"], "arguments": json.dumps(part.get("input") or {})}}
            for part in resp.get("content") or []
            if part.get("type") == "tool_use"
        ]
        return {
            "id": resp.get("id"),
            "object": "chat.completion",
            "created": int(time.time()),
            "model": resp.get("model"),
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text or None, "tool_calls": tool_calls or None, "refusal": None},
                    "finish_reason": self._finish(resp.get("stop_reason")),
                }
            ],
            "usage": self._usage(resp.get("usage") or {}),
        }

    def chat_stream(self, payload: dict[str, Any]) -> Iterator[dict[str, Any]]:
        lines = post_stream(join(self.base_url, "messages"), self.headers(), {**self._to_model(payload), "stream": True})
        return self._unified_chunks(lines)

    def _unified_chunks(self, lines: Iterator[bytes]) -> Iterator[dict[str, Any]]:
        message_id, model, usage = None, None, {}
        for _, data in sse_events(lines):
            resp = json.loads(data)
            self.note_usage(resp)
            kind = resp.get("type")
            if kind == "message_start":
                message = resp.get("message") or {}
                message_id, model = message.get("id"), message.get("model")
                usage.update({k: v for k, v in (message.get("usage") or {}).items() if k != "output_tokens"})
                continue
            if kind not in ("message_delta", "content_block_delta", "content_block_start"):
                continue
            delta = resp.get("delta") or resp.get("content_block") or {}
            finish = self._finish(delta["stop_reason"]) if delta.get("stop_reason") is not None else None
            if kind == "message_delta":
                usage.update(resp.get("usage") or {})
            yield {
                "id": message_id,
                "object": "chat.completion.chunk",
                "created": int(time.time()),
                "model": model,
                "choices": [
                    {"index": 0, "finish_reason": finish, "delta": {"role": None, "content": delta.get("text"), "tool_calls": None}}
                ],
                "usage": self._usage(usage) if kind == "message_delta" else None,
            }

    def passthrough(self, action: str, payload: dict[str, Any], headers: dict[str, str]) -> Any:
        if action not in self.PASSTHROUGH_PATHS:
            raise unsupported_passthrough(self.DISPLAY_NAME, action, self.PASSTHROUGH_PATHS)
        body = {**payload, "model": self.model.model_name}
        url = join(self.base_url, "messages")
        if body.get("stream"):
            return OpenAIProvider._metered(self, post_stream(url, self.headers(headers), body))  # type: ignore[arg-type]
        resp = post_json(url, self.headers(headers), body)
        self.note_usage(resp)
        return resp

    def proxy(self, path: str, payload: dict[str, Any], headers: dict[str, str]) -> tuple[bool, Any]:
        streaming, body = post_proxy(join(proxy_root_url(self.base_url), path), self.headers(headers), payload)
        if streaming:
            return True, OpenAIProvider._metered(self, body)  # type: ignore[arg-type]
        self.note_usage(body)
        return False, body

    def note_usage(self, body: Any) -> None:
        if not isinstance(body, dict):
            return
        usage = (
            body.get("usage") or (body.get("message") or {}).get("usage") if isinstance(body.get("message"), dict) else body.get("usage")
        )
        if not isinstance(usage, dict):
            return
        cache = (usage.get("cache_read_input_tokens") or 0) + (usage.get("cache_creation_input_tokens") or 0)
        self.usage.add(
            usage["input_tokens"] + cache if usage.get("input_tokens") is not None else None,
            usage.get("output_tokens"),
        )


# --- Gemini --------------------------------------------------------------------------------------------------


class GeminiProvider(Provider):
    DISPLAY_NAME = "Gemini"
    PASSTHROUGH_PATHS: ClassVar[dict[str, str]] = {
        GEMINI_GENERATE: "{model}:generateContent",
        GEMINI_STREAM: "{model}:streamGenerateContent?alt=sse",
    }

    @property
    def base_url(self) -> str:
        return self.model.auth_config.get("api_base") or "https://generativelanguage.googleapis.com/v1beta/models"

    def headers(self, incoming: dict[str, str] | None = None) -> dict[str, str]:
        return {"x-goog-api-key": self.model.secret_value.get("api_key", "")}

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
            k2: payload[k]
            for k, k2 in (("temperature", "temperature"), ("max_tokens", "maxOutputTokens"), ("top_p", "topP"), ("stop", "stopSequences"))
            if payload.get(k) is not None
        }
        if config:
            body["generationConfig"] = config
        return body

    def _unified(self, resp: dict[str, Any], chunk: bool) -> dict[str, Any]:
        self.note_usage(resp)
        usage = resp.get("usageMetadata")
        choices = []
        for i, candidate in enumerate(resp.get("candidates") or []):
            text = "".join(p.get("text", "") for p in (candidate.get("content") or {}).get("parts") or [])
            finish = {"STOP": "stop", "MAX_TOKENS": "length"}.get(candidate.get("finishReason") or "", None if chunk else "stop")
            if chunk:
                choices.append({"index": i, "finish_reason": finish, "delta": {"role": "assistant", "content": text, "tool_calls": None}})
            else:
                choices.append(
                    {
                        "index": i,
                        "message": {"role": "assistant", "content": text, "tool_calls": None, "refusal": None},
                        "finish_reason": finish,
                    }
                )
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
        resp = post_json(join(self.base_url, f"{self.model.model_name}:generateContent"), self.headers(), self._contents(payload))
        return self._unified(resp, chunk=False)

    def chat_stream(self, payload: dict[str, Any]) -> Iterator[dict[str, Any]]:
        lines = post_stream(
            join(self.base_url, f"{self.model.model_name}:streamGenerateContent?alt=sse"), self.headers(), self._contents(payload)
        )
        return (self._unified(json.loads(data), chunk=True) for _, data in sse_events(lines))

    def passthrough(self, action: str, payload: dict[str, Any], headers: dict[str, str]) -> Any:
        if action not in self.PASSTHROUGH_PATHS:
            raise unsupported_passthrough(self.DISPLAY_NAME, action, self.PASSTHROUGH_PATHS)
        url = join(self.base_url, self.PASSTHROUGH_PATHS[action].format(model=self.model.model_name))
        if action == GEMINI_STREAM:
            return OpenAIProvider._metered(self, post_stream(url, self.headers(headers), payload))  # type: ignore[arg-type]
        resp = post_json(url, self.headers(headers), payload)
        self.note_usage(resp)
        return resp

    def note_usage(self, body: Any) -> None:
        if isinstance(body, dict) and isinstance(body.get("usageMetadata"), dict):
            usage = body["usageMetadata"]
            self.usage.add(usage.get("promptTokenCount"), usage.get("candidatesTokenCount"), usage.get("totalTokenCount"))


# --- Amazon Bedrock (the function's IAM role; no stored secret) -------------------------------------------


class BedrockProvider(Provider):
    """Bedrock's Converse API through boto3 with the runtime function's role: the stack grants
    ``bedrock:InvokeModel*`` on the configured models only (``infra``, ``gateway_bedrock_models``)."""

    DISPLAY_NAME = "Amazon Bedrock"

    def _client(self) -> Any:
        return bedrock_client(self.model.auth_config.get("aws_region_name"))

    def _converse_args(self, payload: dict[str, Any]) -> dict[str, Any]:
        system = [{"text": str(m.get("content"))} for m in payload.get("messages") or [] if m.get("role") == "system"]
        messages = [
            {"role": "assistant" if m.get("role") == "assistant" else "user", "content": [{"text": str(m.get("content"))}]}
            for m in payload.get("messages") or []
            if m.get("role") != "system"
        ]
        inference = {
            k2: payload[k]
            for k, k2 in (("max_tokens", "maxTokens"), ("temperature", "temperature"), ("top_p", "topP"))
            if payload.get(k) is not None
        }
        if payload.get("stop"):
            inference["stopSequences"] = payload["stop"] if isinstance(payload["stop"], list) else [payload["stop"]]
        args: dict[str, Any] = {"modelId": self.model.model_name, "messages": messages}
        if system:
            args["system"] = system
        if inference:
            args["inferenceConfig"] = inference
        return args

    def chat(self, payload: dict[str, Any]) -> dict[str, Any]:
        resp = _bedrock_call(lambda: self._client().converse(**self._converse_args(payload)))
        usage = resp.get("usage") or {}
        self.usage.add(usage.get("inputTokens"), usage.get("outputTokens"), usage.get("totalTokens"))
        text = "".join(part.get("text", "") for part in ((resp.get("output") or {}).get("message") or {}).get("content") or [])
        finish = {"max_tokens": "length", "tool_use": "tool_calls"}.get(resp.get("stopReason") or "", "stop")
        return {
            "id": (resp.get("ResponseMetadata") or {}).get("RequestId") or f"bedrock-{int(time.time())}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": self.model.model_name,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text, "tool_calls": None, "refusal": None},
                    "finish_reason": finish,
                }
            ],
            "usage": chat_usage(usage.get("inputTokens"), usage.get("outputTokens"), usage.get("totalTokens")),
        }

    def chat_stream(self, payload: dict[str, Any]) -> Iterator[dict[str, Any]]:
        resp = _bedrock_call(lambda: self._client().converse_stream(**self._converse_args(payload)))
        return self._chunks(resp.get("stream") or [])

    def _chunks(self, events: Any) -> Iterator[dict[str, Any]]:
        created = int(time.time())
        for event in events:
            delta, finish, usage = None, None, None
            if "contentBlockDelta" in event:
                delta = event["contentBlockDelta"].get("delta", {}).get("text")
            elif "messageStop" in event:
                finish = {"max_tokens": "length", "tool_use": "tool_calls"}.get(event["messageStop"].get("stopReason") or "", "stop")
            elif "metadata" in event:
                raw = event["metadata"].get("usage") or {}
                self.usage.add(raw.get("inputTokens"), raw.get("outputTokens"), raw.get("totalTokens"))
                usage = chat_usage(raw.get("inputTokens"), raw.get("outputTokens"), raw.get("totalTokens"))
            else:
                continue
            yield {
                "id": f"bedrock-{created}",
                "object": "chat.completion.chunk",
                "created": created,
                "model": self.model.model_name,
                "choices": []
                if usage
                else [{"index": 0, "finish_reason": finish, "delta": {"role": "assistant", "content": delta, "tool_calls": None}}],
                "usage": usage,
            }


_bedrock_clients: dict[str | None, Any] = {}


def bedrock_client(region: str | None) -> Any:
    """bedrock-runtime with the function's own credentials (``BEDROCK_ENDPOINT_URL`` points tests at a stub)."""
    if region not in _bedrock_clients:
        import os

        import boto3

        _bedrock_clients[region] = boto3.client(
            "bedrock-runtime", region_name=region or None, endpoint_url=os.environ.get("BEDROCK_ENDPOINT_URL") or None
        )
    return _bedrock_clients[region]


def _bedrock_call(call: Any) -> Any:
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        return call()
    except ClientError as error:
        status = int(error.response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 502)
        raise GatewayHTTPError(status, error.response.get("Error", {}).get("Message") or str(error)) from error
    except BotoCoreError as error:
        raise GatewayHTTPError(502, str(error)) from error


_PROVIDERS: dict[str, type[Provider]] = {
    "anthropic": AnthropicProvider,
    "gemini": GeminiProvider,
    "bedrock": BedrockProvider,
    "amazon-bedrock": BedrockProvider,
}


def provider_for(model: ModelConfig) -> Provider:
    """MLflow's ``get_provider`` over the providers served here; the OpenAI-compatible ones share OpenAI's."""
    cls = _PROVIDERS.get(model.provider)
    if cls is None and (model.provider in OPENAI_COMPATIBLE_BASES or model.auth_config.get("api_base")):
        cls = OpenAIProvider
    if cls is None:
        raise GatewayHTTPError(
            400,
            f"Provider '{model.provider}' is not supported by this gateway (served: OpenAI and OpenAI-compatible, Anthropic, Gemini, Amazon Bedrock).",
        )
    return cls(model)
