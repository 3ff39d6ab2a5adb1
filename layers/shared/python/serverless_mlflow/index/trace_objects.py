"""S3 objects of trace items that left the table: a spilled span's payload and an archived trace's ``traces.pb``.

``delete_traces`` deletes them with the items. A trace expired by the table's TTL (an experiment's trace
retention) is deleted by DynamoDB itself, so the indexer deletes its objects from the REMOVE records of its span
items and its info (whose tags name the archive); otherwise an expired trace's spans would stay in S3 for good,
costing storage and keeping data the retention setting was meant to drop (the versioned bucket keeps a deleted
object as a noncurrent version for its recovery window, then expires it). An object is deleted only if its item is
still gone when the batch is processed: if a span is sent again after its trace was deleted, the new item keeps
the object it names. Deleting an object already gone (the request path's own delete) is a no-op. An archive outside
the stack's bucket (a workspace's own location) is not ours to delete.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from serverless_mlflow.core.errors import MlflowError
from serverless_mlflow.storage import s3, table
from serverless_mlflow.storage.schema import ENTITY_TYPE, PK, SK
from serverless_mlflow.store import trace_archive
from serverless_mlflow.store import traces as store

# S3's DeleteObjects takes at most this many keys.
DELETE_LIMIT = 1000


def _object_of(item: dict[str, Any]) -> str | None:
    """The object a removed item named, if it is one this stack deletes: a span's spilled payload, or the archive
    an archived trace's info names (in the stack's bucket)."""
    kind = item.get(ENTITY_TYPE)
    if kind == store.SPAN.name:
        return item.get("spill_key")
    if kind in (store.TRACE.name, store.TRACE_V1.name) and trace_archive.is_archived(item):
        try:
            return trace_archive.object_key(str(item["tags"][trace_archive.ARCHIVE_LOCATION_TAG]))
        except (KeyError, MlflowError):
            return None  # no location recorded, or outside the stack's bucket
    return None


def _still_there(item: dict[str, Any]) -> bool:
    """Whether what the removed item belonged to exists again or still: the span item itself, or an info of the
    trace where its locator now says it is (an info moved to its root's start time was removed, not its trace)."""
    if item[ENTITY_TYPE] == store.SPAN.name:
        return table.get({PK: item[PK], SK: item[SK]}, projection="pk") is not None
    trace_id = str(item["trace_id"])
    locator = store.locate(trace_id)
    return locator is not None and store.read_info(locator, trace_id, projection="pk") is not None


def removed_objects(records: Iterable[dict[str, Any]]) -> dict[str, tuple[dict[str, Any], str]]:
    """Object key -> (the removed item, the record's sequence number) for every REMOVE record naming an object."""
    out: dict[str, tuple[dict[str, Any], str]] = {}
    for record in records:
        ddb = record.get("dynamodb") or {}
        if record.get("eventName") != "REMOVE" or not ddb.get("OldImage"):
            continue
        old = table.from_item(ddb["OldImage"])
        name = _object_of(old)
        if name:
            out[name] = (old, str(ddb.get("SequenceNumber", "")))
    return out


def release(records: Iterable[dict[str, Any]]) -> set[str]:
    """Delete the objects of the batch's removed items whose span or trace is still gone; the sequence numbers of
    the records whose object could not be deleted (reported to Lambda, retried)."""
    named = removed_objects(records)
    gone = [name for name, (item, _) in named.items() if not _still_there(item)]
    failed: set[str] = set()
    for start in range(0, len(gone), DELETE_LIMIT):
        chunk = gone[start : start + DELETE_LIMIT]
        answer = s3.client().delete_objects(Bucket=s3.bucket_name(), Delete={"Objects": [{"Key": n} for n in chunk], "Quiet": True})
        failed |= {named[error["Key"]][1] for error in answer.get("Errors") or [] if error.get("Key") in named}
    return failed
