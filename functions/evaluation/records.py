"""Dataset records: upsert (MLflow's merge_records semantics), paged read, delete by id.

A record is one item ``EDS#<dataset>/R#<input hash>``: the key is MLflow's record identity, so an upsert
finds the record it merges into with one BatchGetItem and a retried upsert lands on the same items. Each
record carries ``rev``; writes are conditional (new: ``attribute_not_exists``, merge: ``rev = :seen``) and
a record whose condition fails is re-read and re-merged, so concurrent upserts never lose an update. Large
documents are split into ``#C<n>`` part items (every item < 400 KB). Records are read in MLflow's page order
``(created_time, dataset_record_id)`` from lsi2 with a keyset token in MLflow's own format.
"""

from __future__ import annotations

import base64
import binascii
import json
import uuid
from typing import Any

from serverless_mlflow.core import clock
from serverless_mlflow.core.errors import MlflowError, invalid
from serverless_mlflow.storage import table
from serverless_mlflow.storage.schema import ENTITY

from . import datasets, record_docs

RECORD = ENTITY["evaluation_dataset_record"]
PART = ENTITY["evaluation_dataset_record_part"]
RECORD_ID = ENTITY["evaluation_dataset_record_id"]
RECORD_ID_PREFIX = "dr-"
# A document up to this size stays on the record item; larger ones go to parts of PART_BYTES.
INLINE_BYTES = 100_000
PART_BYTES = 350_000
# TransactWriteItems carries at most 4 MB: records are committed in chunks under this many bytes.
CHUNK_BYTES = 3_000_000
CHUNK_RECORDS = 45
# A GetDatasetRecords answer must fit Lambda's 6 MB response (JSON inside JSON doubles quotes).
PAGE_BYTES = 2_500_000
MAX_POSITION_BYTES = 512
_DOC_FIELDS = ("inputs", "outputs", "expectations", "tags", "source")
_ITEM_FIELDS = ("source_id", "source_type", "created_time", "last_update_time", "created_by", "last_updated_by")


# --- storage of one record -------------------------------------------------------------------------


def _items(dataset_id: str, digest: str, record_id: str, document: dict[str, Any], rev: int) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(record item, part items) for a document."""
    body = json.dumps({field: document.get(field) for field in _DOC_FIELDS}, allow_nan=True)
    attributes: dict[str, Any] = {field: document.get(field) for field in _ITEM_FIELDS}
    attributes.update(dataset_record_id=record_id, input_hash=digest, rev=rev)
    parts: list[dict[str, Any]] = []
    if len(body.encode("utf-8")) <= INLINE_BYTES:
        attributes["data"] = body
    else:
        chunks = [body[i : i + PART_BYTES // 4] for i in range(0, len(body), PART_BYTES // 4)]
        parts_id = uuid.uuid4().hex[:16]
        parts = [
            PART.item({"data": chunk}, dataset_id=dataset_id, input_hash=digest, parts_id=parts_id, part=n)
            for n, chunk in enumerate(chunks)
        ]
        attributes.update(parts=len(parts), parts_id=parts_id)
    item = RECORD.item(
        attributes, dataset_id=dataset_id, input_hash=digest, created_time=document["created_time"], dataset_record_id=record_id
    )
    return item, parts


def part_keys_of(dataset_id: str, item: dict[str, Any]) -> list[dict[str, str]]:
    """Keys of the parts a record item points to (none when its document is inline)."""
    count = int(item.get("parts") or 0)
    return [PART.key(dataset_id=dataset_id, input_hash=item["input_hash"], parts_id=item["parts_id"], part=n) for n in range(count)]


class _PartsMoved(Exception):
    """A concurrent merge replaced the record (and removed the parts this read was about to fetch)."""


def _documents(dataset_id: str, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Documents of record items (their parts fetched in one batch), each with its item under ``_item``.

    A record merged concurrently between the item read and the parts read has new parts: its item is read
    again (a few times) instead of failing."""
    for _ in datasets.attempts():
        try:
            return _assemble(dataset_id, items)
        except _PartsMoved:
            fresh = {(i["pk"], i["sk"]): i for i in table.batch_get([table.key_of(i) for i in items])}
            items = [fresh[(i["pk"], i["sk"])] for i in items if (i["pk"], i["sk"]) in fresh]
    raise datasets.conflict()


def _assemble(dataset_id: str, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    part_keys = [key for item in items for key in part_keys_of(dataset_id, item)]
    parts = {(p["pk"], p["sk"]): p["data"] for p in table.batch_get(part_keys)} if part_keys else {}
    out = []
    for item in items:
        if item.get("parts"):
            keys = [(k["pk"], k["sk"]) for k in part_keys_of(dataset_id, item)]
            if any(k not in parts for k in keys):
                raise _PartsMoved()
            body = "".join(parts[k] for k in keys)
        else:
            body = item["data"]
        document = json.loads(body)
        document.update({field: item.get(field) for field in _ITEM_FIELDS})
        document["created_time"] = int(document["created_time"])
        document["last_update_time"] = int(document["last_update_time"])
        document["_item"] = item
        out.append(document)
    return out


def _read(dataset_id: str, hashes: list[str]) -> dict[str, dict[str, Any]]:
    items = table.batch_get([RECORD.key(dataset_id=dataset_id, input_hash=h) for h in hashes])
    return {doc["_item"]["input_hash"]: doc for doc in _documents(dataset_id, items)}


# --- upsert ---------------------------------------------------------------------------------------------


def upsert(dataset_id: str, records: Any) -> dict[str, int]:
    """Insert records with new inputs, merge the others; returns MLflow's inserted/updated counts."""
    records = record_docs.validate(records)
    meta = datasets.load(dataset_id)
    if meta is None:
        # SqlAlchemyStore: the records' foreign key fails (an IntegrityError answered as BAD_REQUEST).
        raise MlflowError(f"FOREIGN KEY constraint failed: evaluation dataset '{dataset_id}' does not exist", "BAD_REQUEST")
    now = clock.now_millis()
    by_hash: dict[str, list[dict[str, Any]]] = {}
    for record in records:
        by_hash.setdefault(record_docs.input_hash(record.get("inputs", {})), []).append(record)
    inserted = updated = 0
    pending = list(by_hash)
    for _ in datasets.attempts():
        if not pending:
            break
        existing = _read(dataset_id, pending)
        planned = [_plan(dataset_id, h, by_hash[h], existing.get(h), now) for h in pending]
        committed, pending = _commit(planned)
        for plan in committed:
            inserted += plan["inserted"]
            updated += plan["updated"]
    if pending:
        raise datasets.conflict()
    user = None
    for record in records:
        tags = record.get("tags")
        if tags and record_docs.MLFLOW_USER in tags:
            user = tags[record_docs.MLFLOW_USER]
    _update_dataset(dataset_id, records, inserted, user, now)
    return {"inserted": inserted, "updated": updated}


def _plan(dataset_id: str, digest: str, records: list[dict[str, Any]], existing: dict[str, Any] | None, now: int) -> dict[str, Any]:
    """The new state of one record after applying, in order, every request record with its inputs."""
    inserted = updated = 0
    if existing is None:
        document = record_docs.new_document(records[0], now)
        record_id, rev, rest = f"{RECORD_ID_PREFIX}{uuid.uuid4().hex}", None, records[1:]
        inserted = 1
    else:
        document, record_id, rev, rest = existing, existing["_item"]["dataset_record_id"], int(existing["_item"]["rev"]), records
    for record in rest:
        document = record_docs.merge(document, record, clock.now_millis())
        updated += 1
    item, parts = _items(dataset_id, digest, record_id, document, (rev or 0) + 1)
    # The parts the previous version pointed to: removed once the new version is committed.
    stale = part_keys_of(dataset_id, existing["_item"]) if existing else []
    return {
        "dataset_id": dataset_id,
        "item": item,
        "parts": parts,
        "stale": stale,
        "rev": rev,
        "record_id": record_id,
        "inserted": inserted,
        "updated": updated,
    }


def _commit(plans: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[str]]:
    """Write planned records in transactions; returns (committed plans, hashes whose condition failed)."""
    committed: list[dict[str, Any]] = []
    conflicted: list[str] = []
    for chunk in _chunks(plans):
        table.batch_write(puts=[part for plan in chunk for part in plan["parts"]])
        ops = []
        for plan in chunk:
            if plan["rev"] is None:
                ops.append(table.put_op(plan["item"], condition="attribute_not_exists(pk)"))
                locator = RECORD_ID.item(
                    {"input_hash": plan["item"]["input_hash"]}, dataset_id=plan["dataset_id"], dataset_record_id=plan["record_id"]
                )
                ops.append(table.put_op(locator))
            else:
                ops.append(table.put_op(plan["item"], condition="rev = :rev", values={":rev": plan["rev"]}))
        try:
            table.transact(ops)
            committed += chunk
            table.batch_write(deletes=[key for plan in chunk for key in plan["stale"]])
        except table.ConditionFailed as failure:
            # This attempt's parts are referenced by nothing: a retry writes a new set.
            table.batch_write(deletes=[table.key_of(part) for plan in chunk for part in plan["parts"]])
            if len(chunk) == 1 or not failure.reasons:
                conflicted += [plan["item"]["input_hash"] for plan in chunk]
                continue
            # Only the records whose condition failed are re-read; the rest of the chunk is retried as is.
            failed = _failed_plans(chunk, failure.reasons)
            conflicted += [plan["item"]["input_hash"] for plan in failed]
            retry = [plan for plan in chunk if plan not in failed]
            done, again = _commit(retry)
            committed += done
            conflicted += again
    return committed, conflicted


def _failed_plans(chunk: list[dict[str, Any]], reasons: list[str]) -> list[dict[str, Any]]:
    failed, index = [], 0
    for plan in chunk:
        width = 2 if plan["rev"] is None else 1
        if "ConditionalCheckFailed" in reasons[index : index + width]:
            failed.append(plan)
        index += width
    return failed


def _chunks(plans: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    chunks: list[list[dict[str, Any]]] = [[]]
    size = 0
    for plan in plans:
        plan_bytes = len(plan["item"].get("data", "").encode("utf-8")) + 2048
        if chunks[-1] and (size + plan_bytes > CHUNK_BYTES or len(chunks[-1]) >= CHUNK_RECORDS):
            chunks.append([])
            size = 0
        chunks[-1].append(plan)
        size += plan_bytes
    return [chunk for chunk in chunks if chunk]


def _update_dataset(dataset_id: str, records: list[dict[str, Any]], inserted: int, user: str | None, now: int) -> None:
    """Schema, profile, digest, last update (time and user) of the dataset, guarded by its rev."""
    for _ in datasets.attempts():
        meta = datasets.load(dataset_id)
        if meta is None:
            return
        schema = record_docs.update_schema(meta.get("schema"), records)
        count = int(meta.get("num_records") or 0) + inserted
        sets = {
            "last_update_time": now,
            "digest": datasets.digest(meta["name"], now),
            "num_records": count,
            "rev": int(meta.get("rev") or 0) + 1,
        }
        if schema:
            sets["schema"] = json.dumps(schema)
        if count:
            sets["profile"] = json.dumps({"num_records": count})
        if user is not None:
            sets["last_updated_by"] = user
        names = {f"#a{i}": name for i, name in enumerate(sets)}
        values = {f":v{i}": value for i, value in enumerate(sets.values())}
        expression = "SET " + ", ".join(f"#a{i} = :v{i}" for i in range(len(sets)))
        if user is None:
            # MLflow writes last_updated_by = the last record's mlflow.user, NULL when none carries one.
            expression += " REMOVE last_updated_by"
        values[":rev"] = int(meta.get("rev") or 0)
        try:
            table.update(
                datasets.dataset_key(dataset_id),
                expression,
                names=names,
                values=values,
                condition="rev = :rev AND attribute_not_exists(deleting)",
            )
            return
        except table.ConditionFailed:
            continue
        except Exception as error:
            datasets.raise_if_too_large(error)
            raise
    raise datasets.conflict()


# --- read -------------------------------------------------------------------------------------------------


def _decode_token(page_token: str) -> str:
    """MLflow's cursor ``base64("<created_time>:<record_id>")`` -> the lsi2 sort key to resume after."""
    try:
        created_time, record_id = base64.b64decode(page_token.encode(), validate=True).decode().split(":", 1)
        if len(record_id.encode("utf-8")) > MAX_POSITION_BYTES:
            # No record id is that long (keys digest over-long ids, so the key's length cannot tell).
            raise ValueError(record_id[:20])
        position = RECORD.index_sk(RECORD.patterns["by_created_time"].index, created_time=int(created_time), dataset_record_id=record_id)
    except (ValueError, binascii.Error, UnicodeDecodeError):
        raise invalid(f"Invalid page token: {page_token[:100]!r}") from None
    if len(position.encode("utf-8")) > MAX_POSITION_BYTES:  # no record id is that long; it would not fit a key
        raise invalid(f"Invalid page token: {page_token[:100]!r}")
    return position


def get_records(dataset_id: str, max_results: int, page_token: str | None) -> tuple[list[dict[str, Any]], str | None]:
    """One page of records in (created_time, dataset_record_id) order; a missing dataset has none."""
    if max_results < 1:
        raise invalid(f"Invalid value {max_results} for parameter 'max_results' supplied. It must be a positive integer")
    if not datasets.plausible(dataset_id):
        return [], None
    in_order = RECORD.query("by_created_time", dataset_id=dataset_id)
    if page_token:
        in_order = in_order.after(_decode_token(page_token))
    items = table.query(**in_order, limit=max_results + 1)
    more = len(items) > max_results
    items = items[:max_results]
    out: list[dict[str, Any]] = []
    size = 0
    for document in _documents(dataset_id, items):
        record = record_docs.to_api(document, dataset_id, document["_item"]["dataset_record_id"])
        size += len(json.dumps(record)) * 2
        if out and size > PAGE_BYTES:
            # The answer would not fit Lambda's response: stop here, the client follows the token.
            more = True
            break
        out.append(record)
    token = None
    if more and out:
        last = out[-1]
        token = base64.b64encode(f"{last['created_time']}:{last['dataset_record_id']}".encode()).decode()
    return out, token


# --- delete -------------------------------------------------------------------------------------------------


def delete(dataset_id: str, record_ids: list[str]) -> int:
    meta = datasets.load(dataset_id)
    if meta is None:
        return 0
    locators = table.batch_get([RECORD_ID.key(dataset_id=dataset_id, dataset_record_id=r) for r in dict.fromkeys(record_ids)])
    deleted = 0
    for start in range(0, len(locators), CHUNK_RECORDS):
        chunk = locators[start : start + CHUNK_RECORDS]
        records = table.batch_get([RECORD.key(dataset_id=dataset_id, input_hash=loc["input_hash"]) for loc in chunk])
        ops = [table.delete_op(table.key_of(loc)) for loc in chunk]
        ops += [table.delete_op(table.key_of(record)) for record in records]
        table.transact(ops)
        table.batch_write(deletes=[key for record in records for key in part_keys_of(dataset_id, record)])
        deleted += len(records)
    if deleted:
        _shrink_profile(dataset_id, deleted)
    return deleted


def _shrink_profile(dataset_id: str, deleted: int) -> None:
    for _ in datasets.attempts():
        meta = datasets.load(dataset_id)
        if meta is None:
            return
        count = max(0, int(meta.get("num_records") or 0) - deleted)
        # MLflow writes json.dumps(None) = "null" when the last record goes.
        profile = json.dumps({"num_records": count} if count > 0 else None)
        rev = int(meta.get("rev") or 0)
        try:
            table.update(
                datasets.dataset_key(dataset_id),
                "SET num_records = :n, profile = :p, rev = :next",
                values={":n": count, ":p": profile, ":next": rev + 1, ":rev": rev},
                condition="rev = :rev",
            )
            return
        except table.ConditionFailed:
            continue
    raise datasets.conflict()
