"""Writing trace infos: one item per trace, at the key its request time gives, found through the locator.

The locator's ``info_time`` is the request time the info's key was made with. Whoever places a new info sets it
first, so readers and updaters go where the info is (an info not written yet is simply not there). ``start_trace``
decides: when it brings another request time than the info already placed (made from span batches), the info
moves in one transaction: the new item merged with the old one, the old one's delete if it is still the version
merged (``rev``: every change of an info adds 1) and the locator's ``info_time``, so a move throttled or failed at
any point leaves the locator naming the info that is there. An update that finds no info where the locator
pointed reads the locator again and follows a move.
"""

from __future__ import annotations

from typing import Any

from serverless_mlflow.core.errors import invalid
from serverless_mlflow.storage import table
from serverless_mlflow.storage.schema import ENTITY_TYPE, INDEXES, PK, SK, TTL_ATTRIBUTE, trace_partition
from serverless_mlflow.store import trace_names, trace_partitions
from serverless_mlflow.store import traces as store

MAX_ATTEMPTS = 5
# Attributes a moved item gets anew from its new keys (every key and index key attribute, and the type).
KEY_ATTRIBUTES = frozenset({PK, SK, ENTITY_TYPE} | {name for index in INDEXES for name in (index.pk, index.sk)})
_ADD_REV = "rev :one"


def info_item(attributes: dict[str, Any], changed_at: int | None = None, shard: int | None = None) -> dict[str, Any]:
    """A complete info item for ``attributes`` (trace_id, experiment_id, request_time, state, ...); ``shard``:
    the shard of the info it rewrites in place (one written under the earlier shard count keeps its own)."""
    experiment_id, request_time, trace_id = str(attributes["experiment_id"]), int(attributes["request_time"]), attributes["trace_id"]
    partition = trace_partition(experiment_id, request_time, trace_id)
    if shard is not None:
        partition["shard"] = shard
    return store.TRACE.item(
        attributes,
        **partition,
        request_time=request_time,
        trace_id=trace_id,
        execution_duration=attributes.get("execution_duration"),
        state=attributes.get("state"),
        trace_name=attributes.get("trace_name"),
        changed_at=changed_at,
    )


def merged(item: dict[str, Any], earlier: list[dict[str, Any] | None]) -> dict[str, Any]:
    """``item`` keeping what was added to earlier versions of the trace's info since they were written: tags,
    metadata, assessments, run and prompt links. ``item``'s own values win; the spans location is ``item``'s to decide."""
    out = dict(item)
    tags: dict[str, str] = {}
    metadata: dict[str, str] = {}
    for old in earlier:
        if not old:
            continue
        tags.update({k: v for k, v in (old.get("tags") or {}).items() if k != store.SPANS_LOCATION_TAG})
        metadata.update(old.get("trace_metadata") or {})
        if old.get("assessments"):
            # Upserted by id: an assessment the new version carries (a retried StartTraceV3) replaces its copy.
            out["assessments"] = {**old["assessments"], **(out.get("assessments") or {})}
        for links in ("linked_runs", "linked_prompts"):
            if old.get(links):
                out[links] = set(out.get(links) or ()) | set(old[links])
    out["tags"] = {**tags, **(item.get("tags") or {})}
    out["trace_metadata"] = {**metadata, **(item.get("trace_metadata") or {})}
    return out


def _rev_condition(existing: dict[str, Any] | None) -> tuple[str, dict[str, Any]]:
    """A condition that holds while the stored item is still ``existing`` (or still absent)."""
    if existing is None:
        return "attribute_not_exists(pk)", {}
    if existing.get("rev") is None:
        return "attribute_exists(pk) AND attribute_not_exists(rev)", {}
    return "rev = :rev", {":rev": existing["rev"]}


def _key(item: dict[str, Any]) -> dict[str, str]:
    return {PK: item[PK], SK: item[SK]}


def info_place(locator: dict[str, Any], trace_id: str) -> dict[str, str] | None:
    """The key of the info the locator names (None: the trace has none placed): where it is, else where its
    writer (a span batch) will put it."""
    if not locator or not store.is_placed(locator):
        return None
    found = store.read_info(locator, trace_id, projection="pk, sk")
    return {PK: found[PK], SK: found[SK]} if found else store.info_key(locator, trace_id)


def save_info(
    item: dict[str, Any], previous: dict[str, str] | None = None, expect_existing: bool = False, moved_from: int | None = None
) -> dict[str, Any]:
    """Store a new version of a trace's info (start_trace): merged into an info already at its key, and moved
    from ``previous`` (another key the trace's info may be at) when given. ``moved_from``: the request time the
    locator still names (``previous``'s): the move and the locator's new time land in one transaction. Returns
    the item stored."""
    key = _key(item)
    if previous == key:
        previous, expect_existing = None, True
    for _ in range(MAX_ATTEMPTS):
        source = table.get(previous) if previous else None
        existing = table.get(key) if expect_existing else None
        stored = merged(item, [source, existing])
        stored["rev"] = max(int((existing or {}).get("rev") or 0), int((source or {}).get("rev") or 0)) + 1
        condition, values = _rev_condition(existing)
        if moved_from is not None:
            try:
                _move_with_locator(stored, (condition, values), previous, source, moved_from)
                return stored
            except table.ConditionFailed:
                # Written, changed or moved meanwhile (a span batch's info, a sync's move, a retry): look again.
                expect_existing = True
                previous, moved_from = _placed_now(item["trace_id"], int(item["request_time"]))
                continue
        try:
            table.put(stored, condition=condition, values=values or None)
        except table.ConditionFailed:
            expect_existing = True  # written meanwhile (the root span's info, a retry): merge with it
            continue
        if source is None:
            return stored
        condition, values = _rev_condition(source)
        try:
            table.delete(_key(source), condition=condition, values=values or None)
            return stored
        except table.ConditionFailed:
            expect_existing = True  # the old item changed after it was read: merge that change too
    raise RuntimeError(f"trace {item['trace_id']}: info kept changing while it was written")


def _move_with_locator(
    stored: dict[str, Any],
    condition: tuple[str, dict[str, Any]],
    previous: dict[str, str] | None,
    source: dict[str, Any] | None,
    moved_from: int,
) -> None:
    """The new item, the old one gone (or still absent: its writer's late put is then stale and dropped) and the
    locator at the new request time, all or nothing."""
    operations = [table.put_op(stored, condition=condition[0], values=condition[1] or None)]
    if previous is not None and source is not None:
        old_condition, old_values = _rev_condition(source)
        operations.append(table.delete_op(previous, condition=old_condition, values=old_values or None))
    elif previous is not None:
        operations.append(table.check_op(previous, "attribute_not_exists(pk)"))
    operations.append(
        table.update_op(
            store.LOCATOR.key(trace_id=stored["trace_id"]),
            "SET info_time = :n",
            values={":n": int(stored["request_time"]), ":o": moved_from},
            condition="info_time = :o",
        )
    )
    table.transact(operations)


def _placed_now(trace_id: str, request_time: int) -> tuple[dict[str, str] | None, int | None]:
    """(the info's key, the request time the locator names) when the info still has to move to ``request_time``;
    (None, None) when the locator names that time already."""
    locator = store.locate(trace_id) or {}
    placed = locator.get("info_time")
    if placed is None or int(placed) == request_time:
        return None, None
    return info_place(locator, trace_id), int(placed)


def _too_large(error: Exception) -> bool:
    response = getattr(error, "response", {}) or {}
    return response.get("Error", {}).get("Code") == "ValidationException" and "size" in str(error)


def update_info(
    item: dict[str, Any],
    expression: str,
    names: dict[str, str] | None = None,
    values: dict[str, Any] | None = None,
    condition: str | None = None,
) -> dict[str, Any] | None:
    """Apply one update expression to the trace's info (adding 1 to its rev), where the locator says it is now.

    ``item``: the info as read. Returns the info the update landed on, or None when the trace has no info any
    more (deleted). ``condition`` is ANDed with "the info exists": ``table.ConditionFailed`` when it does not hold.
    Refuses (400) a change that would push the item past DynamoDB's 400 KB, and changes nothing then.
    """
    trace_id = item["trace_id"]
    full_condition = "attribute_exists(pk)" + (f" AND ({condition})" if condition else "")
    full_values = {**(values or {}), ":one": 1}
    for _ in range(MAX_ATTEMPTS):
        try:
            table.update(_key(item), _with_rev(expression), names=names or None, values=full_values, condition=full_condition)
            return item
        except table.ConditionFailed:
            pass
        except Exception as error:
            if _too_large(error):
                raise invalid(
                    f"The change would make trace {trace_id!r} larger than the storage limit of 400 KB; "
                    "shorten the tag, metadata or assessment value."
                ) from None
            raise
        # The info moved, is gone, or ``condition`` failed: look where the locator points now.
        current = store.info_item_or_none(trace_id)
        if current is None:
            return None
        if _key(current) == _key(item) and condition:
            raise table.ConditionFailed()
        item = current
    return None


def _with_rev(expression: str) -> str:
    """``expression`` plus ``ADD rev :one`` (merged into an ADD clause it already has)."""
    if " ADD " in f" {expression} ":
        head, _, tail = expression.partition("ADD ")
        return f"{head}ADD {_ADD_REV}, {tail}"
    return f"{expression} ADD {_ADD_REV}"


def move_layout1(item: dict[str, Any]) -> bool:
    """Move one layout 1 info to its trace partition, in one transaction with its locator (the migration).

    True when moved; False when it changed or moved meanwhile (the caller reads it again). Its name is listed in
    the partition first (``trace_names``), so trace-name searches find it there at once.
    """
    attributes = {k: v for k, v in item.items() if k not in KEY_ATTRIBUTES}
    attributes["rev"] = int(item.get("rev") or 0) + 1
    moved = info_item(attributes)
    trace_names.ensure_for(moved)
    trace_partitions.ensure_partition(str(item["experiment_id"]), int(item["request_time"]), item["trace_id"], item.get(TTL_ATTRIBUTE))
    condition, values = _rev_condition(item)
    operations = [
        table.put_op(moved, condition="attribute_not_exists(pk)"),
        table.delete_op(_key(item), condition=condition, values=values or None),
        table.update_op(
            store.LOCATOR.key(trace_id=item["trace_id"]),
            "SET info_time = :t, experiment_id = if_not_exists(experiment_id, :e), entity_type = :et",
            values={":t": int(item["request_time"]), ":e": str(item["experiment_id"]), ":et": store.LOCATOR.name},
            condition="attribute_not_exists(info_time)",
        ),
    ]
    try:
        table.transact(operations)
    except table.ConditionFailed:
        return False
    return True
