"""The mock LLM provider's answers (``tools/mock_llm.py``), one function per provider API: OpenAI chat
completions, embeddings and responses, Anthropic messages, Bedrock Converse, Gemini generateContent.

Each takes the request body (or what it needs of it), the prompt and the reply the mock chose, and returns the
JSON body of a 200 answer, or, for a streamed request, the server-sent events in the order the provider sends
them (each a complete ``data:``/``event:`` record). Token counts are words (``tokens``), so tests can predict them.
"""

from __future__ import annotations

import json
from typing import Any

CREATED = 1_700_000_000

# A JSON answer's body, or a stream's server-sent events.
Answer = dict[str, Any] | list[str]


def tokens(text: str) -> int:
    return max(1, len(text.split()))


def openai_chat(body: dict[str, Any], prompt: str, reply: str) -> Answer:
    """OpenAI's chat completion, or its chunks (``stream``; the usage chunk when ``stream_options`` asks)."""
    model = body.get("model") or "mock-model"
    usage = {"prompt_tokens": tokens(prompt), "completion_tokens": tokens(reply), "total_tokens": tokens(prompt) + tokens(reply)}
    if not body.get("stream"):
        return {
            "id": "chatcmpl-mock",
            "object": "chat.completion",
            "created": CREATED,
            "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": reply}, "finish_reason": "stop"}],
            "usage": usage,
        }
    words = reply.split(" ")
    events = []
    for i, word in enumerate(words):
        delta: dict[str, Any] = {"content": word if i == 0 else " " + word}
        if i == 0:
            delta["role"] = "assistant"
        events.append(
            {
                "id": "chatcmpl-mock",
                "object": "chat.completion.chunk",
                "created": CREATED,
                "model": model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": None}],
            }
        )
    events.append(
        {
            "id": "chatcmpl-mock",
            "object": "chat.completion.chunk",
            "created": CREATED,
            "model": model,
            "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
        }
    )
    if (body.get("stream_options") or {}).get("include_usage"):
        events.append(
            {
                "id": "chatcmpl-mock",
                "object": "chat.completion.chunk",
                "created": CREATED,
                "model": model,
                "choices": [],
                "usage": usage,
            }
        )
    return [f"data: {json.dumps(e)}\n\n" for e in events] + ["data: [DONE]\n\n"]


def embeddings(body: dict[str, Any]) -> Answer:
    """OpenAI's embeddings: one small vector per input, its length first."""
    inputs = body.get("input")
    items = inputs if isinstance(inputs, list) else [inputs]
    data = [{"object": "embedding", "index": i, "embedding": [float(len(str(text))), 0.5, -0.25]} for i, text in enumerate(items)]
    count = sum(tokens(str(text)) for text in items)
    return {
        "object": "list",
        "data": data,
        "model": body.get("model") or "mock-embed",
        "usage": {"prompt_tokens": count, "total_tokens": count},
    }


def responses(body: dict[str, Any], prompt: str, reply: str) -> Answer:
    """OpenAI's responses API, or its named events (``stream``)."""
    response = {
        "id": "resp_mock",
        "object": "response",
        "created_at": CREATED,
        "status": "completed",
        "model": body.get("model") or "mock-model",
        "output": [
            {
                "type": "message",
                "id": "msg_mock",
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": reply, "annotations": []}],
            }
        ],
        "usage": {"input_tokens": tokens(prompt), "output_tokens": tokens(reply), "total_tokens": tokens(prompt) + tokens(reply)},
    }
    if not body.get("stream"):
        return response
    events = [("response.created", {"type": "response.created", "response": {**response, "status": "in_progress", "output": []}})]
    for word in reply.split(" "):
        events.append(
            (
                "response.output_text.delta",
                {
                    "type": "response.output_text.delta",
                    "item_id": "msg_mock",
                    "output_index": 0,
                    "content_index": 0,
                    "delta": word + " ",
                },
            )
        )
    events.append(("response.completed", {"type": "response.completed", "response": response}))
    return [f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events]


def anthropic(body: dict[str, Any], prompt: str, reply: str) -> Answer:
    """Anthropic's message, or its named events (``stream``)."""
    model = body.get("model") or "mock-claude"
    usage = {"input_tokens": tokens(prompt), "output_tokens": tokens(reply)}
    if not body.get("stream"):
        return {
            "id": "msg_mock",
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [{"type": "text", "text": reply}],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": usage,
        }
    start = {
        "type": "message_start",
        "message": {
            "id": "msg_mock",
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": usage["input_tokens"], "output_tokens": 1},
        },
    }
    events = [
        ("message_start", start),
        ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
    ]
    for i, word in enumerate(reply.split(" ")):
        events.append(
            (
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "text_delta", "text": word if i == 0 else " " + word},
                },
            )
        )
    events.append(("content_block_stop", {"type": "content_block_stop", "index": 0}))
    events.append(
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                "usage": {"output_tokens": usage["output_tokens"]},
            },
        )
    )
    events.append(("message_stop", {"type": "message_stop"}))
    return [f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events]


def converse_prompt(body: dict[str, Any]) -> str:
    """The text of a Bedrock Converse request's messages (what the mock answers)."""
    return " ".join(part.get("text", "") for m in body.get("messages") or [] for part in m.get("content") or [])


def bedrock_converse(prompt: str, reply: str) -> Answer:
    """Amazon Bedrock's Converse answer (never streamed)."""
    usage = {"inputTokens": tokens(prompt), "outputTokens": tokens(reply), "totalTokens": tokens(prompt) + tokens(reply)}
    return {
        "output": {"message": {"role": "assistant", "content": [{"text": reply}]}},
        "stopReason": "end_turn",
        "usage": usage,
        "metrics": {"latencyMs": 1},
    }


def gemini(stream: bool, prompt: str, reply: str) -> Answer:
    """Gemini's generateContent answer, or its chunks (streamGenerateContent)."""
    usage = {
        "promptTokenCount": tokens(prompt),
        "candidatesTokenCount": tokens(reply),
        "totalTokenCount": tokens(prompt) + tokens(reply),
    }
    full = {
        "candidates": [{"content": {"role": "model", "parts": [{"text": reply}]}, "finishReason": "STOP", "index": 0}],
        "usageMetadata": usage,
        "modelVersion": "mock-gemini",
    }
    if not stream:
        return full
    words = reply.split(" ")
    chunks = [
        {
            "candidates": [{"content": {"role": "model", "parts": [{"text": (w if i == 0 else " " + w)}]}, "index": 0}],
            "modelVersion": "mock-gemini",
        }
        for i, w in enumerate(words)
    ]
    chunks[-1]["candidates"][0]["finishReason"] = "STOP"
    chunks[-1]["usageMetadata"] = usage
    return [f"data: {json.dumps(c)}\r\n\r\n" for c in chunks]
