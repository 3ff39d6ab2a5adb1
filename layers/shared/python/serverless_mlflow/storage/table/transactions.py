"""Transactions: the operations a TransactWriteItems holds (put, update, delete, condition check) and the
all-or-nothing write itself, with per-item cancellation reasons and retries of transient cancellations."""

from __future__ import annotations

from typing import Any

from serverless_mlflow.core.errors import CollectionFull, Unavailable
from serverless_mlflow.storage.schema import PK, SK
from serverless_mlflow.storage.table import connection
from serverless_mlflow.storage.table.codec import Item, add_expression_args, key_of, to_item
from serverless_mlflow.storage.table.connection import (
    STATS,
    ConditionFailed,
    client,
    described,
    error_code,
    request_token,
    table_name,
)
from serverless_mlflow.storage.table.storable import require_storable, require_storable_update, require_storable_wire_key

TRANSACTION_LIMIT = 100
# Cancellation reasons that say "try again": the transaction lost a race with another one, or was throttled.
_TRANSIENT_REASONS = frozenset({"TransactionConflict", "ThrottlingError", "ProvisionedThroughputExceeded", "RequestLimitExceeded"})


def put_op(
    item: Item, condition: str | None = None, names: dict[str, str] | None = None, values: dict[str, Any] | None = None
) -> dict[str, Any]:
    op: dict[str, Any] = {"Put": {"TableName": table_name(), "Item": to_item(item)}}
    add_expression_args(op["Put"], condition, names, values)
    require_storable(op["Put"]["Item"], op["Put"])
    return op


def update_op(
    key: dict[str, str],
    expression: str,
    names: dict[str, str] | None = None,
    values: dict[str, Any] | None = None,
    condition: str | None = None,
) -> dict[str, Any]:
    op: dict[str, Any] = {"Update": {"TableName": table_name(), "Key": to_item(key), "UpdateExpression": expression}}
    add_expression_args(op["Update"], condition, names, values)
    require_storable_update(op["Update"])
    return op


def as_update(
    item: Item, keep_first: tuple[str, ...] = (), names: dict[str, str] | None = None, values: dict[str, Any] | None = None
) -> tuple[dict[str, str], str, dict[str, str], dict[str, Any]]:
    """A put of ``item`` written as an update: (key, expression, names, values). Every attribute is set as the put
    would (a None one removed), except that those in ``keep_first`` keep a stored value (``if_not_exists``): the
    first write's value survives later puts of the item. ``names``/``values`` (a condition's) are merged in."""
    names, values = dict(names or {}), dict(values or {})
    sets, removes = [], []
    for number, (attribute, value) in enumerate(sorted((a, v) for a, v in item.items() if a not in (PK, SK))):
        name = f"#u{number}"
        names[name] = attribute
        if value is None:
            removes.append(name)
            continue
        values[f":u{number}"] = value
        sets.append(f"{name} = if_not_exists({name}, :u{number})" if attribute in keep_first else f"{name} = :u{number}")
    expression = "SET " + ", ".join(sets) + (" REMOVE " + ", ".join(removes) if removes else "")
    return key_of(item), expression, names, values


def upsert_op(
    item: Item,
    keep_first: tuple[str, ...] = (),
    condition: str | None = None,
    names: dict[str, str] | None = None,
    values: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """``put_op`` of ``item`` as an update keeping the stored ``keep_first`` attributes (``as_update``)."""
    key, expression, names, values = as_update(item, keep_first, names, values)
    return update_op(key, expression, names, values, condition)


def delete_op(
    key: dict[str, str], condition: str | None = None, names: dict[str, str] | None = None, values: dict[str, Any] | None = None
) -> dict[str, Any]:
    op: dict[str, Any] = {"Delete": {"TableName": table_name(), "Key": to_item(key)}}
    add_expression_args(op["Delete"], condition, names, values)
    require_storable_wire_key(op["Delete"]["Key"])
    return op


def check_op(
    key: dict[str, str], condition: str, names: dict[str, str] | None = None, values: dict[str, Any] | None = None
) -> dict[str, Any]:
    op: dict[str, Any] = {"ConditionCheck": {"TableName": table_name(), "Key": to_item(key)}}
    add_expression_args(op["ConditionCheck"], condition, names, values)
    require_storable_wire_key(op["ConditionCheck"]["Key"])
    return op


def _op_key(op: dict[str, Any]) -> dict[str, Any]:
    ((_, body),) = op.items()
    return body.get("Item") or body["Key"]


def transact(operations: list[dict[str, Any]], token: str | None = None) -> None:
    """All-or-nothing write of up to 100 operations. Raises ConditionFailed with per-item reasons.

    ``token`` (ClientRequestToken) makes a retried transaction idempotent for 10 minutes.
    """
    if not operations:
        return
    if len(operations) > TRANSACTION_LIMIT:
        raise ValueError("a transaction holds at most 100 operations")
    kwargs: dict[str, Any] = {"TransactItems": operations}
    if token:
        kwargs["ClientRequestToken"] = request_token(token)
    attempt = 0
    while True:
        try:
            client().transact_write_items(**kwargs)
        except Exception as error:
            STATS.record("TransactWriteItems")
            response = getattr(error, "response", None) or {}
            if error_code(error) != "TransactionCanceledException":
                raise
            reasons = [r.get("Code") or "None" for r in response.get("CancellationReasons", [])]
            # Only a failed condition is a conflict the caller reports (e.g. RESOURCE_ALREADY_EXISTS).
            if "ConditionalCheckFailed" in reasons:
                raise ConditionFailed(reasons) from error
            full = [op for op, reason in zip(operations, reasons, strict=False) if reason == "ItemCollectionSizeLimitExceeded"]
            if full:
                raise CollectionFull(described(_op_key(op) for op in full)) from error
            if set(reasons) - {"None"} <= _TRANSIENT_REASONS:
                attempt += 1
                if attempt <= connection.MAX_UNPROCESSED_RETRIES:
                    connection.backoff(attempt)
                    continue
                raise Unavailable(f"DynamoDB cancelled the transaction {attempt} times: {reasons}") from error
            raise
        writes = sum(1 for op in operations if "ConditionCheck" not in op)
        STATS.record("TransactWriteItems", written=writes)
        return
