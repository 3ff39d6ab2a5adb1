"""The checks a rule can name, and the identity they judge (MLflow's before-request validators, generalised)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from serverless_mlflow.auth import role_access, role_grants, roles, store
from serverless_mlflow.auth.permissions import (
    EXPERIMENT,
    MANAGE_ACTION,
    NO_PERMISSIONS,
    PROMPT,
    REGISTERED_MODEL,
    Permission,
    default_permission,
    effective,
    fold,
    inherits_default_workspace,
)
from serverless_mlflow.auth.resources import Locator, Resource, model_kind, param
from serverless_mlflow.core.errors import invalid
from serverless_mlflow.request import workspace as request_workspace

if TYPE_CHECKING:
    from serverless_mlflow.http.api import Request


class Unauthenticated(Exception):
    """No valid credentials (or the user was deleted since the authorizer's answer was cached): 401."""


@dataclass(frozen=True)
class Identity:
    username: str
    is_admin: bool  # as the authorizer saw it; checks that depend on it re-read the user item
    # A sibling function's own write on behalf of this user (``GATEWAY_USAGE_TRACE``): set only in the context a
    # function puts in its direct invocation of another; the HTTP API's authorizer never sets it.
    service: str | None = None


# The gateway runtime exporting a call's usage trace to the traces function: MLflow's gateway writes that trace
# through its own store, whatever the caller's rights on the endpoint's experiment (an admin's configuration).
GATEWAY_USAGE_TRACE = "gateway-usage-trace"


def or_gateway_usage_trace(check: Check) -> Check:
    """``check``, except for the gateway's own usage-trace export, which passes."""

    def checked(req: Request, identity: Identity) -> bool:
        return identity.service == GATEWAY_USAGE_TRACE or check(req, identity)

    return checked


def permissions_on(identity: Identity, resources: list[Resource], listing: bool = False) -> list[Permission]:
    """The permission governing each resource, from one BatchGetItem (user + grants). ``listing``: a search's
    rows, which MLflow's read predicate lets fall back to the workspace-wide grant at any level (a point read
    takes it at MANAGE only)."""
    by_kind: dict[str, list[str]] = {}
    for kind, resource_id in resources:
        by_kind.setdefault(kind, []).append(resource_id)
    out: dict[Resource, Permission] = {}
    for kind, ids in by_kind.items():
        user, grants, tier = role_access.access_with_tier(identity.username, kind, ids)
        if user is None:
            raise Unauthenticated()
        for resource_id in ids:
            out[(kind, resource_id)] = effective(user.is_admin, grants[resource_id], tier if listing else None)
        if not listing and not user.is_admin and request_workspace.enabled():
            for resource_id in ids:
                # A DENY stays one: a create names a resource that does not exist yet, and its veto must hold.
                if not out[(kind, resource_id)].denied and not _in_request_workspace(kind, resource_id):
                    out[(kind, resource_id)] = NO_PERMISSIONS
    return [out[resource] for resource in resources]


def _in_request_workspace(kind: str, resource_id: str) -> bool:
    """MLflow resolves grants in the resource's workspace, read through the request's workspace: a resource this
    workspace does not hold (another's, or none at all) gives no permission, whatever the grants say (so a
    non-admin is refused, never told whether it exists)."""
    from serverless_mlflow.store import experiments

    if resource_id == "*":
        return True
    if kind == EXPERIMENT:
        return experiments.in_request_workspace(resource_id)
    if kind in (REGISTERED_MODEL, PROMPT):
        return model_kind(resource_id) is not None
    return True


def create_in_workspace(_req: Request, identity: Identity) -> bool:
    """MLflow's ``_can_create_in_workspace``: with workspaces on, creating an experiment or registered model
    needs a workspace-wide grant that can use (a role's USE or MANAGE on the request's workspace)."""
    if not request_workspace.enabled():
        return True
    user, tier = role_access.workspace_tier(identity.username)
    if user is None:
        raise Unauthenticated()
    if user.is_admin:
        return True
    granted = fold(tier)
    if granted is None and inherits_default_workspace():
        return default_permission().can_use
    return granted is not None and granted.can_use


def all_of(*checks: Check) -> Check:
    def check(req: Request, identity: Identity) -> bool:
        return all(one(req, identity) for one in checks)

    check.__name__ = "_and_".join(one.__name__ for one in checks)
    return check


def is_admin(identity: Identity) -> bool:
    user = store.get_user_or_none(identity.username)
    if user is None:
        raise Unauthenticated()
    return user.is_admin


Check = Callable[["Request", Identity], bool]


def need(locate: Locator, action: str) -> Check:
    """``action`` on every resource the request names; an unlocatable resource denies."""

    def check(req: Request, identity: Identity) -> bool:
        resources = locate(req)
        if resources is None:
            return is_admin(identity)
        return all(p.allows(action) for p in permissions_on(identity, resources))

    check.__name__ = f"need_{action}"
    return check


def needs(*requirements: tuple[Locator, str]) -> Check:
    """Each ``(locator, action)`` on every resource its locator names, judged from one BatchGetItem: the
    resource a request is addressed to and the ones it links to (``auth/links.py``). A locator that cannot
    find what the request names denies (admins pass)."""

    def check(req: Request, identity: Identity) -> bool:
        wanted: list[tuple[Resource, str]] = []
        for locate, action in requirements:
            resources = locate(req)
            if resources is None:
                return is_admin(identity)
            wanted += [(resource, action) for resource in resources]
        if not wanted:
            return True
        permissions = permissions_on(identity, [resource for resource, _ in wanted])
        return all(permission.allows(action) for permission, (_, action) in zip(permissions, wanted, strict=True))

    check.__name__ = "needs_" + "_".join(action for _, action in requirements)
    return check


def admin(_req: Request, identity: Identity) -> bool:
    return is_admin(identity)


def authenticated(_req: Request, _identity: Identity) -> bool:
    return True


def self_or_admin(field: str = "username") -> Check:
    """MLflow's ``username_is_sender`` (admins pass every validator)."""

    def check(req: Request, identity: Identity) -> bool:
        return param(req, field) == identity.username or is_admin(identity)

    return check


def manage_grant_target(req: Request, identity: Identity) -> bool:
    """grant/revoke: MANAGE on the resource; a wildcard grant is for admins and the workspace's admins, as the
    role API that writes the same rows (``validate_can_manage_resource``)."""
    kind = store.check_kind(param(req, "resource_type"))
    resource_id = str(param(req, "resource_id"))
    if resource_id == "*":
        return is_admin(identity) or request_workspace.current() in role_access.admin_workspaces(identity.username)
    return permissions_on(identity, [(kind, resource_id)])[0].allows(MANAGE_ACTION)


def read_permission_of(req: Request, identity: Identity) -> bool:
    """get_user_permission: admin, the user asking about themself, or an admin of the resource's workspace
    (``validate_can_get_user_permission``)."""
    store.check_kind(param(req, "resource_type"))
    if is_admin(identity):
        return True
    target = param(req, "username")
    if target == identity.username:
        return True
    if store.get_user_or_none(target) is None:
        return False
    return request_workspace.current() in role_access.admin_workspaces(identity.username)


# --- roles (validate_can_manage_roles and its siblings) ---------------------------------------------


def int_param(name: str, raw: Any) -> int:
    """MLflow's ``_coerce_int_param``: an integer, or a string of one."""
    try:
        return int(raw)
    except (TypeError, ValueError, OverflowError):
        raise invalid(f"Parameter '{name}' must be an integer. Got: {raw!r}") from None


def _request_params(req: Request) -> dict[str, Any]:
    if req.method == "GET" or (req.method == "DELETE" and not req.raw_body):
        return {key: values[0] for key, values in req.query.items()}
    return dict(req.json)


def _role_workspace(req: Request) -> str | None:
    """The workspace a role request targets: its role's, its role permission's role's, or the one it names;
    None when the role or role permission does not exist (a non-admin is then denied, not told)."""
    params = _request_params(req)
    if "role_id" in params:
        role = roles.role_or_none(int_param("role_id", params["role_id"]))
        return role.workspace if role is not None else None
    if "role_permission_id" in params:
        role = role_grants.role_of_permission(int_param("role_permission_id", params["role_permission_id"]))
        return role.workspace if role is not None else None
    if "workspace" in params:
        workspace = params["workspace"]
        if not isinstance(workspace, str) or not workspace.strip():
            raise invalid("Parameter 'workspace' must be a non-empty string.")
        return workspace
    raise invalid("Request must include one of: role_id, role_permission_id, workspace.")


def manage_roles(req: Request, identity: Identity) -> bool:
    if is_admin(identity):
        return True
    workspace = _role_workspace(req)
    return workspace is not None and workspace in role_access.admin_workspaces(identity.username)


def view_roles(req: Request, identity: Identity) -> bool:
    if is_admin(identity):
        return True
    workspace = _role_workspace(req)
    return workspace is not None and workspace in role_access.present_workspaces(identity.username)


def list_roles(req: Request, identity: Identity) -> bool:
    """Unscoped: admins only; scoped: a role in every workspace asked for."""
    if is_admin(identity):
        return True
    requested = {w.strip() for w in req.query.get("workspace", []) if w.strip()}
    return bool(requested) and requested <= role_access.present_workspaces(identity.username)


def view_user_roles(req: Request, identity: Identity) -> bool:
    """Admins, the user themself, or an admin of a workspace where the user holds a role."""
    if is_admin(identity):
        return True
    target = param(req, "username")
    if target == identity.username:
        return True
    if not isinstance(target, str) or store.get_user_or_none(target) is None:
        return False
    return bool(role_access.admin_workspaces(identity.username) & role_access.present_workspaces(target))


def create_user(_req: Request, identity: Identity) -> bool:
    """Admins, and workspace admins seeding an account for a role (``validate_can_create_user``)."""
    return is_admin(identity) or bool(role_access.admin_workspaces(identity.username))
