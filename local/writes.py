"""Which invocations wrote something the indexer will be given: only those wait for the stream (sync mode).

In ``sync`` mode the runtime drains the table's stream before it answers a write, so that a read after the
write sees the derived items. Many requests write nothing (searches and get-by-name are POSTs) or only items
the indexer is never given (metric history points, for one): draining after them only costs time. The
runtime opens an ``Invocation`` around each function call; a botocore hook on every DynamoDB call made
meanwhile (worker threads included: ``local/iam.py`` carries the context into them) marks it when the call
may leave a stream record the indexer is given.

Erring on the side of draining: any operation not known to be a read counts, and so does any update or
delete (only their key is sent, not what they change); a put counts unless its item names an entity type
that is not a source of the indexer (``derived.STREAM_TYPES``, the deployed stream filter's list).
"""

from __future__ import annotations

import contextvars
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from serverless_mlflow.index import derived
from serverless_mlflow.storage import schema

_READS = frozenset({"GetItem", "BatchGetItem", "TransactGetItems", "Query", "Scan"})
_current: contextvars.ContextVar[Invocation | None] = contextvars.ContextVar("local_invocation_writes", default=None)
_installed = False


@dataclass(eq=False)
class Invocation:
    # Set (never reset) by any of the invocation's threads; a bool store is atomic.
    reaches_indexer: bool = False
    # Epoch seconds of its first such write, taken before the call is sent: its stream records are later.
    first_write_at: float | None = None
    # It wrote a registry event (the webhooks' outbox): the runtime wakes its webhook stream reader.
    registry_events: bool = False


class Pending:
    """Invocations whose writes the indexer may not have been given yet (open from their start until the
    runtime knows their records were delivered): the earliest of their writes bounds the creation time of
    any record not read yet (``StreamFollower.written_since``)."""

    def __init__(self) -> None:
        self._open: set[Invocation] = set()
        self._lock = threading.Lock()

    def open(self, invocation: Invocation) -> None:
        with self._lock:
            self._open.add(invocation)

    def close(self, invocation: Invocation) -> None:
        with self._lock:
            self._open.discard(invocation)

    def earliest_write(self) -> float | None:
        with self._lock:
            times = [i.first_write_at for i in self._open if i.first_write_at is not None]
        return min(times) if times else None


@contextmanager
def recording() -> Iterator[Invocation]:
    """Record the DynamoDB writes of the enclosed function call."""
    invocation = Invocation()
    token = _current.set(invocation)
    try:
        yield invocation
    finally:
        _current.reset(token)


def install() -> None:
    """Hook every boto3 client created from now on (the layer's cached clients must be reset after this)."""
    global _installed
    if _installed:
        return
    import boto3

    boto3._get_default_session().events.register("before-parameter-build.dynamodb", _note)
    _installed = True


def _note(params: dict[str, Any], model: Any, **_: Any) -> None:
    invocation = _current.get()
    if invocation is None:
        return
    if not invocation.reaches_indexer and reaches_indexer(model.name, params):
        invocation.first_write_at = time.time()
        invocation.reaches_indexer = True
    if not invocation.registry_events and writes_registry_event(model.name, params):
        invocation.registry_events = True


def writes_registry_event(operation: str, params: dict[str, Any]) -> bool:
    """Whether this call puts a registry event (outbox) item: registry writes put them in transactions."""
    if operation == "PutItem":
        items = [params.get("Item")]
    elif operation == "TransactWriteItems":
        items = [entry["Put"].get("Item") for entry in params.get("TransactItems", []) if "Put" in entry]
    elif operation == "BatchWriteItem":
        items = [r["PutRequest"].get("Item") for batch in params.get("RequestItems", {}).values() for r in batch if "PutRequest" in r]
    else:
        return False
    return any((item or {}).get(schema.ENTITY_TYPE, {}).get("S") == REGISTRY_EVENT for item in items)


REGISTRY_EVENT = "registry_event"


def reaches_indexer(operation: str, params: dict[str, Any]) -> bool:
    """Whether this DynamoDB call may leave a stream record the indexer is given."""
    if operation in _READS or operation.startswith(("Describe", "List")):
        return False
    if operation == "PutItem":
        return _is_source(params.get("Item"))
    if operation == "BatchWriteItem":
        requests = [request for batch in params.get("RequestItems", {}).values() for request in batch]
        return any("PutRequest" not in r or _is_source(r["PutRequest"].get("Item")) for r in requests)
    if operation == "TransactWriteItems":
        return any(_transact_item_reaches_indexer(item) for item in params.get("TransactItems", []))
    return True  # UpdateItem, DeleteItem, PartiQL, anything else


def _transact_item_reaches_indexer(item: dict[str, Any]) -> bool:
    if "ConditionCheck" in item:
        return False  # writes nothing
    if "Put" in item:
        return _is_source(item["Put"].get("Item"))
    return True


def _is_source(item: dict[str, Any] | None) -> bool:
    entity_type = (item or {}).get(schema.ENTITY_TYPE, {}).get("S")
    return entity_type is None or entity_type in derived.STREAM_TYPES  # an item without its type: assume it may
