"""Batch reads and writes: BatchGetItem and BatchWriteItem chunked to DynamoDB's limits, with
``UnprocessedKeys``/``UnprocessedItems`` retried with backoff."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from serverless_mlflow.core.errors import Unavailable
from serverless_mlflow.storage.dynamo_limits import key_can_exist
from serverless_mlflow.storage.schema import PK, SK
from serverless_mlflow.storage.table import connection
from serverless_mlflow.storage.table.codec import Item, from_item, to_item
from serverless_mlflow.storage.table.connection import STATS, client, collection_full, table_name
from serverless_mlflow.storage.table.storable import require_storable

BATCH_WRITE_LIMIT = 25
BATCH_GET_LIMIT = 100


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
                if attempt > connection.MAX_UNPROCESSED_RETRIES:
                    raise Unavailable("BatchGetItem kept returning UnprocessedKeys")
                connection.backoff(attempt)
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
                full = collection_full(
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
                if attempt > connection.MAX_UNPROCESSED_RETRIES:
                    raise Unavailable("BatchWriteItem kept returning UnprocessedItems")
                connection.backoff(attempt)


def _dedupe(items: Iterable[Item]) -> list[Item]:
    # A batch may not name the same key twice; the last write wins, as it would sequentially.
    return list({(item[PK], item[SK]): item for item in items}.values())
