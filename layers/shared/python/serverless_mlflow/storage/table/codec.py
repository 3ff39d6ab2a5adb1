"""The table's wire format: Python values and items to DynamoDB attribute values and back (no Decimal
round-trips: numbers are ints, floats are stored as strings so NaN and infinities survive), and the
expression arguments of a request."""

from __future__ import annotations

from typing import Any

from serverless_mlflow.storage.schema import PK, SK

Item = dict[str, Any]


def to_attr(value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"BOOL": value}
    if isinstance(value, str):
        return {"S": value}
    if isinstance(value, int):
        return {"N": str(value)}
    if value is None:
        return {"NULL": True}
    if isinstance(value, dict):
        return {"M": {k: to_attr(v) for k, v in value.items()}}
    if isinstance(value, (list, tuple)):
        return {"L": [to_attr(v) for v in value]}
    if isinstance(value, bytes):
        return {"B": value}
    if isinstance(value, (set, frozenset)):
        return {"SS": sorted(value)}
    raise TypeError(f"cannot store {type(value).__name__} in the table (store floats as strings)")


def from_attr(attr: dict[str, Any]) -> Any:
    if not attr:
        # DynamoDB Local's stream images render an empty map as {} instead of {"M": {}}.
        return {}
    ((kind, value),) = attr.items()
    if kind == "S":
        return value
    if kind == "N":
        return int(value) if "." not in value and "e" not in value.lower() else float(value)
    if kind == "BOOL":
        return value
    if kind == "NULL":
        return None
    if kind == "M":
        return {k: from_attr(v) for k, v in value.items()}
    if kind == "L":
        return [from_attr(v) for v in value]
    if kind == "B":
        return value
    if kind == "SS":
        return set(value)
    if kind == "NS":
        return {int(v) for v in value}
    raise TypeError(f"unsupported attribute type {kind}")


def to_item(item: Item) -> dict[str, Any]:
    return {k: to_attr(v) for k, v in item.items() if v is not None}


def from_item(raw: dict[str, Any]) -> Item:
    return {k: from_attr(v) for k, v in raw.items()}


def key_of(item: Item) -> dict[str, str]:
    return {PK: item[PK], SK: item[SK]}


def add_expression_args(kwargs: dict[str, Any], condition: str | None, names: dict[str, str] | None, values: dict[str, Any] | None) -> None:
    if condition:
        kwargs["ConditionExpression"] = condition
    if names:
        kwargs["ExpressionAttributeNames"] = names
    if values:
        kwargs["ExpressionAttributeValues"] = {k: to_attr(v) for k, v in values.items()}
