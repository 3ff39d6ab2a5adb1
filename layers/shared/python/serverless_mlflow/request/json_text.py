"""JSON text from a request (the body, or a field that carries JSON as a string), parsed without letting a
hostile document through: nesting is capped where protobuf's JSON parser caps it, before Python's own
recursion limit turns it into a crash."""

from __future__ import annotations

import json
from typing import Any

# protobuf's json_format refuses messages nested deeper than this (its max_recursion_depth).
MAX_DEPTH = 100


class TooDeep(ValueError):
    """A JSON document nested deeper than ``MAX_DEPTH``."""

    def __init__(self) -> None:
        super().__init__(f"JSON nested more than {MAX_DEPTH} levels deep")


def loads(text: str | bytes) -> Any:
    """``json.loads``; ``TooDeep`` (a ``ValueError``) past ``MAX_DEPTH`` levels, other ``ValueError``s for
    malformed text, as ``json.loads`` raises them."""
    try:
        value = json.loads(text)
    except RecursionError:
        raise TooDeep() from None
    # Only a document with more brackets than the cap can be nested past it: most need no walk.
    opened = text.count(b"[") + text.count(b"{") if isinstance(text, bytes) else text.count("[") + text.count("{")
    if opened > MAX_DEPTH and depth(value) > MAX_DEPTH:
        raise TooDeep()
    return value


def depth(value: Any) -> int:
    """How many arrays and objects deep ``value`` is (iteratively: no recursion on hostile input)."""
    deepest = 0
    stack = [(value, 1)]
    while stack:
        current, level = stack.pop()
        if isinstance(current, dict):
            children = current.values()
        elif isinstance(current, list):
            children = current
        else:
            continue
        deepest = max(deepest, level)
        stack.extend((child, level + 1) for child in children if isinstance(child, (dict, list)))
    return deepest
