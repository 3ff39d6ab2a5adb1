"""DynamoDB's 400 KB item limit, checked before anything is written.

A request whose values would make one item larger than DynamoDB accepts (a 405 KB description, a 400 KB
model source) is answered with MLflow's INVALID_PARAMETER_VALUE before the first write, so it changes
nothing, instead of failing half-way with a DynamoDB ValidationException.
"""

from __future__ import annotations

from typing import Any

from serverless_mlflow.core.errors import invalid

# 400 KB, attribute names and values together (DynamoDB's own accounting, in UTF-8 bytes).
MAX_ITEM_BYTES = 400 * 1024


def attribute_bytes(value: dict[str, Any]) -> int:
    """Bytes DynamoDB counts for one attribute value in wire format ({"S": ...}, {"N": ...}, ...)."""
    ((kind, inner),) = value.items()
    if kind == "S":
        return len(inner.encode("utf-8"))
    if kind == "B":
        return len(inner)
    if kind == "N":
        digits = len(inner.lstrip("-").replace(".", "").strip("0")) or 1
        return (digits + 1) // 2 + 1
    if kind in ("BOOL", "NULL"):
        return 1
    if kind == "L":
        return 3 + sum(1 + attribute_bytes(element) for element in inner)
    if kind == "M":
        return 3 + sum(1 + len(name.encode("utf-8")) + attribute_bytes(element) for name, element in inner.items())
    if kind == "SS":
        return sum(len(s.encode("utf-8")) for s in inner)
    if kind == "NS":
        return sum(attribute_bytes({"N": n}) for n in inner)
    if kind == "BS":
        return sum(len(b) for b in inner)
    raise ValueError(f"unknown DynamoDB type {kind!r}")


def item_bytes(attributes: dict[str, dict[str, Any]]) -> int:
    return sum(len(name.encode("utf-8")) + attribute_bytes(value) for name, value in attributes.items())


def require_storable(attributes: dict[str, dict[str, Any]]) -> None:
    """Refuse (400) what would make an item exceed DynamoDB's limit; ``attributes`` in wire format."""
    size = item_bytes(attributes)
    if size > MAX_ITEM_BYTES:
        raise invalid(
            f"The request is too large to store: it would make one record {size} bytes, over the storage limit of "
            f"{MAX_ITEM_BYTES} bytes. Shorten its longest value (a description, source, tag or parameter value)."
        )
