"""A gateway request and its answer, whatever the transport (the HTTP API's event, the function URL's HTTP)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

# Gateway paths (below /gateway) that name their endpoint in the path.
GEMINI = re.compile(r"^/gemini/v1beta/models/(?P<endpoint>[^/:]+):(?P<action>generateContent|streamGenerateContent)$")
INVOCATIONS = re.compile(r"^/(?P<endpoint>[^/]+)/mlflow/invocations$")
PROXY = re.compile(r"^/proxy/(?P<endpoint>[^/]+)/(?P<path>.+)$")


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
    is_admin: bool = False
    auth_context: dict[str, Any] | None = None


def json_answer(status: int, payload: Any) -> Answer:
    return Answer(status, json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode("utf-8"))


def detail(status: int, value: Any) -> Answer:
    """FastAPI's HTTPException answer: ``{"detail": ...}``."""
    return json_answer(status, {"detail": value})


def text(status: int, body: str, headers: dict[str, str] | None = None) -> Answer:
    return Answer(status, body.encode("utf-8"), headers={"content-type": "text/plain; charset=utf-8", **(headers or {})})


def sse(chunks: Iterator[bytes]) -> Answer:
    return Answer(200, stream=chunks, headers={"content-type": "text/event-stream; charset=utf-8"})
