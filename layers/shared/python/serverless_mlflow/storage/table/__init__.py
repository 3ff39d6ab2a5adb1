"""Table access: the only code that talks to DynamoDB.

Uses the low-level client with a small codec (no Decimal round-trips: numbers are ints, floats are
stored as strings so NaN and infinities survive). Every call is counted in ``STATS`` so benchmarks
can report requests and items per API operation. Batches are chunked to DynamoDB's limits and
``UnprocessedItems``/``UnprocessedKeys`` are retried with backoff; throttling is retried by
botocore under standard-mode conditions, every retry only while the request's deadline leaves time for it
(``deadline``: a throttled request answers 429 within the function's time).

The package's namespace is its API (``table.get``, ``table.transact``, ``table.STATS``...): callers import
``serverless_mlflow.storage.table``, whose modules hold one job each (``codec``, ``connection``, ``storable``,
``item_ops``, ``queries``, ``batches``, ``transactions``). A test that stands in a fault-injecting client
patches ``table.connection`` (``_client``, ``MAX_UNPROCESSED_RETRIES``, ``backoff``): the other modules read
those there at call time.
"""

from __future__ import annotations

from serverless_mlflow.core.errors import CollectionFull, Unavailable
from serverless_mlflow.storage.dynamo_limits import key_can_exist
from serverless_mlflow.storage.table.batches import BATCH_GET_LIMIT, BATCH_WRITE_LIMIT, batch_get, batch_write
from serverless_mlflow.storage.table.codec import Item, from_attr, from_item, key_of, to_attr, to_item
from serverless_mlflow.storage.table.connection import (
    STATS,
    ConditionFailed,
    backoff,
    client,
    is_timeout,
    request_token,
    reset_client,
    table_name,
)
from serverless_mlflow.storage.table.item_ops import delete, get, put, update
from serverless_mlflow.storage.table.queries import HIGHEST_KEY, MAX_QUERY_LIMIT, iter_query, prefix_successor, query, query_pages
from serverless_mlflow.storage.table.storable import require_storable
from serverless_mlflow.storage.table.transactions import (
    TRANSACTION_LIMIT,
    as_update,
    check_op,
    delete_op,
    put_op,
    transact,
    update_op,
    upsert_op,
)

__all__ = [
    "BATCH_GET_LIMIT",
    "BATCH_WRITE_LIMIT",
    "HIGHEST_KEY",
    "MAX_QUERY_LIMIT",
    "STATS",
    "TRANSACTION_LIMIT",
    "CollectionFull",
    "ConditionFailed",
    "Item",
    "Unavailable",
    "as_update",
    "backoff",
    "batch_get",
    "batch_write",
    "check_op",
    "client",
    "delete",
    "delete_op",
    "from_attr",
    "from_item",
    "get",
    "is_timeout",
    "iter_query",
    "key_can_exist",
    "key_of",
    "prefix_successor",
    "put",
    "put_op",
    "query",
    "query_pages",
    "request_token",
    "require_storable",
    "reset_client",
    "table_name",
    "to_attr",
    "to_item",
    "transact",
    "update",
    "update_op",
    "upsert_op",
]
