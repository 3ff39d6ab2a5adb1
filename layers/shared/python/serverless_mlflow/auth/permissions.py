"""MLflow's permission levels and how grants resolve (mlflow/server/auth/permissions.py, requirements.py).

With workspaces off MLflow resolves a user's permission on a resource as:
admin -> MANAGE; else the grants matching the resource (its own id or ``"*"``), DENY winning, otherwise the
highest, floored by ``default_permission``; no grant at all -> ``default_permission``. Sub-resources (runs,
logged models, model versions) have no grants of their own here, so their checks fall back to the parent's,
exactly MLflow's ``fallback_if_no_grant`` when no sub-resource grant exists. With workspaces on, the grants are
those of the request's workspace and no grant at all is no permission (``absent_permission``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass


@dataclass(frozen=True)
class Permission:
    name: str
    can_read: bool
    can_use: bool
    can_update: bool
    can_delete: bool
    can_manage: bool

    @property
    def denied(self) -> bool:
        return self.name == "DENY"

    def allows(self, action: str) -> bool:
        if action == NOT_DENIED:
            return not self.denied
        return bool(getattr(self, f"can_{action}"))


READ = Permission("READ", True, False, False, False, False)
USE = Permission("USE", True, True, False, False, False)
EDIT = Permission("EDIT", True, True, True, False, False)
MANAGE = Permission("MANAGE", True, True, True, True, True)
DENY = Permission("DENY", False, False, False, False, False)
NO_PERMISSIONS = Permission("NO_PERMISSIONS", False, False, False, False, False)

ALL = {p.name: p for p in (READ, USE, EDIT, MANAGE, NO_PERMISSIONS, DENY)}
PRIORITY = {"DENY": -1, "NO_PERMISSIONS": 0, "READ": 1, "USE": 2, "EDIT": 3, "MANAGE": 4}
# What a per-resource grant may carry (MLflow's RESOURCE_GRANTABLE_PERMISSIONS).
GRANTABLE = ("DENY", "EDIT", "MANAGE", "READ", "USE")

# Actions an operation requires; "not_denied" is MLflow's ACTION_NOT_DENIED (creating inside a container).
READ_ACTION, USE_ACTION, UPDATE, DELETE, MANAGE_ACTION, NOT_DENIED = "read", "use", "update", "delete", "manage", "not_denied"

# Resource kinds that take per-user grants (MLflow's resource_type values served here).
EXPERIMENT, REGISTERED_MODEL, PROMPT = "experiment", "registered_model", "prompt"
GATEWAY_ENDPOINT = "gateway_endpoint"
KINDS = (EXPERIMENT, REGISTERED_MODEL, PROMPT, GATEWAY_ENDPOINT)


def default_permission() -> Permission:
    """MLflow's ``default_permission`` (basic_auth.ini ships READ); ``AUTH_DEFAULT_PERMISSION`` overrides."""
    return ALL.get(os.environ.get("AUTH_DEFAULT_PERMISSION", "READ").upper(), READ)


def fold(grants: list[str]) -> Permission | None:
    """Grants matching one resource -> one permission (DENY wins, else the highest); None when there are none."""
    if not grants:
        return None
    if "DENY" in grants:
        return DENY
    return ALL[max(grants, key=lambda name: PRIORITY.get(name, 0))]


def default_workspace_access() -> bool:
    """MLflow's ``grant_default_workspace_access`` (``AUTH_GRANT_DEFAULT_WORKSPACE_ACCESS``; off, as MLflow ships it)."""
    return os.environ.get("AUTH_GRANT_DEFAULT_WORKSPACE_ACCESS", "false").strip().lower() in ("true", "1")


def inherits_default_workspace() -> bool:
    """MLflow's ``_user_inherits_default_workspace_grant``: the request is in ``default`` and the operator opted
    into ``grant_default_workspace_access``, so a user without a grant there holds ``default_permission``."""
    from serverless_mlflow.request import workspace as request_workspace

    return default_workspace_access() and request_workspace.current() == request_workspace.DEFAULT_WORKSPACE


def absent_permission() -> Permission:
    """What no grant at all means (MLflow's ``_absent_permission``): ``default_permission`` with workspaces off;
    with them on, no permission (a user sees only what a grant or role of the resource's workspace gives it),
    unless the request is in ``default`` and the operator opted into ``grant_default_workspace_access``."""
    from serverless_mlflow.request import workspace as request_workspace

    if not request_workspace.enabled() or inherits_default_workspace():
        return default_permission()
    return NO_PERMISSIONS


def effective(is_admin: bool, grants: list[str], fallback: list[str] | None = None) -> Permission:
    """The permission that governs a request (admins are not restrictable). ``fallback``: the grants consulted
    only when none matches the resource itself (a listing's workspace tier)."""
    if is_admin:
        return MANAGE
    floor = default_permission()
    granted = fold(grants)
    if granted is None and fallback:
        granted = fold(fallback)
    if granted is None:
        return absent_permission()
    if granted.name in ("DENY", "NO_PERMISSIONS"):
        return granted
    return granted if PRIORITY[granted.name] >= PRIORITY[floor.name] else floor
