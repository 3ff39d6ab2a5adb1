"""Refusing, before anything is written, what DynamoDB would refuse: an item's size, keys and values, and
the values a condition compares with (a clear 400 instead of DynamoDB's ValidationException)."""

from __future__ import annotations

from typing import Any

from serverless_mlflow.storage import dynamo_limits
from serverless_mlflow.storage.dynamo_limits import require_storable_key, require_storable_value
from serverless_mlflow.storage.item_size import require_storable as require_item_size


def require_storable(wire_item: dict[str, Any], request: dict[str, Any] | None = None) -> None:
    """Refuse (400, before anything is written) an item DynamoDB would refuse: its size, keys and values,
    and the values its condition compares with."""
    dynamo_limits.require_storable_item(wire_item)
    require_item_size(wire_item)
    for value in ((request or {}).get("ExpressionAttributeValues") or {}).values():
        require_storable_value(value)


def require_storable_update(update: dict[str, Any]) -> None:
    # The item's other attributes are unknown without a read: the key plus every value set is a lower bound.
    values = update.get("ExpressionAttributeValues", {})
    require_storable({**update["Key"], **{f"v{i}": value for i, value in enumerate(values.values())}})


def require_storable_wire_key(key: dict[str, Any]) -> None:
    require_storable_key({name: value["S"] for name, value in key.items() if "S" in value})
