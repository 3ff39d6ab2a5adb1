"""The table's wire format: Python values and items to DynamoDB attribute values and back (no Decimal
round-trips: numbers are ints, floats are stored as strings so NaN and infinities survive), and the
expression arguments of a request."""

from __future__ import annotations

from typing import Any

from serverless_mlflow.storage.schema import ENTITY, ENTITY_TYPE, KEYED_ATTRIBUTES, PK, SK

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
    keyed = _keyed(item)
    return {k: to_attr(v) for k, v in item.items() if v is not None and not (k in keyed and keyed[k] == v)}


def from_item(raw: dict[str, Any]) -> Item:
    item = {k: from_attr(v) for k, v in raw.items()}
    for name, value in _keyed(item).items():
        item.setdefault(name, value)
    return item


def _keyed(item: Item) -> dict[str, Any]:
    """The item's ``KEYED_ATTRIBUTES`` as its keys give them ({} for other entities, or keys of another shape)."""
    names = KEYED_ATTRIBUTES.get(item.get(ENTITY_TYPE))
    if not names or not isinstance(item.get(PK), str) or not isinstance(item.get(SK), str):
        return {}
    entity = ENTITY[item[ENTITY_TYPE]]
    try:
        fields = {**entity.parse_pk(item[PK]), **entity.parse(item[SK])}
    except ValueError:
        return {}
    return {name: fields[name] for name in names if name in fields}


def key_of(item: Item) -> dict[str, str]:
    return {PK: item[PK], SK: item[SK]}


def add_expression_args(kwargs: dict[str, Any], condition: str | None, names: dict[str, str] | None, values: dict[str, Any] | None) -> None:
    if condition:
        kwargs["ConditionExpression"] = condition
    if names:
        kwargs["ExpressionAttributeNames"] = names
    if values:
        kwargs["ExpressionAttributeValues"] = {k: to_attr(v) for k, v in values.items()}
