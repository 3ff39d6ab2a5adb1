"""The user and permission operations of MLflow's basic-auth app (``caller`` is the authenticated username)."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.event_handler import Response

from serverless_mlflow.auth import role_access, roles, store
from serverless_mlflow.auth.permissions import PROMPT, effective
from serverless_mlflow.auth.resources import param
from serverless_mlflow.core.errors import MlflowError, invalid
from serverless_mlflow.http.api import Request


def _text(status: int, body: str) -> Response:
    return Response(status_code=status, content_type="text/html; charset=utf-8", body=body)


def create_user(req: Request, _caller: str) -> Any:
    if (req.headers.get("content-type") or "").split(";")[0].strip() != "application/json":
        return _text(400, "Invalid content type. Must be application/json")
    username, password = param(req, "username"), param(req, "password")
    if not username or not password:
        return _text(400, "Username and password cannot be empty.")
    return {"user": store.create_user(username, password).to_json()}


def get_user(req: Request, _caller: str) -> dict[str, Any]:
    return {"user": store.get_user(param(req, "username")).to_json()}


def get_current_user(_req: Request, caller: str) -> dict[str, Any]:
    user = store.get_user(caller)
    return {"user": user.to_json(), "is_basic_auth": True}


def list_users(_req: Request, caller: str) -> dict[str, Any]:
    """Every user with its roles: all of them for an admin and for the caller's own row, else those of the
    workspaces the caller administers (MLflow's list_users)."""
    everything = roles.list_roles()
    admin_workspaces = None if store.get_user(caller).is_admin else role_access.admin_workspaces(caller)
    out = []
    for user in store.list_users():
        held = [role for role in everything if any(member.username == user.username for member in role.members)]
        if admin_workspaces is not None and user.username != caller:
            held = [role for role in held if role.workspace in admin_workspaces]
        out.append({**user.to_json(), "roles": [role.to_json() for role in held]})
    return {"users": out}


def update_user_password(req: Request, caller: str) -> dict[str, Any]:
    username, password = param(req, "username"), param(req, "password")
    if caller == username:
        # Self-service re-asserts the current password, so a hijacked browser session cannot rotate it.
        current = req.json.get("current_password")
        if not current:
            raise invalid("Current password is required when changing your own password.")
        if store.authenticate(username, current) is None:
            raise invalid("Current password does not match.")
        if password == current:
            raise invalid("New password must differ from the current password.")
    store.update_password(username, password)
    return {}


def update_user_admin(req: Request, _caller: str) -> dict[str, Any]:
    username, is_admin = param(req, "username"), param(req, "is_admin")
    if isinstance(is_admin, str) and is_admin.lower() in ("true", "false"):
        is_admin = is_admin.lower() == "true"
    if not isinstance(is_admin, bool):
        raise invalid(f"Invalid value for 'is_admin': {is_admin!r}; expected a boolean.")
    store.update_admin(username, is_admin)
    return {}


def delete_user(req: Request, caller: str) -> dict[str, Any]:
    username = param(req, "username")
    if username == caller:
        raise MlflowError("Users cannot delete their own account. Ask another admin to delete this user instead.", "BAD_REQUEST")
    store.delete_user(username)
    return {}


def _grant_target(req: Request) -> tuple[str, str, str]:
    username, kind, resource_id = param(req, "username"), param(req, "resource_type"), param(req, "resource_id")
    store.get_user(username)
    return username, store.check_kind(kind), str(resource_id)


def grant_user_permission(req: Request, _caller: str) -> dict[str, Any]:
    username, kind, resource_id = _grant_target(req)
    permission = store.check_grantable(param(req, "permission"), kind)
    store.create_grant(username, kind, resource_id, permission)
    return {}


def revoke_user_permission(req: Request, _caller: str) -> dict[str, Any]:
    username, kind, resource_id = _grant_target(req)
    store.delete_grant(username, kind, resource_id)
    return {}


def get_user_permission(req: Request, _caller: str) -> dict[str, Any]:
    username, kind, resource_id = _grant_target(req)
    if kind == PROMPT and resource_id != "*":
        # MLflow's resolver has no per-prompt lookup for this API (only the wildcard reaches it).
        raise invalid(f"resource_type '{kind}' is not supported by the per-user permission convenience APIs.")
    # MLflow resolves this from grants and default_permission only: the is_admin flag does not enter it.
    _user, grants = role_access.access(username, kind, [resource_id])
    permission = effective(False, grants[resource_id])
    return {"allowed": permission.can_use, "permission": permission.name}


def _permission_rows(username: str) -> tuple[bool, list[dict[str, Any]]]:
    """Every grant the user holds: its own (MLflow's synthetic ``__user_<id>__`` role), then its roles'."""
    user = store.get_user(username)
    own = {"role_id": user.id, "role_name": f"__user_{user.id}__", "workspace": roles.DEFAULT_WORKSPACE}
    rows = [{**own, **row} for row in store.user_grants(username)]
    for role in roles.user_roles(username):
        held = {"role_id": role.id, "role_name": role.name, "workspace": role.workspace}
        rows += [
            {**held, "resource_type": p.resource_type, "resource_pattern": p.resource_pattern, "permission": p.permission}
            for p in role.permissions
        ]
    return user.is_admin, rows


def list_current_user_permissions(_req: Request, caller: str) -> dict[str, Any]:
    is_admin, rows = _permission_rows(caller)
    return {"is_admin": is_admin, "permissions": rows}


def list_user_permissions(req: Request, caller: str) -> dict[str, Any]:
    username = param(req, "username")
    is_admin, rows = _permission_rows(username)
    if username != caller and not store.get_user(caller).is_admin:
        # A workspace admin sees the rows of the workspaces it administers.
        workspaces = role_access.admin_workspaces(caller)
        rows = [row for row in rows if row["workspace"] in workspaces]
    return {"is_admin": is_admin, "permissions": rows}
