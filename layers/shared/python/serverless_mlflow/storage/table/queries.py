"""Queries of one partition of the table or an index: prefixes sent as ranges, range ends fitted to
DynamoDB's key limits, pages read lazily or all at once."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from serverless_mlflow.core.errors import invalid
from serverless_mlflow.storage import dynamo_limits
from serverless_mlflow.storage.dynamo_limits import key_can_exist, require_storable_value
from serverless_mlflow.storage.schema import PK, SK
from serverless_mlflow.storage.table.codec import Item, from_attr, from_item, to_attr
from serverless_mlflow.storage.table.connection import STATS, client, table_name

# A Query's Limit is a 32-bit integer; a page is at most 1 MB anyway, so a larger limit reads page by page.
MAX_QUERY_LIMIT = 2**31 - 1

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
    keys_only: bool = False,
) -> Iterator[tuple[list[Item], dict[str, Any] | None]]:
    """Yield (items, last_evaluated_key) page by page for one partition of the table or an index.

    GSIs cannot be read consistently; callers that must see their own writes use the table or an LSI.
    ``keys_only``: items with their partition and sort key only (the same read units, less to transfer and decode).
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
    if sk_prefix or sk_between or sk_after is not None or sk_before is not None:
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
    if keys_only:
        expr_names["#sk"] = sk_attr
        kwargs["ProjectionExpression"] = "#pk, #sk"
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
