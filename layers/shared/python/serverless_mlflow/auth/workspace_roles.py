"""Basic auth with workspaces on (MLflow 3.17's auth app, ``filter_list_workspaces`` and
``_seed_default_workspace_roles``): a user lists the workspaces it holds a role in, and a new workspace gets two
ready-made roles an admin hands out (``admin``: MANAGE on the workspace; ``user``: USE on it, which lets its
members create experiments and registered models there and list what the workspace holds)."""

from __future__ import annotations

import logging
import os
from typing import TYPE_CHECKING, Any

from serverless_mlflow.auth import role_access, role_grants, roles
from serverless_mlflow.auth.checks import Identity, is_admin
from serverless_mlflow.auth.permissions import default_workspace_access
from serverless_mlflow.core.errors import MlflowError
from serverless_mlflow.request import workspace as request_workspace

if TYPE_CHECKING:
    from serverless_mlflow.http.api import Request

logger = logging.getLogger(__name__)

# MLflow's _DEFAULT_WORKSPACE_ROLES, in its order (the role and role-permission ids follow it).
DEFAULT_ROLES = (
    ("admin", "MANAGE", "Full MANAGE authority over the workspace."),
    (
        "user",
        "USE",
        "Read every resource in the workspace and create new experiments and registered models; the creator-as-owner "
        "mechanism grants MANAGE on what you create, with no write or delete access to resources owned by other users.",
    ),
)


def seeding_enabled() -> bool:
    """MLflow's ``MLFLOW_RBAC_SEED_DEFAULT_ROLES`` (on unless set false)."""
    return os.environ.get("MLFLOW_RBAC_SEED_DEFAULT_ROLES", "true").strip().lower() in ("true", "1")


def seed_roles(workspace: str) -> None:
    """After a workspace is created: its default roles. As MLflow, a failure is logged, never answered (the
    workspace exists by then), and a role left without its permission is removed."""
    if not seeding_enabled():
        return
    for name, permission, description in DEFAULT_ROLES:
        try:
            role = roles.create_role(name, workspace, description)
        except MlflowError as error:
            logger.error("Failed to create default role '%s' for workspace '%s': %s", name, workspace, error)
            continue
        try:
            role_grants.add_permission(role.id, roles.WORKSPACE, "*", permission)
        except MlflowError as error:
            logger.error("Failed to add permission to default role '%s' for workspace '%s': %s", name, workspace, error)
            roles.delete_role(role.id)


def filter_workspaces(_req: Request, identity: Identity, result: Any, _rerun: Any) -> Any:
    """list_workspaces: an admin sees every workspace, anyone else those it holds a role in (its own grants do
    not show a workspace). MLflow re-serialises the filtered answer, so an empty list is no field at all."""
    if not isinstance(result, dict) or is_admin(identity):
        return result
    allowed = role_access.member_workspaces(identity.username)
    if default_workspace_access():  # MLflow's grant_default_workspace_access lists ``default`` to everyone
        allowed.add(request_workspace.DEFAULT_WORKSPACE)
    kept = [workspace for workspace in result.get("workspaces") or [] if workspace.get("name") in allowed]
    return {"workspaces": kept} if kept else {}
