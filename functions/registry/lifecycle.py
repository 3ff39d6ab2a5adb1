"""Resumable rename and delete of a registered model, and the marker check every request runs.

A model's items all live in the partition ``RM#<name>``, so a rename moves every item to another
partition and a delete removes them all. Neither fits one transaction, so both are written as
small steps that any request can finish:

Rename ``old -> new``
  1. One transaction sets ``renaming_to=new`` (and ``renamed_at``) on old's META, conditioned on no
     marker, and puts a placeholder META for ``new`` with ``renaming_from=old``, conditioned on the
     name being free (this is the name-uniqueness check).
  2. Batches move items: each transaction checks both markers, puts the rebuilt items in ``new``
     and deletes them from ``old``. A batch is atomic, so a crash never duplicates or loses an item,
     and a later pass simply moves what is left. Versions half-deleted by an interrupted
     delete_model_version (and their tags and aliases) are deleted instead of copied.
  3. One transaction deletes old's META, writes the full META of ``new`` without the marker (it is
     copied from old's META, which no request may change once the marker is set) and moves the
     name-list entry.

Delete ``name``
  1. ``deleting`` is set on META (conditioned on no marker).
  2. Batches delete every other item, each transaction checking the marker still exists.
  3. One transaction deletes META and the name-list entry.

Every write to a model's sub-items checks ``NO_MARKERS`` on META in the same transaction, so once
a marker is set nothing new lands in the partition being emptied. Every read or write that meets
a marker first finishes the job (``settle``): reads of the old name then answer 404 and reads of
the new name see the complete model. The marker checks in each batch stop a slow, stale worker
from touching a partition after the job completed (for example after the name was re-created).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from serverless_mlflow.core.errors import MlflowError, retry_later
from serverless_mlflow.storage import table
from serverless_mlflow.storage.schema import ENTITY_TYPE, PK, SK

from .items import (
    NO_MARKERS,
    RM,
    entry_item,
    entry_key,
    has_marker,
    meta_item,
    meta_key,
    rebuild_for,
    scope,
)

# A transaction holds 100 operations and 4 MB; leave room for the marker checks.
MAX_OPS_PER_TRANSACTION = 98
MAX_BYTES_PER_TRANSACTION = 3_000_000
MAX_SETTLE_ROUNDS = 5

META_ATTRIBUTES = ("name", "description", "creation_timestamp", "last_updated_timestamp", "next_version", "workspace", "is_prompt")


class Interrupted(Exception):
    """Raised by the test hook ``stop_after`` (stop after that many batches; negative: after the last
    batch, before the final step) to simulate a request that dies half way."""


def settle(name: str) -> dict[str, Any] | None:
    """META of ``name`` after finishing any rename/delete in progress; None if there is no such model."""
    for _ in range(MAX_SETTLE_ROUNDS):
        meta = table.get(meta_key(name))
        if meta is None:
            return None
        if not has_marker(meta):
            return meta
        finish(meta)
    raise retry_later(f"Registered Model (name={name}) is busy; retry the request.")


def finish(meta: dict[str, Any], stop_after: int | None = None) -> None:
    """Finish whatever job the markers on ``meta`` describe."""
    if meta.get("deleting"):
        finish_delete(meta["name"], stop_after)
    elif meta.get("renaming_to"):
        finish_rename(meta["name"], meta["renaming_to"], meta["renamed_at"], stop_after)
    elif meta.get("renaming_from"):
        source = table.get(meta_key(meta["renaming_from"]))
        if source is not None and source.get("renaming_to") == meta["name"]:
            finish_rename(source["name"], meta["name"], source["renamed_at"], stop_after)
        else:
            # Steps 1 and 3 are atomic for both partitions, so a target marker without its source
            # marker cannot be produced; refuse to guess rather than publish a partial model.
            raise MlflowError(f"Registered Model (name={meta['name']}) is in an inconsistent rename state.", "INTERNAL_ERROR")


# --- rename -------------------------------------------------------------------------------------


def start_rename(meta: dict[str, Any], new_name: str, renamed_at: int) -> None:
    """Step 1. Raises ConditionFailed with reasons [source, target]."""
    old_name = meta["name"]
    placeholder = meta_item({"name": new_name, "workspace": meta.get("workspace", "default")})
    placeholder.update({"renaming_from": old_name, "renamed_at": renamed_at})
    table.transact(
        [
            table.update_op(
                meta_key(old_name),
                "SET renaming_to = :new, renamed_at = :at",
                values={":new": new_name, ":at": renamed_at},
                condition=NO_MARKERS,
            ),
            table.put_op(placeholder, condition="attribute_not_exists(pk)"),
        ]
    )


def finish_rename(old_name: str, new_name: str, renamed_at: int, stop_after: int | None = None) -> None:
    """Steps 2 and 3; safe to run any number of times, concurrently."""
    checks = [
        table.check_op(meta_key(old_name), "renaming_to = :new", values={":new": new_name}),
        table.check_op(meta_key(new_name), "renaming_from = :old", values={":old": old_name}),
    ]
    items = _partition_items(old_name)
    dead_versions = {item["version"] for item in items if item.get("entity_type") == "model_version" and item.get("deleting")}
    moves: list[dict[str, Any]] = []
    for item in items:
        delete = table.delete_op({PK: item[PK], SK: item[SK]})
        if _belongs_to_dead_version(item, dead_versions):
            moves.append(delete)
        else:
            moves.extend([table.put_op(rebuild_for(item, new_name, renamed_at)), delete])
    if not _run_batches(checks, moves, stop_after):
        return  # another worker completed the rename
    source = table.get(meta_key(old_name))
    if source is None or source.get("renaming_to") != new_name:
        return
    final_meta = meta_item(
        {
            **{k: source[k] for k in META_ATTRIBUTES if k in source},
            "name": new_name,
            "last_updated_timestamp": renamed_at,
        }
    )
    try:
        table.transact(
            [
                table.delete_op(meta_key(old_name), condition="renaming_to = :new", values={":new": new_name}),
                table.put_op(final_meta, condition="renaming_from = :old", values={":old": old_name}),
                table.delete_op(entry_key(old_name)),
                table.put_op(entry_item(new_name, bool(source.get("is_prompt")))),
            ]
        )
    except table.ConditionFailed:
        return


def _belongs_to_dead_version(item: dict[str, Any], dead_versions: set[int]) -> bool:
    kind = item.get("entity_type")
    return kind in ("model_version", "model_version_tag", "model_alias") and item.get("version") in dead_versions


# --- delete -------------------------------------------------------------------------------------


def start_delete(name: str, now: int) -> None:
    table.update(meta_key(name), "SET deleting = :now", values={":now": now}, condition=NO_MARKERS)


def finish_delete(name: str, stop_after: int | None = None) -> None:
    checks = [table.check_op(meta_key(name), "attribute_exists(deleting)")]
    deletes = [table.delete_op({PK: item[PK], SK: item[SK]}) for item in _partition_items(name)]
    if not _run_batches(checks, deletes, stop_after):
        return
    try:
        table.transact(
            [
                table.delete_op(meta_key(name), condition="attribute_exists(deleting)"),
                table.delete_op(entry_key(name)),
            ]
        )
    except table.ConditionFailed:
        return


# --- shared -------------------------------------------------------------------------------------


def _partition_items(name: str) -> list[dict[str, Any]]:
    """Every item of the model except META (strongly consistent)."""
    return [
        item
        for item in table.iter_query(**RM.query("everything", model_name=name, model_scope=scope()))
        if item.get(ENTITY_TYPE) != RM.name
    ]


def _run_batches(checks: list[dict[str, Any]], operations: list[dict[str, Any]], stop_after: int | None) -> bool:
    """Apply ``operations`` in transactions guarded by ``checks``. False when a check failed."""
    done = 0
    for batch in _batches(operations, MAX_OPS_PER_TRANSACTION + 2 - len(checks)):
        if stop_after is not None and 0 <= stop_after <= done:
            raise Interrupted(f"stopped after {done} batches")
        try:
            table.transact([*checks, *batch])
        except table.ConditionFailed:
            return False
        done += 1
    # stop_after < 0: die after the last batch, before the final step.
    if stop_after is not None and (stop_after < 0 or done >= stop_after) and operations:
        raise Interrupted(f"stopped after {done} batches")
    return True


def _batches(operations: list[dict[str, Any]], max_ops: int) -> Iterator[list[dict[str, Any]]]:
    """Chunks by count and size; a put and the delete of its source always travel together."""
    batch: list[dict[str, Any]] = []
    size = 0
    i = 0
    while i < len(operations):
        group = operations[i : i + 2] if "Put" in operations[i] else operations[i : i + 1]
        group_size = sum(len(json.dumps(op, default=str)) for op in group)
        if batch and (len(batch) + len(group) > max_ops or size + group_size > MAX_BYTES_PER_TRANSACTION):
            yield batch
            batch, size = [], 0
        batch.extend(group)
        size += group_size
        i += len(group)
    if batch:
        yield batch
