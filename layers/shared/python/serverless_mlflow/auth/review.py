"""Who may use label schemas, review queues and issues (MLflow's auth app, ``validate_can_*_review_queue``,
``validate_can_*_label_schema``, ``validate_can_*_issue``), at the experiment permissions this stack grants.

Queues add two facts to the experiment permission: membership (the queue's assigned users) and ownership
(``created_by``, compared case-insensitively). Reading a queue takes MANAGE, membership, or EDIT plus
ownership; reviewing through it EDIT plus membership; changing it MANAGE or EDIT plus ownership (reassigning
the owner MANAGE only); pruning or deleting it MANAGE, or EDIT plus ownership of a CUSTOM queue.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from serverless_mlflow.auth.checks import Check, Identity, is_admin, permissions_on
from serverless_mlflow.auth.permissions import EXPERIMENT, NO_PERMISSIONS, Permission
from serverless_mlflow.auth.resources import Resource, optional_param, param

if TYPE_CHECKING:
    from serverless_mlflow.http.api import Request


def _experiment_permission(identity: Identity, experiment_id: str | None) -> Permission:
    if experiment_id is None:
        return NO_PERMISSIONS
    return permissions_on(identity, [(EXPERIMENT, experiment_id)])[0]


def label_schema_experiment(req: Request) -> list[Resource]:
    """The question's experiment; a missing question answers 404, as MLflow's validators do: they look it up
    with the store's ``get_label_schema`` (``_get_permission_from_label_schema_id``), whose not-found escapes."""
    from serverless_mlflow.core.errors import not_found
    from serverless_mlflow.store import label_schemas, review

    schema_id = param(req, "schema_id")
    experiment_id = review.experiment_of(schema_id, label_schemas.KIND)
    if experiment_id is None:
        raise not_found(f"Label schema with id '{schema_id}' not found.")
    return [(EXPERIMENT, experiment_id)]


def issue_experiment(req: Request) -> list[Resource] | None:
    from serverless_mlflow.store import issues, review

    experiment_id = review.experiment_of(req.path_params.get("issue_id", ""), issues.KIND)
    return [(EXPERIMENT, experiment_id)] if experiment_id else None


def body_experiment(req: Request) -> list[Resource] | None:
    """``experiment_id`` of a JSON body (CreateIssue, SearchIssues); naming none denies a non-admin."""
    experiment_id = req.json.get("experiment_id")
    return [(EXPERIMENT, str(experiment_id))] if isinstance(experiment_id, (str, int)) and experiment_id != "" else None


def _queue(req: Request) -> dict[str, Any]:
    """The request's queue. A missing one answers 404 (admins included): MLflow's queue validators read it with
    the store's ``get_review_queue``, whose RESOURCE_DOES_NOT_EXIST escapes the validator."""
    from serverless_mlflow.core.errors import not_found
    from serverless_mlflow.store import review_queues

    queue_id = param(req, "queue_id")
    queue = review_queues.queue_item(queue_id) if isinstance(queue_id, str) and queue_id else None
    if queue is None:
        raise not_found(f"Review queue with id '{queue_id}' not found.")
    return queue


def _member(queue: dict[str, Any], identity: Identity) -> bool:
    return identity.username.strip().lower() in (queue.get("users") or [])


def _owner(queue: dict[str, Any], identity: Identity) -> bool:
    owner = (queue.get("created_by") or "").strip().lower()
    return bool(owner) and owner == identity.username.strip().lower()


def _queue_check(decide: Any) -> Check:
    """A check on the request's queue: ``decide(queue, permission, identity)``; an unknown queue answers 404."""

    def check(req: Request, identity: Identity) -> bool:
        queue = _queue(req)
        permission = _experiment_permission(identity, str(queue["experiment_id"]))
        return permission.can_read and bool(decide(queue, permission, identity))

    return check


view_queue = _queue_check(lambda q, p, i: p.can_manage or _member(q, i) or (p.can_update and _owner(q, i)))
review_item = _queue_check(lambda q, p, i: p.can_update and _member(q, i))
add_items = _queue_check(lambda q, p, i: p.can_update)
prune_queue = _queue_check(lambda q, p, i: p.can_manage or (p.can_update and _owner(q, i) and q.get("queue_type") == "CUSTOM"))


def update_queue(req: Request, identity: Identity) -> bool:
    queue = _queue(req)
    permission = _experiment_permission(identity, str(queue["experiment_id"]))
    if not permission.can_read:
        return False
    if req.json.get("new_owner") is not None:
        return permission.can_manage
    return permission.can_manage or (permission.can_update and _owner(queue, identity))


def view_queue_by_name(req: Request, identity: Identity) -> bool:
    from serverless_mlflow.store import review_queues

    if is_admin(identity):
        return True  # admins pass every check (MLflow's auth app lets them through before any validator)
    experiment_id = optional_param(req, "experiment_id")
    permission = _experiment_permission(identity, str(experiment_id) if experiment_id not in (None, "") else None)
    if not permission.can_read:
        return False
    if permission.can_manage:
        return True
    # MLflow's validator reads the queue with the store's get_review_queue_by_name: a missing one answers 404.
    queue = review_queues.get_review_queue_by_name(experiment_id, str(param(req, "name")))
    return _member(queue, identity) or (permission.can_update and _owner(queue, identity))


def visible_queues(req: Request, identity: Identity, result: Any, _run: Any) -> Any:
    """ListReviewQueues for a caller without EDIT: only the queues they are assigned to (admins see all)."""
    if not isinstance(result, dict) or is_admin(identity):
        return result
    permission = _experiment_permission(identity, str(optional_param(req, "experiment_id")))
    if permission.can_read and permission.can_update:
        return result
    queues = [q for q in result.get("review_queues", []) if permission.can_read and _member(q, identity)]
    out = {k: v for k, v in result.items() if k != "review_queues"}
    if queues:
        out = {"review_queues": queues, **out}
    return out
