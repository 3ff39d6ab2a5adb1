"""What label schemas, review queues and issues share: their experiment's review partition, id locators,
MLflow's experiment check, and paging over a small, fully read, sorted collection.

Each experiment's review objects live in their own partition (``REVIEW#<experiment_id>``): a list is one
Query of a few dozen items, sorted in memory in MLflow's order. An object's id finds its experiment through
a locator item written in the same transaction as the object.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Sequence
from typing import Any

from serverless_mlflow.core.errors import invalid, not_found
from serverless_mlflow.request.pages import token_json
from serverless_mlflow.storage import table
from serverless_mlflow.storage.schema import entity
from serverless_mlflow.store import experiments as experiment_store

LOCATOR = entity("review_locator")
SEARCH_MAX_RESULTS_THRESHOLD = 50000  # mlflow.store.tracking.SEARCH_MAX_RESULTS_THRESHOLD


def active_experiment_id(experiment_id: Any) -> str:
    """``SqlAlchemyStore._get_experiment(..., ACTIVE_ONLY)``: a deleted experiment does not exist here."""
    normalized = experiment_store.normalize_experiment_id(experiment_id)
    item = experiment_store.get_experiment_item(normalized)
    if item is None or item.get("lifecycle_stage") != "active":
        raise not_found(f"No Experiment with id={normalized} exists")
    return normalized


def locator_item(object_id: str, experiment_id: str, kind: str) -> dict[str, Any]:
    return LOCATOR.item({"experiment_id": experiment_id, "kind": kind}, object_id=object_id)


def locator_key(object_id: str) -> dict[str, str]:
    return LOCATOR.key(object_id=object_id)


def experiment_of(object_id: str, kind: str) -> str | None:
    """The experiment holding the label schema / queue / issue with this id, or None. With workspaces on, one
    whose experiment is in another workspace is None too: MLflow's workspace-aware store joins these tables
    (and a queue's items, users and schemas through the queue) to their experiment's workspace, so every
    id-addressed route answers as for a missing object."""
    if not isinstance(object_id, str) or not object_id or len(object_id) > 200:
        return None
    found = table.get(locator_key(object_id))
    if found is None or found.get("kind") != kind:
        return None
    experiment_id = str(found["experiment_id"])
    return experiment_id if experiment_store.in_request_workspace(experiment_id) else None


def check_max_results(max_results: int | None, allow_null: bool = False) -> None:
    """``SqlAlchemyStore._validate_max_results_param``."""
    if (not allow_null and max_results is None) or (max_results is not None and max_results < 1):
        raise invalid(f"Invalid value {max_results} for parameter 'max_results' supplied. It must be a positive integer")
    if max_results is not None and max_results > SEARCH_MAX_RESULTS_THRESHOLD:
        raise invalid(
            f"Invalid value {max_results} for parameter 'max_results' supplied. It must be at most {SEARCH_MAX_RESULTS_THRESHOLD}"
        )


def page_of(
    rows: Sequence[dict[str, Any]], sort_key: Callable[[dict[str, Any]], tuple[Any, ...]], max_results: int, page_token: str | None
) -> tuple[list[dict[str, Any]], str | None]:
    """One page of ``rows`` in ``sort_key`` order after the token's position; a keyset token (the last row's
    sort key), so objects added or removed between pages never shift the rest."""
    ordered = sorted(rows, key=sort_key)
    if page_token:
        position = token_json(page_token)
        if not isinstance(position, dict) or not isinstance(position.get("after"), list):
            raise invalid(f"Invalid page token, parsed value={position}")
        after = tuple(position["after"])
        try:
            ordered = [row for row in ordered if sort_key(row) > after]
        except TypeError:
            raise invalid(f"Invalid page token, parsed value={position}") from None
    page = ordered[:max_results]
    if len(ordered) <= max_results or not page:
        return page, None
    token = base64.b64encode(json.dumps({"after": list(sort_key(page[-1]))}).encode()).decode()
    return page, token
