"""Roles of MLflow 3's basic-auth RBAC as items (mlflow/server/auth/sqlalchemy_store.py's role methods).

A role lives in its own partition (``ROLE#<id>``: its definition, its permissions and its members); ROLELIST
lists roles by workspace and claims each role name once per workspace; an assignment is also an item of the
user's partition. The user item keeps the ids of its roles per workspace (``role_ids`` for ``default``,
``role_ids@<workspace>`` for another), so authorizing a request of a user without roles in the request's
workspace costs what it did before roles existed, and one more BatchGetItem for a user with roles there.

A role's grants apply in its own workspace only (with workspaces off every request is in ``default``: a role of
another workspace is stored and listed, but its grants never apply, as MLflow resolves every grant in
``default`` then).

A role's permissions (what it grants, and MLflow's checks of a grant) are in ``role_grants``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from serverless_mlflow.auth import store
from serverless_mlflow.core.errors import already_exists, invalid, not_found
from serverless_mlflow.storage import schema, table

ROLE = schema.entity("role")
ROLE_PERMISSION = schema.entity("role_permission")
ROLE_MEMBER = schema.entity("role_member")
ROLE_PERMISSION_REF = schema.entity("role_permission_ref")
ROLE_ENTRY = schema.entity("role_entry")
ROLE_NAME = schema.entity("role_name")
ROLE_ASSIGNMENT = schema.entity("role_assignment")

DEFAULT_WORKSPACE = "default"
WORKSPACE = "workspace"
# The per-user grants' role name space (MLflow's ``__user_<id>__`` synthetic roles) is reserved.
RESERVED_PREFIX = "__user_"


@dataclass(frozen=True)
class RolePermission:
    id: int
    role_id: int
    resource_type: str
    resource_pattern: str
    permission: str

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "role_id": self.role_id,
            "resource_type": self.resource_type,
            "resource_pattern": self.resource_pattern,
            "permission": self.permission,
        }


@dataclass(frozen=True)
class Member:
    id: int
    user_id: int
    role_id: int
    username: str

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "user_id": self.user_id, "role_id": self.role_id}


@dataclass(frozen=True)
class Role:
    id: int
    name: str
    workspace: str
    description: str | None
    permissions: list[RolePermission] = field(default_factory=list)
    members: list[Member] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.name,
            "workspace": self.workspace,
            "description": self.description,
            "permissions": [p.to_json() for p in self.permissions],
        }


def _permission_from(item: dict[str, Any]) -> RolePermission:
    return RolePermission(
        int(item["role_permission_id"]), int(item["role_id"]), item["resource_type"], item["resource_pattern"], item["permission"]
    )


def _role_from(items: list[dict[str, Any]]) -> Role | None:
    meta = next((item for item in items if item[schema.ENTITY_TYPE] == ROLE.name), None)
    if meta is None:
        return None
    permissions = sorted((_permission_from(item) for item in items if item[schema.ENTITY_TYPE] == ROLE_PERMISSION.name), key=lambda p: p.id)
    members = sorted(
        (
            Member(int(item["assignment_id"]), int(item["user_id"]), int(item["role_id"]), item["username"])
            for item in items
            if item[schema.ENTITY_TYPE] == ROLE_MEMBER.name
        ),
        key=lambda m: m.id,
    )
    return Role(int(meta["role_id"]), meta["name"], meta["workspace"], meta.get("description"), permissions, members)


def _not_found(role_id: int) -> Exception:
    return not_found(f"Role with id={role_id} not found")


def role_or_none(role_id: int) -> Role | None:
    if not table.key_can_exist(ROLE.key(role_id=role_id)):
        return None
    return _role_from(table.query(**ROLE.query("with_grants", role_id=role_id)))


def get_role(role_id: int) -> Role:
    role = role_or_none(role_id)
    if role is None:
        raise _not_found(role_id)
    return role


def _roles(role_ids: Iterable[int]) -> list[Role]:
    found = (role_or_none(role_id) for role_id in dict.fromkeys(role_ids))
    return sorted((role for role in found if role is not None), key=lambda role: role.id)


# --- roles ---------------------------------------------------------------------------------------------


def _reject_reserved(name: str) -> None:
    if name.startswith(RESERVED_PREFIX):
        raise invalid(
            f"Role name {name!r} uses the reserved '__user_' prefix, which is held for the per-user permission "
            "representation. Choose a different name."
        )


def create_role(name: str, workspace: str, description: str | None) -> Role:
    _reject_reserved(name)
    role_id = store.allocate_id("seq#role")
    meta = ROLE.item({"role_id": role_id, "name": name, "workspace": workspace, "description": description}, role_id=role_id)
    try:
        table.transact(
            [
                table.put_op(ROLE_NAME.item({"role_id": role_id}, workspace=workspace, name=name), condition="attribute_not_exists(pk)"),
                table.put_op(meta, condition="attribute_not_exists(pk)"),
                table.put_op(ROLE_ENTRY.item({"role_id": role_id, "workspace": workspace}, workspace=workspace, role_id=role_id)),
            ]
        )
    except table.ConditionFailed:
        raise already_exists(f"Role (name={name}, workspace={workspace}) already exists.") from None
    return Role(role_id, name, workspace, description)


def list_roles(workspaces: list[str] | None = None) -> list[Role]:
    """Every role by id (``None``), or the roles of the given workspaces by workspace, then id: the orders
    MLflow's store answers in (a table scan; its workspace index)."""
    if workspaces is None:
        return _roles(int(entry["role_id"]) for entry in table.query(**ROLE_ENTRY.query("all")))
    entries = [
        entry for workspace in dict.fromkeys(workspaces) for entry in table.query(**ROLE_ENTRY.query("in_workspace", workspace=workspace))
    ]
    return sorted(_roles(int(entry["role_id"]) for entry in entries), key=lambda role: (role.workspace, role.id))


def update_role(role_id: int, name: str | None, description: str | None) -> Role:
    if name is not None:
        _reject_reserved(name)
    role = get_role(role_id)
    operations: list[dict[str, Any]] = []
    sets, values = [], {}
    if name is not None and name != role.name:
        operations += [
            table.delete_op(ROLE_NAME.key(workspace=role.workspace, name=role.name)),
            table.put_op(ROLE_NAME.item({"role_id": role_id}, workspace=role.workspace, name=name), condition="attribute_not_exists(pk)"),
        ]
        sets.append("#n = :n")
        values[":n"] = name
    if description is not None:
        sets.append("description = :d")
        values[":d"] = description
    if sets:
        names = {"#n": "name"} if ":n" in values else None
        operations.append(
            table.update_op(
                ROLE.key(role_id=role_id), "SET " + ", ".join(sets), names=names, values=values, condition="attribute_exists(pk)"
            )
        )
        try:
            table.transact(operations)
        except table.ConditionFailed:
            if role_or_none(role_id) is None:
                raise _not_found(role_id) from None
            raise already_exists(f"Role with name={name} already exists in workspace={role.workspace}") from None
    return get_role(role_id)


def delete_role(role_id: int) -> None:
    """The role, its permissions and its assignments (members first: a retry after a failure part-way still
    finds the role and finishes the job)."""
    role = get_role(role_id)
    for member in role.members:
        _unassign_items(member.username, role)
    refs = [ROLE_PERMISSION_REF.key(role_permission_id=p.id) for p in role.permissions]
    perms = [
        ROLE_PERMISSION.key(role_id=role_id, resource_type=p.resource_type, resource_pattern=p.resource_pattern) for p in role.permissions
    ]
    table.batch_write(deletes=refs + perms)
    table.transact(
        [
            table.delete_op(ROLE_ENTRY.key(workspace=role.workspace, role_id=role_id)),
            table.delete_op(ROLE_NAME.key(workspace=role.workspace, name=role.name)),
            table.delete_op(ROLE.key(role_id=role_id)),
        ]
    )


# --- assignments ---------------------------------------------------------------------------------------


def assign(username: str, role_id: int) -> Member:
    user = store.get_user(username)
    role = get_role(role_id)
    assignment_id = store.allocate_id("seq#role_assignment")
    fields = {"assignment_id": assignment_id, "user_id": user.id, "role_id": role_id, "username": username}
    operations = [
        table.put_op(
            ROLE_ASSIGNMENT.item({**fields, "workspace": role.workspace}, username=username, role_id=role_id),
            condition="attribute_not_exists(pk)",
        ),
        table.put_op(ROLE_MEMBER.item(fields, role_id=role_id, username=username)),
        table.check_op(ROLE.key(role_id=role_id), "attribute_exists(pk)"),
    ]
    operations.append(
        table.update_op(
            store.user_key(username),
            "ADD #r :r",
            names={"#r": store.role_ids_attribute(role.workspace)},
            values={":r": {str(role_id)}},
            condition="attribute_exists(pk)",
        )
    )
    try:
        table.transact(operations)
    except table.ConditionFailed:
        store.get_user(username)
        if role_or_none(role_id) is None:
            raise _not_found(role_id) from None
        raise already_exists(f"User role assignment (user_id={user.id}, role_id={role_id}) already exists") from None
    return Member(assignment_id, user.id, role_id, username)


def _unassign_items(username: str, role: Role) -> None:
    table.transact(
        [
            table.delete_op(ROLE_ASSIGNMENT.key(username=username, role_id=role.id), condition="attribute_exists(pk)"),
            table.delete_op(ROLE_MEMBER.key(role_id=role.id, username=username)),
            table.update_op(
                store.user_key(username),
                "DELETE #r :r",
                names={"#r": store.role_ids_attribute(role.workspace)},
                values={":r": {str(role.id)}},
                condition="attribute_exists(pk)",
            ),
        ]
    )


def unassign(username: str, role_id: int) -> None:
    user = store.get_user(username)
    missing = not_found(f"User role assignment (user_id={user.id}, role_id={role_id}) not found")
    assignment = table.get(ROLE_ASSIGNMENT.key(username=username, role_id=role_id))
    if assignment is None:
        raise missing
    try:
        _unassign_items(username, Role(role_id, "", assignment.get("workspace") or DEFAULT_WORKSPACE, None))
    except table.ConditionFailed:
        raise missing from None


def assignments_of(username: str) -> list[dict[str, Any]]:
    return table.query(**ROLE_ASSIGNMENT.query("of_user", username=username))


def user_roles(username: str) -> list[Role]:
    return _roles(int(item["role_id"]) for item in assignments_of(username))


def role_members(role_id: int) -> list[Member]:
    return get_role(role_id).members


def member_keys(partition_items: Iterable[dict[str, Any]]) -> list[dict[str, str]]:
    """The roles' side of the assignments among a user's partition items (deleting a user deletes both)."""
    return [
        ROLE_MEMBER.key(role_id=int(item["role_id"]), username=item["username"])
        for item in partition_items
        if item[schema.ENTITY_TYPE] == ROLE_ASSIGNMENT.name
    ]
