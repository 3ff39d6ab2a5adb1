"""A streamed answer as one answer, for the trace's output (MLflow's ``output_reducer`` functions in
``mlflow/gateway/tracing_utils.py``)."""

from __future__ import annotations

import json
from typing import Any

from serverless_mlflow.llm_gateway.providers.base import sse_data


def chat_chunks(chunks: list[dict[str, Any]]) -> dict[str, Any] | None:
    """``aggregate_chat_stream_chunks``: the unified chat stream as one completion."""
    if not chunks:
        return None
    states: dict[int, dict[str, Any]] = {}
    for chunk in chunks:
        for choice in chunk.get("choices") or []:
            state = states.setdefault(choice["index"], {"role": None, "content": [], "tools": {}, "finish_reason": None})
            delta = choice.get("delta") or {}
            if delta.get("role") and state["role"] is None:
                state["role"] = delta["role"]
            if delta.get("content"):
                state["content"].append(delta["content"])
            if choice.get("finish_reason"):
                state["finish_reason"] = choice["finish_reason"]
            for call in delta.get("tool_calls") or []:
                tool = state["tools"].setdefault(call.get("index"), {"id": None, "type": "function", "name": "", "arguments": ""})
                tool["id"] = call.get("id") or tool["id"]
                tool["type"] = call.get("type") or tool["type"]
                function = call.get("function") or {}
                tool["name"] += function.get("name") or ""
                tool["arguments"] += function.get("arguments") or ""
    choices = []
    for index, state in sorted(states.items()):
        message: dict[str, Any] = {"role": state["role"] or "assistant", "content": "".join(state["content"]) or None}
        if state["tools"]:
            message["tool_calls"] = [
                {"id": t["id"], "type": t["type"], "function": {"name": t["name"], "arguments": t["arguments"]}}
                for t in state["tools"].values()
            ]
        choices.append({"index": index, "message": message, "finish_reason": state["finish_reason"] or "stop"})
    last = chunks[-1]
    result: dict[str, Any] = {
        "id": last.get("id"),
        "object": "chat.completion",
        "created": last.get("created"),
        "model": last.get("model"),
        "choices": choices,
    }
    if usage := last.get("usage"):
        result["usage"] = {key: usage.get(key) for key in ("prompt_tokens", "completion_tokens", "total_tokens")}
    return result


def anthropic_chunks(chunks: list[bytes]) -> dict[str, Any] | None:
    """``aggregate_anthropic_messages_stream_chunks``: the Messages stream as one Messages answer."""
    if not chunks:
        return None
    message_id = model = stop_reason = stop_sequence = None
    role = "assistant"
    usage: dict[str, Any] = {}
    blocks: dict[int, dict[str, Any]] = {}
    for event in sse_data(b"".join(chunks)):
        match event:
            case {"type": "message_start", "message": dict(message)}:
                message_id, model, role = message.get("id"), message.get("model"), message.get("role", "assistant")
                usage.update({k: v for k, v in (message.get("usage") or {}).items() if v is not None})
            case {"type": "content_block_start", "index": int(index), "content_block": dict(block)}:
                if block.get("type") == "tool_use":
                    blocks[index] = {"type": "tool_use", "id": block.get("id"), "name": block.get("name"), "_input_json": ""}
                else:
                    blocks[index] = {"type": "text", "text": block.get("text", "")}
            case {"type": "content_block_delta", "index": int(index), "delta": dict(delta)}:
                if (block := blocks.get(index)) is None:
                    continue
                if delta.get("type") == "text_delta":
                    block["text"] = block.get("text", "") + delta.get("text", "")
                elif delta.get("type") == "input_json_delta":
                    block["_input_json"] = block.get("_input_json", "") + delta.get("partial_json", "")
            case {"type": "message_delta", "delta": dict(delta)}:
                stop_reason = delta.get("stop_reason", stop_reason)
                stop_sequence = delta.get("stop_sequence", stop_sequence)
                usage.update({k: v for k, v in (event.get("usage") or {}).items() if v is not None})
    if message_id is None and not blocks:
        return None
    content = []
    for block in (blocks[i] for i in sorted(blocks)):
        if block["type"] == "tool_use":
            raw = block.pop("_input_json", "")
            try:
                block["input"] = json.loads(raw) if raw else {}
            except ValueError:
                block["input"] = {}
        content.append(block)
    result: dict[str, Any] = {
        "id": message_id,
        "type": "message",
        "role": role,
        "content": content,
        "model": model,
        "stop_reason": stop_reason,
        "stop_sequence": stop_sequence,
    }
    if usage:
        result["usage"] = usage
    return result


def gemini_chunks(chunks: list[bytes]) -> dict[str, Any] | None:
    """``aggregate_gemini_stream_generate_content_chunks``."""
    if not chunks:
        return None
    states: dict[int, dict[str, Any]] = {}
    usage_metadata = None
    for event in sse_data(b"".join(chunks)):
        for position, candidate in enumerate(event.get("candidates", [])):
            state = states.setdefault(candidate.get("index", position), {"role": "model", "text": [], "calls": [], "finish_reason": None})
            content = candidate.get("content", {})
            state["role"] = content.get("role") or state["role"]
            for part in content.get("parts", []):
                if "text" in part:
                    state["text"].append(part["text"])
                elif "functionCall" in part:
                    state["calls"].append(part["functionCall"])
            state["finish_reason"] = candidate.get("finishReason") or state["finish_reason"]
        usage_metadata = event.get("usageMetadata") or usage_metadata
    if not states:
        return None
    candidates = []
    for index, state in sorted(states.items()):
        parts: list[dict[str, Any]] = [{"text": "".join(state["text"])}] if "".join(state["text"]) else []
        parts += [{"functionCall": call} for call in state["calls"]]
        candidates.append({"content": {"parts": parts, "role": state["role"]}, "finishReason": state["finish_reason"], "index": index})
    result: dict[str, Any] = {"candidates": candidates}
    if usage_metadata:
        result["usageMetadata"] = usage_metadata
    return result


def openai_responses_chunks(chunks: list[bytes]) -> dict[str, Any] | None:
    """``aggregate_openai_responses_stream_chunks``: the ``response.completed`` event's response."""
    for event in sse_data(b"".join(chunks)):
        if event.get("type") == "response.completed":
            return event.get("response")
    return None
