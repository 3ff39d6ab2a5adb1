"""Request bodies and query strings the way an attacker writes them: JSON text a Python ``json.dumps`` would
never produce (numbers past float64 and int64, bare ``NaN``/``Infinity``, lone surrogates, nesting 50,000
deep) and query strings with repeated keys and raw percent-escapes."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote


@dataclass(frozen=True)
class Literal:
    """JSON text written as is (``1e309``, ``-0``, ``9223372036854775808``, ``[[[...]]]``)."""

    text: str

    def __repr__(self) -> str:
        return f"Literal({self.text[:40]!r}{'...' if len(self.text) > 40 else ''})"


def nested(depth: int) -> Literal:
    return Literal("[" * depth + "]" * depth)


def encode(value: Any) -> str:
    """JSON text of ``value``; ``Literal``s verbatim, non-finite floats as JavaScript literals, strings with
    ``\\u`` escapes (a lone surrogate travels as ``\\ud800``, which is valid JSON text)."""
    if isinstance(value, Literal):
        return value.text
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, dict):
        return "{" + ",".join(f"{json.dumps(str(k))}:{encode(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ",".join(encode(v) for v in value) + "]"
    return json.dumps(value)


def body_bytes(value: Any) -> bytes:
    return encode(value).encode("ascii")


def query_value(value: Any) -> str:
    """A query parameter value as text (what a GET sends for a field of any type)."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return ""
    return encode(value)


def query_string(pairs: list[tuple[str, Any]]) -> str:
    """``k=v&k=v`` with each value percent-encoded; a lone surrogate becomes its (invalid UTF-8) bytes."""
    parts = []
    for key, value in pairs:
        text = query_value(value)
        raw = text.encode("utf-8", "surrogatepass")
        parts.append(f"{path_segment(key)}={quote(raw, safe='')}")
    return "&".join(parts)


def path_segment(value: str) -> str:
    return quote(value.encode("utf-8", "surrogatepass"), safe="")
