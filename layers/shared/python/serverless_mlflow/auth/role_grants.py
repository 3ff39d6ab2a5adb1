"""A role's permissions (mlflow/server/auth/sqlalchemy_store.py's role permission methods) and MLflow's checks of
a grant (resource type, pattern, permission per type).

A permission is an item of the role's partition keyed by resource type and pattern (a pattern is granted once
per role); a reference item by permission id finds it for an update or removal, which MLflow's API addresses by
id. The roles themselves are in ``roles``.
"""

from __future__ import annotations

from typing import Any

from serverless_mlflow.auth import store
from serverless_mlflow.auth.permissions import ALL, GRANTABLE, KINDS
from serverless_mlflow.auth.roles import (
    ROLE,
    ROLE_PERMISSION,
    ROLE_PERMISSION_REF,
    WORKSPACE,
    Role,
    RolePermission,
    _not_found,
    _permission_from,
    get_role,
    role_or_none,
)
from serverless_mlflow.core.errors import already_exists, invalid, not_found
from serverless_mlflow.storage import table

# MLflow's permissions.WORKSPACE_GRANTABLE_PERMISSIONS.
WORKSPACE_GRANTABLE = ("MANAGE", "USE")
# The resource types whose grants this server enforces. MLflow also takes sub-resource and gateway types; a
# grant this server would store and then ignore (a DENY that protects nothing) is refused instead.
ROLE_RESOURCE_TYPES = tuple(sorted((*KINDS, WORKSPACE)))


def check_grant(resource_type: Any, resource_pattern: Any, permission: Any) -> None:
    """MLflow's _validate_permission_for_resource_type then _validate_resource_pattern, on the types served."""
    if not isinstance(permission, str) or permission not in ALL:
        raise invalid(f"Invalid permission '{permission}'. Valid permissions are: {tuple(ALL)}")
    check_resource_type(resource_type)
    check_permission_for(permission, resource_type)
    if not isinstance(resource_pattern, str) or resource_pattern == "":
        raise invalid(f"Invalid resource_pattern {resource_pattern!r}: a resource id or '*' is required.")
    if resource_type == WORKSPACE and resource_pattern != "*":
        raise invalid(
            f"Invalid resource_pattern '{resource_pattern}' for resource_type='{WORKSPACE}'. This resource type supports "
            "only wildcard ('*') grants."
        )


def check_resource_type(resource_type: Any) -> None:
    if not isinstance(resource_type, str) or resource_type not in ROLE_RESOURCE_TYPES:
        raise invalid(f"Invalid resource type '{resource_type}'. Valid resource types are: {ROLE_RESOURCE_TYPES}")


def check_permission_for(permission: Any, resource_type: str) -> None:
    if not isinstance(permission, str) or permission not in ALL:
        raise invalid(f"Invalid permission '{permission}'. Valid permissions are: {tuple(ALL)}")
    if resource_type == WORKSPACE:
        if permission not in WORKSPACE_GRANTABLE:
            raise invalid(
                f"Invalid permission '{permission}' for resource_type='{WORKSPACE}'. Workspace-wide grants accept only: "
                f"{WORKSPACE_GRANTABLE}."
            )
    elif permission not in GRANTABLE:
        raise invalid(
            f"Invalid permission '{permission}' for resource_type='{resource_type}'. Resource-level grants accept only: {GRANTABLE}."
        )


def add_permission(role_id: int, resource_type: str, resource_pattern: str, permission: str) -> RolePermission:
    check_grant(resource_type, resource_pattern, permission)
    get_role(role_id)
    permission_id = store.allocate_id("seq#role_permission")
    fields = {"role_permission_id": permission_id, "role_id": role_id, "resource_type": resource_type, "resource_pattern": resource_pattern}
    try:
        table.transact(
            [
                table.put_op(
                    ROLE_PERMISSION.item(
                        {**fields, "permission": permission},
                        role_id=role_id,
                        resource_type=resource_type,
                        resource_pattern=resource_pattern,
                    ),
                    condition="attribute_not_exists(pk)",
                ),
                table.put_op(ROLE_PERMISSION_REF.item(fields, role_permission_id=permission_id)),
                table.check_op(ROLE.key(role_id=role_id), "attribute_exists(pk)"),
            ]
        )
    except table.ConditionFailed:
        if role_or_none(role_id) is None:
            raise _not_found(role_id) from None
        raise already_exists(
            f"Role permission (role_id={role_id}, resource_type={resource_type}, resource_pattern={resource_pattern}) already exists."
        ) from None
    return RolePermission(permission_id, role_id, resource_type, resource_pattern, permission)


def _permission_key(ref: dict[str, Any]) -> dict[str, str]:
    return ROLE_PERMISSION.key(role_id=int(ref["role_id"]), resource_type=ref["resource_type"], resource_pattern=ref["resource_pattern"])


def _ref(permission_id: int) -> dict[str, Any]:
    ref = table.get(ROLE_PERMISSION_REF.key(role_permission_id=permission_id))
    if ref is None:
        raise not_found(f"Role permission with id={permission_id} not found")
    return ref


def role_of_permission(permission_id: int) -> Role | None:
    """The role a role permission belongs to (None when either is gone)."""
    ref = table.get(ROLE_PERMISSION_REF.key(role_permission_id=permission_id))
    return role_or_none(int(ref["role_id"])) if ref is not None else None


def remove_permission(permission_id: int) -> None:
    ref = _ref(permission_id)
    table.transact([table.delete_op(_permission_key(ref)), table.delete_op(ROLE_PERMISSION_REF.key(role_permission_id=permission_id))])


def update_permission(permission_id: int, permission: Any) -> RolePermission:
    ref = _ref(permission_id)
    check_permission_for(permission, ref["resource_type"])
    try:
        updated = table.update(
            _permission_key(ref),
            "SET #p = :p",
            names={"#p": "permission"},
            values={":p": permission},
            condition="attribute_exists(pk)",
            return_values="ALL_NEW",
        )
    except table.ConditionFailed:
        raise not_found(f"Role permission with id={permission_id} not found") from None
    return _permission_from(updated or {})
