"""Single-item operations: GetItem, PutItem, UpdateItem and DeleteItem (a key no item can have is answered
without a request)."""

from __future__ import annotations

from typing import Any

from serverless_mlflow.storage.dynamo_limits import key_can_exist
from serverless_mlflow.storage.table.codec import Item, add_expression_args, from_item, to_item
from serverless_mlflow.storage.table.connection import STATS, ConditionFailed, client, collection_full, is_condition_failure, table_name
from serverless_mlflow.storage.table.storable import require_storable, require_storable_update


def get(key: dict[str, str], consistent: bool = True, projection: str | None = None, names: dict[str, str] | None = None) -> Item | None:
    if not key_can_exist(key):
        return None  # an id past DynamoDB's key limits was never stored
    kwargs: dict[str, Any] = {"TableName": table_name(), "Key": to_item(key), "ConsistentRead": consistent}
    if projection:
        kwargs["ProjectionExpression"] = projection
        if names:
            kwargs["ExpressionAttributeNames"] = names
    raw = client().get_item(**kwargs).get("Item")
    STATS.record("GetItem", read=1 if raw else 0)
    return from_item(raw) if raw else None


def put(item: Item, condition: str | None = None, names: dict[str, str] | None = None, values: dict[str, Any] | None = None) -> None:
    kwargs: dict[str, Any] = {"TableName": table_name(), "Item": to_item(item)}
    add_expression_args(kwargs, condition, names, values)
    require_storable(kwargs["Item"], kwargs)
    try:
        client().put_item(**kwargs)
    except Exception as error:
        STATS.record("PutItem")
        if is_condition_failure(error):
            raise ConditionFailed() from error
        full = collection_full(error, [kwargs["Item"]])
        if full is not None:
            raise full from error
        raise
    STATS.record("PutItem", written=1)


def update(
    key: dict[str, str],
    expression: str,
    names: dict[str, str] | None = None,
    values: dict[str, Any] | None = None,
    condition: str | None = None,
    return_values: str = "NONE",
) -> Item | None:
    if condition and not key_can_exist(key):
        raise ConditionFailed()  # no item has this key: its condition cannot hold
    kwargs: dict[str, Any] = {
        "TableName": table_name(),
        "Key": to_item(key),
        "UpdateExpression": expression,
        "ReturnValues": return_values,
    }
    add_expression_args(kwargs, condition, names, values)
    require_storable_update(kwargs)
    try:
        response = client().update_item(**kwargs)
    except Exception as error:
        STATS.record("UpdateItem")
        if is_condition_failure(error):
            raise ConditionFailed() from error
        full = collection_full(error, [kwargs["Key"]])
        if full is not None:
            raise full from error
        raise
    STATS.record("UpdateItem", written=1)
    attributes = response.get("Attributes")
    return from_item(attributes) if attributes else None


def delete(
    key: dict[str, str], condition: str | None = None, names: dict[str, str] | None = None, values: dict[str, Any] | None = None
) -> None:
    if not key_can_exist(key):
        # No such item: a conditional delete fails its condition, an unconditional one deletes nothing.
        if condition:
            raise ConditionFailed()
        return
    kwargs: dict[str, Any] = {"TableName": table_name(), "Key": to_item(key)}
    add_expression_args(kwargs, condition, names, values)
    try:
        client().delete_item(**kwargs)
    except Exception as error:
        STATS.record("DeleteItem")
        if is_condition_failure(error):
            raise ConditionFailed() from error
        raise
    STATS.record("DeleteItem", written=1)
