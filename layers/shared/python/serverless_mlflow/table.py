"""Table access: the only module that talks to DynamoDB.

Uses the low-level client with a small codec (no Decimal round-trips: numbers are ints, floats are
stored as strings so NaN and infinities survive). Every call is counted in ``STATS`` so benchmarks
can report requests and items per API operation. Batches are chunked to DynamoDB's limits and
``UnprocessedItems``/``UnprocessedKeys`` are retried with backoff; throttling is retried by
botocore's adaptive retry mode.
"""

from __future__ import annotations

import os
import random
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from serverless_mlflow import dynamo_limits
from serverless_mlflow.dynamo_limits import key_can_exist, require_storable_key, require_storable_value
from serverless_mlflow.errors import CollectionFull, Unavailable, invalid
from serverless_mlflow.item_size import require_storable as require_item_size
from serverless_mlflow.schema import PK, SK, describe_partition
from serverless_mlflow.stats import Stats

Item = dict[str, Any]

BATCH_WRITE_LIMIT = 25
BATCH_GET_LIMIT = 100
TRANSACTION_LIMIT = 100
MAX_UNPROCESSED_RETRIES = 12
# A Query's Limit is a 32-bit integer; a page is at most 1 MB anyway, so a larger limit reads page by page.
MAX_QUERY_LIMIT = 2**31 - 1


STATS = Stats()


# --- codec ---------------------------------------------------------------------------------


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


# --- client --------------------------------------------------------------------------------

_client_lock = threading.Lock()
_client: Any = None


def client() -> Any:
    global _client
    if _client is None:
        with _client_lock:
            if _client is None:
                import boto3
                from botocore.config import Config

                _client = boto3.client(
                    "dynamodb",
                    endpoint_url=os.environ.get("DYNAMODB_ENDPOINT_URL") or None,
                    config=Config(
                        retries={"mode": "adaptive", "max_attempts": 10},
                        max_pool_connections=32,
                        # Embedded moto walks the whole table per Query; large local benchmarks need longer.
                        read_timeout=int(os.environ.get("DYNAMODB_READ_TIMEOUT_SECONDS", "60")),
                    ),
                )
                _client.meta.events.register("before-call.dynamodb.Scan", _forbid_scan)
    return _client


def _forbid_scan(**_: Any) -> None:
    # Request paths are GetItem, Query, batches or transactions (docs/access-patterns.md), never Scan.
    raise RuntimeError("Scan is not allowed on a request path")


def reset_client() -> None:
    """Forget the cached client (tests switch endpoints)."""
    global _client
    _client = None


def table_name() -> str:
    return os.environ["TABLE_NAME"]


def backoff(attempt: int) -> None:
    """Sleep a random (full-jitter) share of an exponentially growing wait, capped at 2 s."""
    time.sleep(min(2.0, 0.02 * (2**attempt)) * random.random())


class ConditionFailed(Exception):
    """A conditional write or a transaction condition did not hold."""

    def __init__(self, reasons: list[str] | None = None) -> None:
        super().__init__("condition failed")
        self.reasons = reasons or []


def _error_code(error: Exception) -> str | None:
    return getattr(error, "response", {}).get("Error", {}).get("Code")


def _is_condition_failure(error: Exception) -> bool:
    return _error_code(error) == "ConditionalCheckFailedException"


_COLLECTION_FULL = "ItemCollectionSizeLimitExceededException"


def _collection_full(error: Exception, keys: Iterable[dict[str, Any]]) -> CollectionFull | None:
    """The MLflow error for DynamoDB's 10 GB item-collection limit (``keys``: the wire keys the write named)."""
    if _error_code(error) != _COLLECTION_FULL:
        return None
    return CollectionFull(_described(keys))


def _described(keys: Iterable[dict[str, Any]]) -> list[str]:
    return list(dict.fromkeys(describe_partition(key[PK]["S"]) for key in keys if PK in key))


# Cancellation reasons that say "try again": the transaction lost a race with another one, or was throttled.
_TRANSIENT_REASONS = frozenset({"TransactionConflict", "ThrottlingError", "ProvisionedThroughputExceeded", "RequestLimitExceeded"})
_TOKEN_NAMESPACE = uuid.UUID("5d3a6a0e-3f7c-4b8e-9a41-7c2b1f0e9d11")


def request_token(token: str) -> str:
    """A ClientRequestToken for ``token`` on this table (36 characters at most).

    DynamoDB scopes idempotency tokens to the account and region, not the table: the same logical token on
    another table of the account (a second stack, a test table) must not collide with this one.
    """
    return str(uuid.uuid5(_TOKEN_NAMESPACE, f"{table_name()}|{token}"))


# --- single-item operations -------------------------------------------------------------


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
    _add_expression_args(kwargs, condition, names, values)
    require_storable(kwargs["Item"], kwargs)
    try:
        client().put_item(**kwargs)
    except Exception as error:
        STATS.record("PutItem")
        if _is_condition_failure(error):
            raise ConditionFailed() from error
        full = _collection_full(error, [kwargs["Item"]])
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
    _add_expression_args(kwargs, condition, names, values)
    _require_storable_update(kwargs)
    try:
        response = client().update_item(**kwargs)
    except Exception as error:
        STATS.record("UpdateItem")
        if _is_condition_failure(error):
            raise ConditionFailed() from error
        full = _collection_full(error, [kwargs["Key"]])
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
    _add_expression_args(kwargs, condition, names, values)
    try:
        client().delete_item(**kwargs)
    except Exception as error:
        STATS.record("DeleteItem")
        if _is_condition_failure(error):
            raise ConditionFailed() from error
        raise
    STATS.record("DeleteItem", written=1)


def require_storable(wire_item: dict[str, Any], request: dict[str, Any] | None = None) -> None:
    """Refuse (400, before anything is written) an item DynamoDB would refuse: its size, keys and values,
    and the values its condition compares with."""
    dynamo_limits.require_storable_item(wire_item)
    require_item_size(wire_item)
    for value in ((request or {}).get("ExpressionAttributeValues") or {}).values():
        require_storable_value(value)


def _add_expression_args(
    kwargs: dict[str, Any], condition: str | None, names: dict[str, str] | None, values: dict[str, Any] | None
) -> None:
    if condition:
        kwargs["ConditionExpression"] = condition
    if names:
        kwargs["ExpressionAttributeNames"] = names
    if values:
        kwargs["ExpressionAttributeValues"] = {k: to_attr(v) for k, v in values.items()}


# --- queries -------------------------------------------------------------------------------

_MAX_CODE_POINT = 0x10FFFF
_SURROGATES = range(0xD800, 0xE000)


def prefix_successor(prefix: str) -> str | None:
    """The smallest string greater than every string that starts with ``prefix`` (None if there is none).

    A prefix read is sent as ``BETWEEN prefix AND successor`` rather than ``begins_with``: DynamoDB
    Local evaluates ``begins_with`` by walking the whole partition (a 1,000-run experiment partition
    holds every metric point), while a range uses its index. On DynamoDB both read the same items.
    UTF-8 byte order is code point order, so incrementing the last code point is the successor.
    """
    chars = list(prefix)
    while chars and ord(chars[-1]) == _MAX_CODE_POINT:
        chars.pop()
    if not chars:
        return None
    following = ord(chars[-1]) + 1
    if following in _SURROGATES:
        following = _SURROGATES.stop
    chars[-1] = chr(following)
    return "".join(chars)


def _fitting_prefix(value: str) -> str:
    """The longest prefix of ``value`` a sort key can hold: Unicode text of at most 1,024 bytes."""
    text = value
    length = dynamo_limits.utf8_length(text)
    if length is None:
        text = text[: next(i for i, ch in enumerate(text) if dynamo_limits.utf8_length(ch) is None)]
    encoded = text.encode("utf-8")[: dynamo_limits.MAX_SORT_KEY_BYTES - 4]
    return encoded.decode("utf-8", errors="ignore")


def _fit_low(bound: str) -> tuple[str, bool]:
    """(a lower range end a key can hold, at or below ``bound``; whether it is ``bound`` itself)."""
    if dynamo_limits.key_value_fits(bound, dynamo_limits.MAX_SORT_KEY_BYTES):
        return bound, True
    return _fitting_prefix(bound) or "\x00", False


def _fit_high(bound: str) -> tuple[str, bool]:
    """(an upper range end a key can hold, above every key at or below ``bound``; whether it is ``bound``)."""
    if dynamo_limits.key_value_fits(bound, dynamo_limits.MAX_SORT_KEY_BYTES):
        return bound, True
    # Every key at or below ``bound`` sorts below the successor of ``bound``'s prefix (or is that prefix).
    return prefix_successor(_fitting_prefix(bound)) or HIGHEST_KEY, False


# Above every sort key a range can end before (a key is at most 1,024 bytes).
HIGHEST_KEY = "\U0010ffff" * 4


def query_pages(
    pk_value: str,
    sk_prefix: str | None = None,
    *,
    index: str | None = None,
    pk_attr: str = PK,
    sk_attr: str = SK,
    sk_between: tuple[str, str] | None = None,
    sk_after: str | None = None,
    sk_before: str | None = None,
    forward: bool = True,
    consistent: bool = True,
    limit: int | None = None,
    page_size: int | None = None,
    start_key: dict[str, Any] | None = None,
    filter_expression: str | None = None,
    names: dict[str, str] | None = None,
    values: dict[str, Any] | None = None,
) -> Iterator[tuple[list[Item], dict[str, Any] | None]]:
    """Yield (items, last_evaluated_key) page by page for one partition of the table or an index.

    GSIs cannot be read consistently; callers that must see their own writes use the table or an LSI.
    """
    if not dynamo_limits.key_value_fits(pk_value, dynamo_limits.MAX_PARTITION_KEY_BYTES) or (
        sk_prefix and not dynamo_limits.key_value_fits(sk_prefix, dynamo_limits.MAX_SORT_KEY_BYTES)
    ):
        # A partition or a prefix no key can have (an id past DynamoDB's key limits): nothing to read.
        yield [], None
        return
    # Range ends no key can hold are moved to ones that can (the range only grows); ``within`` drops the rest.
    within: Callable[[str], bool] | None = None
    if sk_between:
        (low, low_exact), (high, high_exact) = _fit_low(sk_between[0]), _fit_high(sk_between[1])
        if not (low_exact and high_exact):
            bounds = sk_between
            within = lambda sk: bounds[0] <= sk <= bounds[1]  # noqa: E731
        sk_between = (low, high)
    elif sk_after is not None:
        after, exact = _fit_low(sk_after)
        if not exact:
            bound = sk_after
            within = lambda sk: sk > bound  # noqa: E731
        sk_after = after
    elif sk_before is not None:
        before, exact = _fit_high(sk_before)
        if not exact:
            bound = sk_before
            within = lambda sk: sk < bound  # noqa: E731
        sk_before = before
    if start_key and not key_can_exist({name: from_attr(value) for name, value in start_key.items()}):
        raise invalid("Invalid page token")
    for value in (values or {}).values():
        require_storable_value(to_attr(value))
    expr_names = {"#pk": pk_attr, **(names or {})}
    expr_values: dict[str, Any] = {":pk": pk_value, **(values or {})}
    condition = "#pk = :pk"
    past_prefix: str | None = None
    if sk_prefix is not None or sk_between or sk_after is not None or sk_before is not None:
        expr_names["#sk"] = sk_attr
    if sk_between:
        condition += " AND #sk BETWEEN :lo AND :hi"
        expr_values[":lo"], expr_values[":hi"] = sk_between
    elif sk_after is not None:
        condition += " AND #sk > :after"
        expr_values[":after"] = sk_after
    elif sk_before is not None:
        condition += " AND #sk < :before"
        expr_values[":before"] = sk_before
    elif sk_prefix:
        upper = prefix_successor(sk_prefix)
        if upper is None:
            condition += " AND begins_with(#sk, :prefix)"
            expr_values[":prefix"] = sk_prefix
        else:
            condition += " AND #sk BETWEEN :lo AND :hi"
            expr_values[":lo"], expr_values[":hi"] = sk_prefix, upper
            past_prefix = upper
    kwargs: dict[str, Any] = {
        "TableName": table_name(),
        "KeyConditionExpression": condition,
        "ExpressionAttributeNames": expr_names,
        "ExpressionAttributeValues": {k: to_attr(v) for k, v in expr_values.items()},
        "ScanIndexForward": forward,
    }
    if index:
        kwargs["IndexName"] = index
    if consistent and not (index and index.startswith("gsi")):
        kwargs["ConsistentRead"] = True
    if filter_expression:
        kwargs["FilterExpression"] = filter_expression
    remaining = limit
    exclusive_start = start_key
    while True:
        if remaining is not None:
            kwargs["Limit"] = min(remaining, MAX_QUERY_LIMIT)
        elif page_size is not None:
            # Items per request for a lazy reader that usually stops early (a search page).
            kwargs["Limit"] = min(page_size, MAX_QUERY_LIMIT)
        if exclusive_start:
            kwargs["ExclusiveStartKey"] = exclusive_start
        response = client().query(**kwargs)
        raw_items = response.get("Items", [])
        STATS.record("Query", read=response.get("ScannedCount", len(raw_items)))
        items = [from_item(raw) for raw in raw_items]
        if past_prefix is not None:
            # BETWEEN is inclusive: the one key equal to the successor itself is outside the prefix.
            items = [item for item in items if item.get(sk_attr) != past_prefix]
        if within is not None:
            items = [item for item in items if within(item.get(sk_attr, ""))]
        last_key = response.get("LastEvaluatedKey")
        yield items, last_key
        if remaining is not None:
            remaining -= len(items)
            if remaining <= 0:
                return
        if not last_key:
            return
        exclusive_start = last_key


def query(pk_value: str, sk_prefix: str | None = None, **kwargs: Any) -> list[Item]:
    """All items of a query (every page)."""
    out: list[Item] = []
    for items, _ in query_pages(pk_value, sk_prefix, **kwargs):
        out.extend(items)
    return out


def iter_query(pk_value: str, sk_prefix: str | None = None, **kwargs: Any) -> Iterator[Item]:
    """Items one by one, fetching pages lazily (stop early without reading the rest)."""
    for items, _ in query_pages(pk_value, sk_prefix, **kwargs):
        yield from items


# --- batches and transactions -----------------------------------------------------------------


def batch_get(keys: Iterable[dict[str, str]], consistent: bool = True) -> list[Item]:
    """Every existing item of ``keys`` (order not kept), retrying UnprocessedKeys."""
    unique = list({(k[PK], k[SK]): k for k in keys if key_can_exist(k)}.values())
    found: list[Item] = []
    for start in range(0, len(unique), BATCH_GET_LIMIT):
        pending: dict[str, Any] = {
            table_name(): {"Keys": [to_item(k) for k in unique[start : start + BATCH_GET_LIMIT]], "ConsistentRead": consistent}
        }
        attempt = 0
        while pending:
            response = client().batch_get_item(RequestItems=pending)
            raw_items = response.get("Responses", {}).get(table_name(), [])
            STATS.record("BatchGetItem", read=len(raw_items))
            found.extend(from_item(raw) for raw in raw_items)
            pending = response.get("UnprocessedKeys") or {}
            if pending:
                attempt += 1
                if attempt > MAX_UNPROCESSED_RETRIES:
                    raise Unavailable("BatchGetItem kept returning UnprocessedKeys")
                backoff(attempt)
    return found


def batch_write(puts: Iterable[Item] = (), deletes: Iterable[dict[str, str]] = ()) -> None:
    """Unconditional puts and deletes in chunks of 25, retrying UnprocessedItems until all land."""
    requests: list[dict[str, Any]] = [{"PutRequest": {"Item": to_item(item)}} for item in _dedupe(puts)]
    for request in requests:
        require_storable(request["PutRequest"]["Item"])
    # Deleting a key that cannot exist deletes nothing.
    requests += [{"DeleteRequest": {"Key": to_item(key)}} for key in deletes if key_can_exist(key)]
    for start in range(0, len(requests), BATCH_WRITE_LIMIT):
        pending: list[dict[str, Any]] = requests[start : start + BATCH_WRITE_LIMIT]
        attempt = 0
        while pending:
            try:
                response = client().batch_write_item(RequestItems={table_name(): pending})
            except Exception as error:
                full = _collection_full(
                    error, [r["PutRequest"]["Item"] if "PutRequest" in r else r["DeleteRequest"]["Key"] for r in pending]
                )
                if full is not None:
                    raise full from error
                raise
            unprocessed = (response.get("UnprocessedItems") or {}).get(table_name(), [])
            STATS.record("BatchWriteItem", written=len(pending) - len(unprocessed))
            pending = unprocessed
            if pending:
                attempt += 1
                if attempt > MAX_UNPROCESSED_RETRIES:
                    raise Unavailable("BatchWriteItem kept returning UnprocessedItems")
                backoff(attempt)


def _dedupe(items: Iterable[Item]) -> list[Item]:
    # A batch may not name the same key twice; the last write wins, as it would sequentially.
    return list({(item[PK], item[SK]): item for item in items}.values())


def put_op(
    item: Item, condition: str | None = None, names: dict[str, str] | None = None, values: dict[str, Any] | None = None
) -> dict[str, Any]:
    op: dict[str, Any] = {"Put": {"TableName": table_name(), "Item": to_item(item)}}
    _add_expression_args(op["Put"], condition, names, values)
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
    _add_expression_args(op["Update"], condition, names, values)
    _require_storable_update(op["Update"])
    return op


def _require_storable_update(update: dict[str, Any]) -> None:
    # The item's other attributes are unknown without a read: the key plus every value set is a lower bound.
    values = update.get("ExpressionAttributeValues", {})
    require_storable({**update["Key"], **{f"v{i}": value for i, value in enumerate(values.values())}})


def _require_storable_key(key: dict[str, Any]) -> None:
    require_storable_key({name: value["S"] for name, value in key.items() if "S" in value})


def delete_op(
    key: dict[str, str], condition: str | None = None, names: dict[str, str] | None = None, values: dict[str, Any] | None = None
) -> dict[str, Any]:
    op: dict[str, Any] = {"Delete": {"TableName": table_name(), "Key": to_item(key)}}
    _add_expression_args(op["Delete"], condition, names, values)
    _require_storable_key(op["Delete"]["Key"])
    return op


def check_op(
    key: dict[str, str], condition: str, names: dict[str, str] | None = None, values: dict[str, Any] | None = None
) -> dict[str, Any]:
    op: dict[str, Any] = {"ConditionCheck": {"TableName": table_name(), "Key": to_item(key)}}
    _add_expression_args(op["ConditionCheck"], condition, names, values)
    _require_storable_key(op["ConditionCheck"]["Key"])
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
            response = getattr(error, "response", {})
            if _error_code(error) != "TransactionCanceledException":
                raise
            reasons = [r.get("Code") or "None" for r in response.get("CancellationReasons", [])]
            # Only a failed condition is a conflict the caller reports (e.g. RESOURCE_ALREADY_EXISTS).
            if "ConditionalCheckFailed" in reasons:
                raise ConditionFailed(reasons) from error
            full = [op for op, reason in zip(operations, reasons, strict=False) if reason == "ItemCollectionSizeLimitExceeded"]
            if full:
                raise CollectionFull(_described(_op_key(op) for op in full)) from error
            if set(reasons) - {"None"} <= _TRANSIENT_REASONS:
                attempt += 1
                if attempt <= MAX_UNPROCESSED_RETRIES:
                    backoff(attempt)
                    continue
                raise Unavailable(f"DynamoDB cancelled the transaction {attempt} times: {reasons}") from error
            raise
        writes = sum(1 for op in operations if "ConditionCheck" not in op)
        STATS.record("TransactWriteItems", written=writes)
        return
