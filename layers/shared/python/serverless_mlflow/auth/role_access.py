"""What roles mean for authorization (MLflow's ``list_grants`` and workspace-admin queries over role items): the
grants of the user's roles in the request's workspace, folded with its own; who administers or is present in
which workspace."""

from __future__ import annotations

from collections.abc import Iterable

from serverless_mlflow.auth import roles, store
from serverless_mlflow.auth.permissions import MANAGE
from serverless_mlflow.storage import table

# --- what roles mean for authorization ------------------------------------------------------------------


def grants(role_ids: Iterable[str], kind: str, resource_ids: list[str]) -> tuple[list[str], dict[str, list[str]]]:
    """(the roles' workspace-wide grants, their permissions on each resource: its own id and "*").

    One BatchGetItem. The roles are the user's roles of the request's workspace; MLflow folds these with the
    user's own grants (they are one more role there).
    """
    ids = [int(role_id) for role_id in role_ids]
    keys = []
    for role_id in ids:
        keys.append(roles.ROLE_PERMISSION.key(role_id=role_id, resource_type=roles.WORKSPACE, resource_pattern="*"))
        for pattern in dict.fromkeys(["*", *resource_ids]):
            keys.append(roles.ROLE_PERMISSION.key(role_id=role_id, resource_type=kind, resource_pattern=pattern))
    items = table.batch_get(keys) if keys else []
    tier = [item["permission"] for item in items if item["resource_type"] == roles.WORKSPACE]
    found = [item for item in items if item["resource_type"] == kind]
    return tier, {rid: [item["permission"] for item in found if item["resource_pattern"] in ("*", rid)] for rid in resource_ids}


def access_with_tier(username: str, kind: str, resource_ids: list[str]) -> tuple[store.User | None, dict[str, list[str]], list[str]]:
    """``store.access`` with the grants of the user's roles of the request's workspace folded in (the grants
    matching each resource from every role the user holds there, as MLflow's ``list_grants`` loads them), and
    the workspace-wide grants of those roles. A workspace admin (MANAGE on the workspace) is not restrictable,
    so it has MANAGE on everything, DENY included."""
    user, own = store.access(username, kind, resource_ids)
    if user is None or not user.role_ids:
        return user, own, []
    tier, from_roles = grants(user.role_ids, kind, resource_ids)
    if MANAGE.name in tier:
        return user, {rid: [MANAGE.name] for rid in resource_ids}, tier
    return user, {rid: own[rid] + from_roles[rid] for rid in resource_ids}, tier


def access(username: str, kind: str, resource_ids: list[str]) -> tuple[store.User | None, dict[str, list[str]]]:
    user, held, _tier = access_with_tier(username, kind, resource_ids)
    return user, held


def workspace_tier(username: str) -> tuple[store.User | None, list[str]]:
    """The user and the workspace-wide grants of its roles in the request's workspace (MLflow's create gate
    reads the ``(workspace, "*")`` slot only)."""
    user = store.get_user_or_none(username)
    if user is None or not user.role_ids:
        return user, []
    keys = [
        roles.ROLE_PERMISSION.key(role_id=int(role_id), resource_type=roles.WORKSPACE, resource_pattern="*") for role_id in user.role_ids
    ]
    return user, [item["permission"] for item in table.batch_get(keys)]


def admin_workspaces(username: str) -> set[str]:
    """The workspaces where the user holds a role with MANAGE on the workspace (MLflow's workspace admin)."""
    by_role = {int(item["role_id"]): item["workspace"] for item in roles.assignments_of(username)}
    keys = [roles.ROLE_PERMISSION.key(role_id=role_id, resource_type=roles.WORKSPACE, resource_pattern="*") for role_id in by_role]
    items = table.batch_get(keys) if keys else []
    return {by_role[int(item["role_id"])] for item in items if item["permission"] == MANAGE.name}


def member_workspaces(username: str) -> set[str]:
    """The workspaces where the user holds a role (MLflow's ``list_accessible_workspace_names``: any role
    assignment makes its workspace visible; the user's own grants do not)."""
    return {item["workspace"] for item in roles.assignments_of(username)}


def present_workspaces(username: str) -> set[str]:
    """The workspaces where the user holds any role; its own grants count as a role of the workspace they were
    made in (MLflow's synthetic per-user role)."""
    return member_workspaces(username) | store.grant_workspaces(username)
