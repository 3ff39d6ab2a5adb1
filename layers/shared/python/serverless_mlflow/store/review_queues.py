"""Review queues and the traces attached to them (``SqlAlchemyStore`` review queue methods).

A queue (its users and schema ids inside it) lives in its experiment's review partition with a
case-insensitive name claim; its items live in the queue's own partition (``RQ#<queue_id>``), listed in
MLflow's order (newest first, then item id) from lsi2, or from lsi3 for one status. Each item also has a
reverse entry under its trace (``RQITEM#<item_id>``): "which queues hold this trace" and dropping a deleted
trace from its queues are one Query each.
"""

from __future__ import annotations

import base64
import json
import uuid
from typing import Any

from serverless_mlflow.core import clock
from serverless_mlflow.core.deferred import deferred
from serverless_mlflow.core.errors import already_exists, invalid, not_found
from serverless_mlflow.core.validation import review as rules
from serverless_mlflow.request.pages import token_json
from serverless_mlflow.storage import table
from serverless_mlflow.storage.keys import INT64_MAX
from serverless_mlflow.storage.schema import entity
from serverless_mlflow.store import label_schemas, review

# protobuf is imported by the first call that builds or parses a message, not at a handler's cold start.
protos = deferred("serverless_mlflow.request.protos")
QUEUE = entity("review_queue")
NAME = entity("review_queue_name")
ITEM = entity("review_queue_item")
ITEM_QUEUE = entity("review_item_queue")
KIND = "review_queue"
ID_PREFIX = "rq-"
SEARCH_MAX_RESULTS_DEFAULT = 1000  # mlflow.store.tracking.SEARCH_MAX_RESULTS_DEFAULT
QUEUE_TYPES = ("USER", "CUSTOM")
STATUSES = ("PENDING", "COMPLETE", "DECLINED")


# --- answers -----------------------------------------------------------------------------------------------


def _queue_answer(item: dict[str, Any]) -> dict[str, Any]:
    message = protos.CLASSES["ReviewQueue"](
        queue_id=item["queue_id"],
        experiment_id=item["experiment_id"],
        name=item["name"],
        queue_type=protos.ENUMS["ReviewQueueType"].index(item["queue_type"]),
        creation_time_ms=int(item["creation_time_ms"]),
        last_update_time_ms=int(item["last_update_time_ms"]),
        # The store hydrates both sets ordered by id (SQL ORDER BY user_id / schema_id).
        users=sorted(item.get("users") or []),
        schema_ids=sorted(item.get("schema_ids") or []),
    )
    if item.get("created_by") is not None:
        message.created_by = item["created_by"]
    return protos.to_json(message)


def _item_answer(item: dict[str, Any]) -> dict[str, Any]:
    message = protos.CLASSES["ReviewQueueItem"](
        queue_id=item["queue_id"],
        item_type=protos.ENUMS["ReviewItemType"].index(item["item_type"]),
        item_id=item["item_id"],
        status=protos.ENUMS["ReviewStatus"].index(item["status"]),
        creation_time_ms=int(item["creation_time_ms"]),
        last_update_time_ms=int(item["last_update_time_ms"]),
    )
    if item.get("completed_by") is not None:
        message.completed_by = item["completed_by"]
    if item.get("completed_time_ms") is not None:
        message.completed_time_ms = int(item["completed_time_ms"])
    return protos.to_json(message)


# --- queues ----------------------------------------------------------------------------------------------


def _missing(queue_id: str) -> Exception:
    return not_found(f"Review queue with id '{queue_id}' not found.")


def _duplicate(name: str) -> Exception:
    return already_exists(f"Review queue with name '{name}' already exists (names are case-insensitive).")


def queue_item(queue_id: str) -> dict[str, Any] | None:
    """The stored queue (None when there is none): locator, then the queue."""
    experiment_id = review.experiment_of(queue_id, KIND)
    return table.get(QUEUE.key(experiment_id=experiment_id, queue_id=queue_id)) if experiment_id else None


def _require(queue_id: str) -> dict[str, Any]:
    found = queue_item(queue_id)
    if found is None:
        raise _missing(queue_id)
    return found


def _check_schema_ids(experiment_id: str, schema_ids: list[str]) -> None:
    if not schema_ids:
        return
    found = label_schemas.existing_ids(experiment_id, schema_ids)
    if missing := [s for s in schema_ids if s not in found]:
        raise invalid(f"Label schema id(s) {missing} not found for experiment '{experiment_id}'.")


def create_review_queue(
    experiment_id: Any, name: str, queue_type: str, users: list[str], schema_ids: list[str], created_by: str | None = None
) -> dict[str, Any]:
    name, users, schema_ids = rules.validate_queue_for_create(name, queue_type, users, schema_ids)
    experiment_id = review.active_experiment_id(experiment_id)
    _check_schema_ids(experiment_id, schema_ids)
    now = clock.now_millis()
    queue_id = ID_PREFIX + uuid.uuid4().hex
    attributes = {
        "queue_id": queue_id,
        "experiment_id": experiment_id,
        "name": name,
        "queue_type": queue_type,
        "created_by": created_by,
        "creation_time_ms": now,
        "last_update_time_ms": now,
        "users": users,
        "schema_ids": schema_ids,
    }
    item = QUEUE.item(attributes, experiment_id=experiment_id, queue_id=queue_id)
    try:
        table.transact(
            [
                table.put_op(item, condition="attribute_not_exists(pk)"),
                table.put_op(
                    NAME.item({"queue_id": queue_id}, experiment_id=experiment_id, name_key=name.lower()),
                    condition="attribute_not_exists(pk)",
                ),
                table.put_op(review.locator_item(queue_id, experiment_id, KIND)),
            ]
        )
    except table.ConditionFailed:
        raise _duplicate(name) from None
    return _queue_answer(item)


def get_or_create_user_queue(experiment_id: Any, user: str) -> dict[str, Any]:
    name = rules.normalize_user(user)
    try:
        return create_review_queue(experiment_id, name, "USER", [], [], created_by=name)
    except Exception as error:
        if getattr(error, "error_code", None) != "RESOURCE_ALREADY_EXISTS":
            raise
        existing = get_review_queue_by_name(experiment_id, name)
        if existing.get("queue_type") != "USER":
            raise already_exists(
                f"A non-user queue named '{name}' already exists; cannot get-or-create a user queue with that name."
            ) from error
        return existing


def get_review_queue(queue_id: str) -> dict[str, Any]:
    return _queue_answer(_require(queue_id))


def get_review_queue_by_name(experiment_id: Any, name: str) -> dict[str, Any]:
    experiment_id = review.active_experiment_id(experiment_id)
    claim = table.get(NAME.key(experiment_id=experiment_id, name_key=name.lower())) if name else None
    item = table.get(QUEUE.key(experiment_id=experiment_id, queue_id=claim["queue_id"])) if claim else None
    if item is None:
        raise not_found(f"Review queue with name '{name}' not found for experiment '{experiment_id}'.")
    return _queue_answer(item)


def list_review_queues(
    experiment_id: Any, user: str | None, item_id: str | None, max_results: int | None, page_token: str | None
) -> tuple[list[dict[str, Any]], str | None]:
    if max_results is None:
        max_results = SEARCH_MAX_RESULTS_DEFAULT
    else:
        review.check_max_results(max_results)
    experiment_id = review.active_experiment_id(experiment_id)
    queues = list(table.iter_query(**QUEUE.query("of_experiment", experiment_id=experiment_id)))
    if user is not None:
        wanted = rules.normalize_user(user)
        queues = [q for q in queues if wanted in (q.get("users") or [])]
    if item_id is not None:
        holding = {entry["queue_id"] for entry in table.iter_query(**ITEM_QUEUE.query("of_item", item_id=item_id))} if item_id else set()
        queues = [q for q in queues if q["queue_id"] in holding]
    page, token = review.page_of(queues, lambda q: (-int(q["creation_time_ms"]), q["queue_id"]), max_results, page_token)
    return [_queue_answer(q) for q in page], token


def _has_items(queue_id: str) -> bool:
    return bool(table.query(**ITEM.query("all", queue_id=queue_id), limit=1))


def update_review_queue(
    queue_id: str, users: list[str] | None, schema_ids: list[str] | None, name: str | None, new_owner: str | None
) -> dict[str, Any]:
    current = _require(queue_id)
    if current["queue_type"] == "USER":
        raise invalid("A user queue's name, assigned user, schemas, and owner are fixed and cannot be updated.")
    if users is None and schema_ids is None and name is None and new_owner is None:
        return _queue_answer(current)
    updated = dict(current)
    if new_owner is not None:
        updated["created_by"] = rules.queue_owner(new_owner)
    if name is not None:
        updated["name"] = rules.custom_queue_name(name)
    if users is not None:
        updated["users"] = rules.normalize_users(users)
    if schema_ids is not None:
        if _has_items(queue_id):
            raise invalid(
                "A review queue's questions are locked once items are assigned to it. Remove the items before changing its questions."
            )
        updated["schema_ids"] = rules.normalize_schema_ids(schema_ids)
        _check_schema_ids(current["experiment_id"], updated["schema_ids"])
    updated["last_update_time_ms"] = clock.now_millis()
    experiment_id = current["experiment_id"]
    operations = [table.put_op(updated, condition="attribute_exists(pk)")]
    old_key, new_key = current["name"].lower(), updated["name"].lower()
    if new_key != old_key:
        operations += [
            table.put_op(
                NAME.item({"queue_id": queue_id}, experiment_id=experiment_id, name_key=new_key), condition="attribute_not_exists(pk)"
            ),
            table.delete_op(NAME.key(experiment_id=experiment_id, name_key=old_key)),
        ]
    try:
        table.transact(operations)
    except table.ConditionFailed:
        if queue_item(queue_id) is None:
            raise _missing(queue_id) from None
        raise _duplicate(updated["name"]) from None
    return _queue_answer(updated)


def _items_of(queue_id: str) -> list[dict[str, Any]]:
    return table.query(**ITEM.query("all", queue_id=queue_id))


def delete_review_queue(queue_id: str) -> None:
    """A no-op for an unknown id; the queue's items go with it (their reviewers' assessments stay)."""
    current = queue_item(queue_id)
    if current is None:
        return
    items = _items_of(queue_id)
    table.batch_write(deletes=[ITEM_QUEUE.key(item_id=i["item_id"], queue_id=queue_id) for i in items])
    table.batch_write(deletes=[table.key_of(i) for i in items])
    experiment_id = current["experiment_id"]
    table.transact(
        [
            table.delete_op(QUEUE.key(experiment_id=experiment_id, queue_id=queue_id)),
            table.delete_op(NAME.key(experiment_id=experiment_id, name_key=current["name"].lower())),
            table.delete_op(review.locator_key(queue_id)),
        ]
    )


# --- items -----------------------------------------------------------------------------------------------


def experiment_of_queue(queue_id: str) -> str:
    return str(_require(queue_id)["experiment_id"])


def add_items(queue_id: str, item_ids: list[str], item_type: str = "TRACE") -> list[dict[str, Any]]:
    """Attach traces (already checked to be in the queue's experiment); an attached one keeps its status."""
    queue = _require(queue_id)
    existing = {i["item_id"]: i for i in table.batch_get([ITEM.key(queue_id=queue_id, item_id=i) for i in item_ids])}
    now = clock.now_millis()
    new = []
    for item_id in item_ids:
        if item_id in existing:
            continue
        values = {"queue_id": queue_id, "item_id": item_id, "status": "PENDING", "rank": INT64_MAX - now}
        attributes = {
            "queue_id": queue_id,
            "item_type": item_type,
            "item_id": item_id,
            "status": "PENDING",
            "creation_time_ms": now,
            "last_update_time_ms": now,
        }
        new.append(ITEM.item(attributes, **values))
    # Reverse entries first: an item is never listed in its queue without them.
    table.batch_write(
        puts=[
            ITEM_QUEUE.item({"queue_id": queue_id, "experiment_id": queue["experiment_id"]}, item_id=i["item_id"], queue_id=queue_id)
            for i in new
        ]
    )
    table.batch_write(puts=new)
    rows = {**existing, **{i["item_id"]: i for i in new}}
    return [_item_answer(rows[item_id]) for item_id in item_ids if item_id in rows]


def remove_items(queue_id: str, item_ids: list[str]) -> None:
    _require(queue_id)
    table.batch_write(deletes=[ITEM.key(queue_id=queue_id, item_id=i) for i in item_ids])
    table.batch_write(deletes=[ITEM_QUEUE.key(item_id=i, queue_id=queue_id) for i in item_ids])


def forget_items(item_ids: list[str]) -> None:
    """Deleted traces leave every queue that holds them (``_delete_review_queue_items_for_traces``)."""
    for item_id in item_ids:
        entries = table.query(**ITEM_QUEUE.query("of_item", item_id=item_id))
        if entries:
            table.batch_write(deletes=[ITEM.key(queue_id=e["queue_id"], item_id=item_id) for e in entries])
            table.batch_write(deletes=[table.key_of(e) for e in entries])


def list_items(
    queue_id: str, status: str | None, max_results: int | None, page_token: str | None
) -> tuple[list[dict[str, Any]], str | None]:
    if max_results is None:
        max_results = SEARCH_MAX_RESULTS_DEFAULT
    else:
        review.check_max_results(max_results)
    _require(queue_id)
    if status is None:
        query = ITEM.query("in_order", queue_id=queue_id)
    else:
        query = ITEM.query("by_status", queue_id=queue_id, status=status)
    start = None
    if page_token:
        position = token_json(page_token)
        if not isinstance(position, dict) or not isinstance(position.get("after"), str):
            raise invalid(f"Invalid page token, parsed value={position}")
        start = position["after"]
    if start is not None:
        query = query.between(start + "\x00", query.ceiling())
    rows: list[dict[str, Any]] = []
    for item in table.iter_query(**query, page_size=max_results + 1):
        rows.append(item)
        if len(rows) > max_results:
            break
    page = rows[:max_results]
    token = None
    if len(rows) > max_results:
        token = base64.b64encode(json.dumps({"after": page[-1][query.sk_attr]}).encode()).decode()
    return [_item_answer(i) for i in page], token


def set_item_status(queue_id: str, item_id: str, status: str, completed_by: str | None) -> dict[str, Any]:
    item_id = item_id.strip()
    completed_by = rules.normalize_user(completed_by) if completed_by is not None else None
    if status == "PENDING":
        if completed_by is not None:
            raise invalid("`completed_by` must not be set when reopening an item to `pending`.")
    elif not completed_by:
        raise invalid(f"`completed_by` is required when setting status to `{status.lower()}`.")
    if completed_by is not None and len(completed_by) > rules.USER_MAX_LENGTH:
        raise invalid(f"`completed_by` must be at most {rules.USER_MAX_LENGTH} characters; got {len(completed_by)}.")
    _require(queue_id)
    key = ITEM.key(queue_id=queue_id, item_id=item_id)
    current = table.get(key) if item_id and len(item_id) <= rules.ITEM_ID_MAX_LENGTH else None
    if current is None:
        raise not_found(f"Item '{item_id}' is not attached to review queue '{queue_id}'.")
    if current["status"] == status:
        return _item_answer(current)  # no churn: the first completer keeps the attribution
    now = clock.now_millis()
    updated = {**current, "status": status, "last_update_time_ms": now}
    updated.update(ITEM.index_keys(status=status, rank=INT64_MAX - int(current["creation_time_ms"]), item_id=item_id))
    if status == "PENDING":
        updated.pop("completed_by", None)
        updated.pop("completed_time_ms", None)
    else:
        updated["completed_by"] = completed_by
        updated["completed_time_ms"] = now
    try:
        table.put(updated, condition="attribute_exists(pk) AND #s = :s", names={"#s": "status"}, values={":s": current["status"]})
    except table.ConditionFailed:
        latest = table.get(key)
        if latest is None:
            raise not_found(f"Item '{item_id}' is not attached to review queue '{queue_id}'.") from None
        return _item_answer(latest)  # a concurrent reviewer changed it first
    return _item_answer(updated)
