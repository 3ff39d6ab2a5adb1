"""The role operations of MLflow's basic-auth app (mlflow/server/auth/__init__.py's RBAC handlers).

Who may call each is declared in ``serverless_mlflow.auth.rules`` (admins, the role's workspace admins, or its
members for reads); ``caller`` is the authenticated username.
"""

from __future__ import annotations

from typing import Any

from serverless_mlflow.auth import role_access, role_grants, roles, store
from serverless_mlflow.auth.checks import int_param
from serverless_mlflow.auth.resources import param
from serverless_mlflow.core.errors import invalid
from serverless_mlflow.http.api import Request


def _role_id(req: Request, name: str = "role_id") -> int:
    return int_param(name, param(req, name))


def _visible(caller: str, target: str, listed: list[roles.Role]) -> list[roles.Role]:
    """What the caller may see of another user's roles: all (admin, self), else those of the workspaces it
    administers."""
    if caller == target or store.get_user(caller).is_admin:
        return listed
    workspaces = role_access.admin_workspaces(caller)
    return [role for role in listed if role.workspace in workspaces]


def create_role(req: Request, _caller: str) -> dict[str, Any]:
    name, workspace = param(req, "name"), param(req, "workspace")
    if not isinstance(name, str) or not name.strip():
        raise invalid("Role name cannot be empty.")
    if not isinstance(workspace, str) or not workspace.strip():
        raise invalid("Workspace cannot be empty.")
    description = req.json.get("description")
    if description is not None and not isinstance(description, str):
        raise invalid("Role description must be a string or null.")
    return {"role": roles.create_role(name, workspace, description).to_json()}


def get_role(req: Request, _caller: str) -> dict[str, Any]:
    return {"role": roles.get_role(_role_id(req)).to_json()}


def list_roles(req: Request, _caller: str) -> dict[str, Any]:
    workspaces = req.query.get("workspace", [])
    if any(not workspace.strip() for workspace in workspaces):
        raise invalid("Parameter 'workspace' must be a non-empty string when provided.")
    return {"roles": [role.to_json() for role in roles.list_roles(workspaces or None)]}


def update_role(req: Request, _caller: str) -> dict[str, Any]:
    role_id = _role_id(req)
    name, description = req.json.get("name"), req.json.get("description")
    if name is None and description is None:
        raise invalid("At least one of 'name' or 'description' must be provided to update a role.")
    if name is not None and (not isinstance(name, str) or not name.strip()):
        raise invalid("Role name cannot be empty.")
    if description is not None and not isinstance(description, str):
        raise invalid("Role description must be a string.")
    return {"role": roles.update_role(role_id, name, description).to_json()}


def delete_role(req: Request, _caller: str) -> dict[str, Any]:
    roles.delete_role(_role_id(req))
    return {}


def add_role_permission(req: Request, _caller: str) -> dict[str, Any]:
    role_id = _role_id(req)
    kind, pattern, permission = param(req, "resource_type"), param(req, "resource_pattern"), param(req, "permission")
    return {"role_permission": role_grants.add_permission(role_id, kind, pattern, permission).to_json()}


def remove_role_permission(req: Request, _caller: str) -> dict[str, Any]:
    role_grants.remove_permission(_role_id(req, "role_permission_id"))
    return {}


def list_role_permissions(req: Request, _caller: str) -> dict[str, Any]:
    return {"role_permissions": [p.to_json() for p in roles.get_role(_role_id(req)).permissions]}


def update_role_permission(req: Request, _caller: str) -> dict[str, Any]:
    permission_id = _role_id(req, "role_permission_id")
    return {"role_permission": role_grants.update_permission(permission_id, param(req, "permission")).to_json()}


def assign_role(req: Request, _caller: str) -> dict[str, Any]:
    username, role_id = param(req, "username"), _role_id(req)
    return {"assignment": roles.assign(username, role_id).to_json()}


def unassign_role(req: Request, _caller: str) -> dict[str, Any]:
    username, role_id = param(req, "username"), _role_id(req)
    roles.unassign(username, role_id)
    return {}


def _own_roles(user: store.User) -> list[roles.Role]:
    """The user's direct grants as MLflow holds them: one hidden ``__user_<id>__`` role per workspace (the UI's
    Permissions view lists them as "Direct"). Not stored roles here, so they carry id 0 (no roles/get answers it)."""
    by_workspace: dict[str, list[roles.RolePermission]] = {}
    for grant in store.user_grants(user.username):
        permission = roles.RolePermission(0, 0, grant["resource_type"], grant["resource_pattern"], grant["permission"])
        by_workspace.setdefault(grant["workspace"], []).append(permission)
    return [roles.Role(0, f"{roles.RESERVED_PREFIX}{user.id}__", workspace, None, held) for workspace, held in by_workspace.items()]


def list_user_roles(req: Request, caller: str) -> dict[str, Any]:
    username = param(req, "username")
    held = _own_roles(store.get_user(username)) + roles.user_roles(username)
    return {"roles": [role.to_json() for role in _visible(caller, username, held)]}


def list_role_users(req: Request, _caller: str) -> dict[str, Any]:
    return {"assignments": [member.to_json() for member in roles.role_members(_role_id(req))]}
