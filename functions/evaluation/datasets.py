"""Evaluation datasets: create, get, delete, search, tags, experiment associations (SqlAlchemyStore semantics).

A dataset is one item (tags, schema, profile and record count inside it) in the workspace's dataset
collection ``EDSLIST#<ws>``: get is a GetItem, search without experiment ids one consistent Query. Its
experiment associations are written on both sides (``EDS#<id>/X#<exp>`` and ``EXP#<exp>/EVDS#<id>``) in one
transaction, so search by experiment ids reads the experiments' partitions. Records live in ``EDS#<id>``
(see ``records.py``). Read-modify-write updates are guarded by the item's ``rev`` counter.
"""

from __future__ import annotations

import hashlib
import json
import random
import time
import uuid
from collections.abc import Iterator
from typing import Any

from serverless_mlflow.core import clock
from serverless_mlflow.core.errors import MlflowError, invalid, not_found, retry_later
from serverless_mlflow.request import json_text
from serverless_mlflow.request import workspace as request_workspace
from serverless_mlflow.search.evaluation_datasets import DatasetSearch
from serverless_mlflow.storage import keys, table
from serverless_mlflow.storage.schema import ENTITY
from serverless_mlflow.store import experiments as experiment_store

DATASET = ENTITY["evaluation_dataset"]
DATASET_EXPERIMENT = ENTITY["evaluation_dataset_experiment"]
EXPERIMENT_DATASET = ENTITY["experiment_evaluation_dataset"]
ID_PREFIX = "d-"
MLFLOW_USER = "mlflow.user"
MAX_CONFLICT_RETRIES = 12
# Jittered exponential backoff between optimistic-concurrency attempts (seconds).
CONFLICT_BACKOFF_BASE = 0.01
CONFLICT_BACKOFF_CAP = 0.5
MAX_EXPERIMENT_ID_BYTES = 512
MAX_DATASET_ID_BYTES = 512
MAX_TAG_KEY_BYTES = 65_535  # DynamoDB's limit for a map key (tags are a map on the dataset item)


def digest(name: str, last_update_time: int) -> str:
    """SqlAlchemyStore._compute_dataset_digest: changes with every state change."""
    return hashlib.sha256(f"{name}:{last_update_time}".encode()).hexdigest()[:8]


def dataset_key(dataset_id: str) -> dict[str, str]:
    return DATASET.key(workspace=request_workspace.current(), dataset_id=dataset_id)


def partition(dataset_id: str) -> str:
    return DATASET_EXPERIMENT.pk.render({"dataset_id": dataset_id})


def plausible(dataset_id: str) -> bool:
    """Could a dataset have this id? (Anything longer cannot fit a key, and no dataset has it.)"""
    return 0 < len(dataset_id.encode("utf-8")) <= MAX_DATASET_ID_BYTES


def load(dataset_id: str) -> dict[str, Any] | None:
    """The dataset item (consistent), or None when missing or being deleted."""
    if not plausible(dataset_id):
        return None
    item = table.get(dataset_key(dataset_id))
    return None if item is None or item.get("deleting") else item


def to_api(item: dict[str, Any], experiment_ids: list[str] | None = None) -> dict[str, Any]:
    """The Dataset message (``EvaluationDataset.to_proto``)."""
    out: dict[str, Any] = {
        "dataset_id": item["dataset_id"],
        "name": item["name"],
        "tags": json.dumps(item.get("tags") or {}),
        "digest": item["digest"],
        "created_time": int(item["created_time"]),
        "last_update_time": int(item["last_update_time"]),
    }
    for field in ("schema", "profile", "created_by", "last_updated_by"):
        if item.get(field) is not None:
            out[field] = item[field]
    if experiment_ids:
        out["experiment_ids"] = experiment_ids
    return out


def _search_entity(item: dict[str, Any]) -> dict[str, Any]:
    fields = ("dataset_id", "name", "created_time", "last_update_time", "created_by", "last_updated_by", "tags")
    return {field: item.get(field) for field in fields} | {"item": item}


# --- tags ----------------------------------------------------------------------------------------


def parse_tags_json(raw: str, *, required: bool) -> dict[str, Any] | None:
    """The handler's ``json.loads(request.tags)`` (MLflow answers a 500 for bad JSON; we answer 400)."""
    if raw == "" and not required:
        return None
    try:
        parsed = json_text.loads(raw)
    except ValueError:
        raise invalid(f"Invalid value {raw!r} for parameter 'tags': must be a JSON object") from None
    if parsed is None and not required:
        return None
    if not isinstance(parsed, dict):
        raise invalid(f"Invalid value {raw!r} for parameter 'tags': must be a JSON object")
    return parsed


def _create_tag_value(value: Any) -> str | None:
    # create_dataset stores values as given in a TEXT column: sqlite turns numbers (and booleans) into text.
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, (int, float)):
        return str(value)
    raise invalid(f"Invalid value for tag: {value!r}. Tag values must be strings.")


def _check_tag_keys(tags: dict[str, Any]) -> None:
    # Tags are a map on the dataset item, whose keys DynamoDB requires to be non-empty.
    if "" in tags:
        raise invalid("Invalid tag key '': a dataset tag key cannot be empty.")
    for key in tags:
        if len(key.encode("utf-8")) > MAX_TAG_KEY_BYTES:
            raise invalid(f"Invalid tag key '{key[:64]}...': longer than {MAX_TAG_KEY_BYTES} bytes.")


def _check_experiment_ids(experiment_ids: list[str]) -> None:
    # MLflow stores any string here; an id must still fit a DynamoDB key (and real ids are short integers).
    for experiment_id in experiment_ids:
        if len(experiment_id.encode("utf-8")) > MAX_EXPERIMENT_ID_BYTES:
            raise invalid(f"Invalid experiment ID '{experiment_id[:64]}...': longer than {MAX_EXPERIMENT_ID_BYTES} bytes.")


def create_dataset(name: str, experiment_ids: list[str] | None, tags: dict[str, Any] | None) -> dict[str, Any]:
    _check_tag_keys(tags or {})
    _check_experiment_ids([str(e) for e in experiment_ids or []])
    tag_values = {str(k): _create_tag_value(v) for k, v in (tags or {}).items()}
    dataset_id = f"{ID_PREFIX}{uuid.uuid4().hex}"
    now = clock.now_millis()
    user = tag_values.get(MLFLOW_USER)
    attributes: dict[str, Any] = {
        "dataset_id": dataset_id,
        "name": name,
        "digest": digest(name, now),
        "created_time": now,
        "last_update_time": now,
        "created_by": user,
        "last_updated_by": user,
        "tags": tag_values or None,  # no empty map on the item (see _rewrite_tags)
        "num_records": 0,
        "rev": 0,
        "workspace": request_workspace.current(),
    }
    exp_ids = list(dict.fromkeys(str(e) for e in experiment_ids or []))
    links = _link_items(dataset_id, exp_ids, now)
    item = DATASET.item(attributes, workspace=request_workspace.current(), dataset_id=dataset_id)
    room = table.TRANSACTION_LIMIT - 1
    if len(links) > room:
        # Invisible until the dataset item exists: written first, outside the transaction.
        table.batch_write(puts=links[room:])
    table.transact([table.put_op(item, condition="attribute_not_exists(pk)"), *[table.put_op(link) for link in links[:room]]])
    return to_api(item, [str(e) for e in experiment_ids or []])


def _link_items(dataset_id: str, experiment_ids: list[str], now: int) -> list[dict[str, Any]]:
    items = []
    for experiment_id in experiment_ids:
        items.append(
            DATASET_EXPERIMENT.item(
                {"experiment_id": experiment_id, "created_time": now}, dataset_id=dataset_id, experiment_id=experiment_id
            )
        )
        items.append(EXPERIMENT_DATASET.item({"dataset_id": dataset_id}, dataset_id=dataset_id, experiment_id=experiment_id))
    return items


def get_dataset(dataset_id: str) -> dict[str, Any]:
    item = load(dataset_id)
    if item is None:
        raise not_found(f"Evaluation dataset with id '{dataset_id}' not found")
    return to_api(item)


def _require(dataset_id: str, message: str) -> dict[str, Any]:
    item = load(dataset_id)
    if item is None:
        raise not_found(message)
    return item


def set_dataset_tags(dataset_id: str, tags: dict[str, Any]) -> None:
    """Upsert tags (``None`` values are skipped, others stored as ``str(value)``, as MLflow does)."""
    _require(dataset_id, f"Could not find evaluation dataset with ID {dataset_id}")
    _check_tag_keys(tags)
    updates = {str(k): str(v) for k, v in tags.items() if v is not None}
    if updates:
        _rewrite_tags(dataset_id, lambda current: {**current, **updates}, f"Could not find evaluation dataset with ID {dataset_id}")


def delete_dataset_tag(dataset_id: str, key: str) -> None:
    """Idempotent: a missing dataset or tag is a no-op."""
    if not key or not plausible(dataset_id) or len(key.encode("utf-8")) > MAX_TAG_KEY_BYTES:
        return
    _rewrite_tags(dataset_id, lambda current: {k: v for k, v in current.items() if k != key}, None)


def _rewrite_tags(dataset_id: str, change: Any, missing_message: str | None) -> None:
    """Read-modify-write of the tags map, guarded by ``rev``. An empty map is removed rather than stored
    (DynamoDB Local's stream renders an empty map as ``{}``, which no reader of stream images expects)."""
    for _ in attempts():
        item = load(dataset_id)
        if item is None:
            if missing_message:
                raise not_found(missing_message)
            return
        current = item.get("tags") or {}
        new = change(current)
        if new == current:
            return
        rev = int(item.get("rev") or 0)
        expression = "SET rev = :next" + (", tags = :tags" if new else " REMOVE tags")
        values: dict[str, Any] = {":next": rev + 1, ":rev": rev}
        if new:
            values[":tags"] = new
        try:
            table.update(dataset_key(dataset_id), expression, values=values, condition="rev = :rev AND attribute_not_exists(deleting)")
            return
        except table.ConditionFailed:
            continue
        except Exception as error:
            raise_if_too_large(error)
            raise
    raise conflict()


# --- experiments ----------------------------------------------------------------------------------


def experiment_links(dataset_id: str) -> list[dict[str, Any]]:
    links = table.query(**DATASET_EXPERIMENT.query("of_dataset", dataset_id=dataset_id))
    return sorted(links, key=lambda link: (int(link.get("created_time") or 0), link["experiment_id"]))


def get_dataset_experiment_ids(dataset_id: str) -> list[str]:
    """Associated experiment ids in association order; a missing dataset has none (as in MLflow)."""
    if not plausible(dataset_id):
        return []
    return [link["experiment_id"] for link in experiment_links(dataset_id)]


def add_dataset_to_experiments(dataset_id: str, experiment_ids: list[str]) -> dict[str, Any]:
    _require(dataset_id, f"Dataset '{dataset_id}' not found")
    wanted = list(dict.fromkeys(str(e) for e in experiment_ids))
    _check_experiment_ids(wanted)
    for experiment_id in wanted:
        if not _experiment_exists(experiment_id):
            raise not_found(f"No Experiment with id={experiment_id}")
    existing = {link["experiment_id"] for link in experiment_links(dataset_id)}
    links = _link_items(dataset_id, [e for e in wanted if e not in existing], clock.now_millis())
    table.batch_write(puts=links)
    return to_api(_touch(dataset_id))


def remove_dataset_from_experiments(dataset_id: str, experiment_ids: list[str]) -> dict[str, Any]:
    item = _require(dataset_id, f"Dataset '{dataset_id}' not found")
    existing = {link["experiment_id"] for link in experiment_links(dataset_id)}
    removed = [e for e in dict.fromkeys(str(e) for e in experiment_ids) if e in existing]
    if not removed:
        return to_api(item)
    deletes = [DATASET_EXPERIMENT.key(dataset_id=dataset_id, experiment_id=e) for e in removed]
    deletes += [EXPERIMENT_DATASET.key(dataset_id=dataset_id, experiment_id=e) for e in removed]
    table.batch_write(deletes=deletes)
    return to_api(_touch(dataset_id))


def _experiment_exists(experiment_id: str) -> bool:
    try:
        normalized = str(int(experiment_id))
    except ValueError:
        return False
    if not keys.INT64_MIN <= int(normalized) <= keys.INT64_MAX:
        return False
    return experiment_store.get_experiment_item(normalized) is not None


def _touch(dataset_id: str) -> dict[str, Any]:
    """Set last_update_time (the association calls do, without a new digest)."""
    try:
        updated = table.update(
            dataset_key(dataset_id),
            "SET last_update_time = :now",
            values={":now": clock.now_millis()},
            condition="attribute_exists(pk) AND attribute_not_exists(deleting)",
            return_values="ALL_NEW",
        )
    except table.ConditionFailed:
        raise not_found(f"Dataset '{dataset_id}' not found") from None
    return updated or {}


# --- delete -----------------------------------------------------------------------------------------


def delete_dataset(dataset_id: str) -> None:
    """Idempotent and resumable: mark the dataset deleting (it disappears from reads), delete its records and
    associations, then the dataset item. A retried or repeated delete finishes an interrupted one."""
    if not plausible(dataset_id):
        return
    item = table.get(dataset_key(dataset_id))
    if item is None:
        return
    if not item.get("deleting"):
        table.update(dataset_key(dataset_id), "SET deleting = :t", values={":t": True})
    children = table.query(partition(dataset_id))
    experiment_sides = [
        EXPERIMENT_DATASET.key(dataset_id=dataset_id, experiment_id=c["experiment_id"])
        for c in children
        if c.get("entity_type") == DATASET_EXPERIMENT.name
    ]
    table.batch_write(deletes=[table.key_of(c) for c in children] + experiment_sides)
    table.delete(dataset_key(dataset_id))


# --- search -----------------------------------------------------------------------------------------


def search_datasets(
    experiment_ids: list[str] | None, filter_string: str | None, max_results: int | None, order_by: list[str] | None, page_token: str | None
) -> tuple[list[dict[str, Any]], str | None]:
    search = DatasetSearch(filter_string, max_results, order_by, page_token)
    if experiment_ids:
        dataset_ids: dict[str, None] = {}
        for experiment_id in dict.fromkeys(str(e) for e in experiment_ids):
            if len(experiment_id.encode("utf-8")) > MAX_EXPERIMENT_ID_BYTES:
                continue  # no dataset can be associated with it
            for link in table.iter_query(**EXPERIMENT_DATASET.query("of_experiment", experiment_id=experiment_id)):
                dataset_ids[link["dataset_id"]] = None
        items = table.batch_get([dataset_key(d) for d in dataset_ids])
    else:
        items = table.query(**DATASET.query("in_workspace", workspace=request_workspace.current()))
    found, token = search.run([_search_entity(i) for i in items if not i.get("deleting")])
    return [to_api(d["item"]) for d in found], token


def raise_if_too_large(error: Exception) -> None:
    """An update that would grow the dataset item past 400 KB (DynamoDB refuses it, nothing written): 400."""
    details = (getattr(error, "response", None) or {}).get("Error", {})
    if details.get("Code") == "ValidationException" and "size" in str(details.get("Message", "")).lower():
        raise invalid(
            "The dataset's tags and schema would exceed the storage limit of one dataset (400 KB); "
            "use fewer or shorter tags or input/expectation field names."
        ) from error


def attempts() -> Iterator[int]:
    """Attempts of an optimistic read-modify-write. MLflow's store serialises writers in a database transaction;
    here a writer that lost the race re-reads and tries again, after a jittered backoff, so that many writers
    of one record or dataset do not keep colliding (without it, 16 concurrent merges into one record could
    exhaust a writer's attempts)."""
    for attempt in range(MAX_CONFLICT_RETRIES):
        if attempt:
            time.sleep(random.uniform(0, min(CONFLICT_BACKOFF_CAP, CONFLICT_BACKOFF_BASE * 2**attempt)))
        yield attempt


def conflict() -> MlflowError:
    return retry_later("The dataset kept changing under concurrent updates; retry the request.")
