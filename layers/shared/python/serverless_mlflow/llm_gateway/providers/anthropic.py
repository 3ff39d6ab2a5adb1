"""Anthropic (MLflow's ``anthropic.py``): unified chat translated to the Messages API and back, the
Messages passthrough and the raw proxy."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any, ClassVar

from ..upstream import GatewayHTTPError, builtin_base, join, post_json, post_proxy, post_stream
from .base import ANTHROPIC_MESSAGES, CACHE_CREATION, CACHE_READ, INPUT, OUTPUT, TOTAL, Provider, merged_headers, sse_data, usage_from
from .openai import proxy_root_url

DEFAULT_BASE = builtin_base("https://api.anthropic.com/v1")

DEFAULT_MAX_TOKENS = 8192
MAXIMUM_MAX_TOKENS = 1_000_000
DEFAULT_VERSION = "2023-06-01"
_JSON_INSTRUCTION = (
    "Respond with only a single valid JSON object. Do not include any explanatory text, markdown, or code fences "
    "before or after the JSON object."
)


def normalized_usage(usage: dict[str, int] | None) -> dict[str, int] | None:
    """Anthropic's input_tokens exclude cached tokens; MLflow adds them back."""
    if not usage or INPUT not in usage:
        return usage
    extra = usage.get(CACHE_READ, 0) + usage.get(CACHE_CREATION, 0)
    if extra:
        usage[INPUT] += extra
        if TOTAL in usage:
            usage[TOTAL] += extra
    return usage


class _FreeFormSchema(Exception):
    pass


def _strict(schema: Any) -> None:
    """MLflow's ``_enforce_strict_schema``: ``additionalProperties: false`` on every object with properties."""
    if not isinstance(schema, dict):
        return
    if schema.get("type") == "object":
        if "properties" not in schema:
            raise _FreeFormSchema
        schema["additionalProperties"] = False
    for value in schema.values():
        if isinstance(value, dict):
            _strict(value)
        elif isinstance(value, list):
            for item in value:
                _strict(item)


def _messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for m in messages:
        role = m.get("role")
        if role == "user":
            out.append(m)
        elif role == "assistant":
            if m.get("tool_calls") is not None:
                m = {k: v for k, v in m.items() if k != "tool_calls"} | {
                    "content": [
                        {"type": "tool_use", "id": c["id"], "name": c["function"]["name"], "input": json.loads(c["function"]["arguments"])}
                        for c in m["tool_calls"]
                    ]
                }
            out.append(m)
        elif role == "tool":
            out.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": m["tool_call_id"], "content": m["content"]}]})
    return out


def chat_to_model(payload: dict[str, Any], model_name: str) -> dict[str, Any]:
    """MLflow's ``AnthropicAdapter.chat_to_model``."""
    payload = {("stop_sequences" if k == "stop" else k): v for k, v in {**payload, "model": model_name}.items()}
    if "top_p" in payload and "temperature" in payload:
        raise GatewayHTTPError(422, "Cannot set both 'temperature' and 'top_p' parameters.")
    max_completion = payload.pop("max_completion_tokens", None)
    max_tokens = payload.get("max_tokens") or max_completion
    if max_tokens is None:
        max_tokens = DEFAULT_MAX_TOKENS
    if max_tokens > MAXIMUM_MAX_TOKENS:
        raise GatewayHTTPError(422, f"Invalid value for max_tokens: cannot exceed {MAXIMUM_MAX_TOKENS}.")
    payload["max_tokens"] = max_tokens
    if payload.pop("n", 1) != 1:
        raise GatewayHTTPError(422, "'n' must be '1' for the Anthropic provider. Received value: '{n}'.")
    if system := [m for m in payload["messages"] if m["role"] == "system"]:
        payload["system"] = "\n".join(m["content"] for m in system)
    payload["messages"] = _messages(payload["messages"])
    if "temperature" in payload:  # Anthropic's range is 0-1, MLflow's 0-2
        payload["temperature"] = 0.5 * payload["temperature"]
    if tools := payload.pop("tools", None):
        converted = []
        for tool in tools:
            if tool["type"] != "function":
                raise GatewayHTTPError(422, f"Only function calling tool is supported, but received tool type {tool['type']}")
            function = tool["function"]
            converted.append({"name": function["name"], "description": function["description"], "input_schema": function["parameters"]})
        payload["tools"] = converted
    if choice := payload.pop("tool_choice", None):
        match choice:
            case "none" | "auto":
                payload["tool_choice"] = {"type": choice}
            case "required":
                payload["tool_choice"] = {"type": "any"}
            case {"type": "function", "function": {"name": name}}:
                payload["tool_choice"] = {"type": "tool", "name": name}
    if response_format := payload.pop("response_format", None):
        if response_format.get("type") == "json_schema" and "json_schema" in response_format:
            schema = response_format["json_schema"].get("schema", {})
            try:
                _strict(schema)
            except _FreeFormSchema:
                pass  # MLflow falls back to plain text
            else:
                payload["output_config"] = {"format": {"type": "json_schema", "schema": schema}}
        elif response_format.get("type") == "json_object":
            payload["system"] = f"{payload['system']}\n{_JSON_INSTRUCTION}" if payload.get("system") else _JSON_INSTRUCTION
    payload.pop("stream_options", None)
    return payload


def finish_reason(stop_reason: str | None) -> str:
    return {"max_tokens": "length", "tool_use": "tool_calls"}.get(stop_reason or "", "stop")


def chat_usage_of(usage: dict[str, Any]) -> dict[str, Any]:
    """MLflow's ``_build_chat_usage``: prompt tokens include the cached ones."""
    prompt = usage.get("input_tokens")
    output = usage.get("output_tokens")
    cache_read, cache_creation = usage.get(CACHE_READ), usage.get(CACHE_CREATION)
    if prompt is not None:
        prompt += (cache_read or 0) + (cache_creation or 0)
    out: dict[str, Any] = {
        "prompt_tokens": prompt,
        "completion_tokens": output,
        "total_tokens": prompt + output if prompt is not None and output is not None else None,
    }
    if cache_read is not None:
        out["prompt_tokens_details"] = {"cached_tokens": cache_read}
    out.update({k: v for k, v in usage.items() if k not in ("input_tokens", "output_tokens", CACHE_READ, CACHE_CREATION)})
    if cache_creation is not None:
        out[CACHE_CREATION] = cache_creation
    return out


class AnthropicProvider(Provider):
    DISPLAY_NAME = "Anthropic"
    PASSTHROUGH_PATHS: ClassVar[dict[str, str]] = {ANTHROPIC_MESSAGES: "messages"}

    @property
    def base_url(self) -> str:
        return self.model.auth_config.get("api_base") or DEFAULT_BASE

    def headers(self, incoming: dict[str, str] | None = None) -> dict[str, str]:
        own = {
            "x-api-key": self.model.secret_value.get("api_key", ""),
            "anthropic-version": self.model.auth_config.get("version") or DEFAULT_VERSION,
        }
        return merged_headers(own, incoming, ("x-api-key",))

    def chat(self, payload: dict[str, Any]) -> dict[str, Any]:
        self.check_for_model_field(payload)
        resp = post_json(join(self.base_url, "messages"), self.headers(), chat_to_model(dict(payload), self.model.model_name))
        text = "".join(part.get("text", "") for part in resp.get("content") or [] if part.get("type") == "text")
        tool_calls = [
            {"id": part["id"], "type": "function", "function": {"name": part["name"], "arguments": json.dumps(part.get("input"))}}
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
                    "finish_reason": finish_reason(resp.get("stop_reason")),
                }
            ],
            "usage": chat_usage_of(resp.get("usage") or {}),
        }

    def chat_stream(self, payload: dict[str, Any]) -> Iterator[dict[str, Any]]:
        self.check_for_model_field(payload)
        body = chat_to_model(dict(payload), self.model.model_name)
        lines = post_stream(join(self.base_url, "messages"), self.headers(), body)
        tool_indices: dict[int, int] = {}
        metadata: dict[str, Any] = {}
        usage: dict[str, Any] = {}
        for line in lines:
            line = line.strip()
            if not line or not line.startswith(b"data:"):
                continue
            resp = json.loads(line[5:].decode("utf-8"))
            kind = resp["type"]
            if kind == "message_start":
                metadata = {"id": resp["message"]["id"], "model": resp["message"]["model"]}
                if message_usage := resp["message"].get("usage"):
                    usage["input_tokens"] = message_usage.get("input_tokens")
                    for key in (CACHE_READ, CACHE_CREATION):
                        if message_usage.get(key) is not None:
                            usage[key] = message_usage[key]
                continue
            if kind not in ("message_delta", "content_block_start", "content_block_delta"):
                continue
            index = resp.get("index")
            if kind == "content_block_start" and resp["content_block"].get("type") == "tool_use":
                tool_indices[index] = len(tool_indices)
            if kind == "message_delta" and resp.get("usage"):
                usage["output_tokens"] = resp["usage"].get("output_tokens")
            yield self._chunk(resp, metadata, tool_indices.get(index, 0), usage if kind == "message_delta" else None)

    @staticmethod
    def _chunk(resp: dict[str, Any], metadata: dict[str, Any], tool_index: int, usage: dict[str, Any] | None) -> dict[str, Any]:
        """MLflow's ``model_to_chat_streaming``."""
        content = resp.get("delta") or resp.get("content_block") or {}
        stop = finish_reason(content["stop_reason"]) if content.get("stop_reason") is not None else None
        if content.get("type") == "tool_use":
            tool_calls = [
                {
                    "index": tool_index,
                    "id": content.get("id"),
                    "type": "function",
                    "function": {"name": content.get("name"), "arguments": None},
                }
            ]
            delta = {"role": None, "content": None, "tool_calls": tool_calls}
        elif content.get("type") == "input_json_delta":
            tool_calls = [
                {"index": tool_index, "id": None, "type": None, "function": {"name": None, "arguments": content.get("partial_json")}}
            ]
            delta = {"role": None, "content": None, "tool_calls": tool_calls}
        else:
            delta = {"role": None, "content": content.get("text"), "tool_calls": None}
        return {
            "id": metadata.get("id"),
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": metadata.get("model"),
            "choices": [{"index": 0, "finish_reason": stop, "delta": delta}],
            "usage": chat_usage_of(usage) if usage else None,
        }

    def passthrough(self, action: str, payload: dict[str, Any], headers: dict[str, str]) -> Any:
        path = self.check_passthrough(action)
        body = {**payload, "model": self.model.model_name}
        url = join(self.base_url, path)
        if body.get("stream"):
            return self.metered(post_stream(url, self.headers(headers), body))
        return post_json(url, self.headers(headers), body)

    def proxy(self, path: str, payload: dict[str, Any], headers: dict[str, str]) -> tuple[bool, Any]:
        return post_proxy(join(proxy_root_url(self.base_url), path), self.headers(headers), payload)

    def passthrough_usage(self, action: str, answer: dict[str, Any]) -> dict[str, int] | None:
        usage = answer.get("usage") if isinstance(answer, dict) else None
        return normalized_usage(
            usage_from(usage, "input_tokens", "output_tokens", cache_read_key=CACHE_READ, cache_creation_key=CACHE_CREATION)
        )

    def chunk_usage(self, chunk: bytes) -> dict[str, int]:
        usage: dict[str, int] = {}
        for data in sse_data(chunk):
            match data:
                case {"type": "message_start", "message": {"usage": dict(message_usage)}}:
                    if message_usage.get("input_tokens") is not None:
                        usage[INPUT] = message_usage["input_tokens"]
                    for key in (CACHE_READ, CACHE_CREATION):
                        if message_usage.get(key) is not None:
                            usage[key] = message_usage[key]
                case {"type": "message_delta", "usage": {"output_tokens": int(output_tokens)}}:
                    usage[OUTPUT] = output_tokens
        return normalized_usage(usage) or usage
