"""Users and per-user grants in the table (MLflow's auth store, sqlalchemy_store.py, as items).

A user is ``USER#<name> / U#META``; each grant is an item in the user's partition (``U#PERM#`` experiment,
``U#RPERM#`` registered model, ``U#PPERM#`` prompt, ``U#GPERM#`` gateway endpoint, resource id or ``"*"``), indexed by resource on gsi4
so a rename or delete of the resource finds its grants. Checking a request costs one BatchGetItem:
the user item, the grant on the resource and the wildcard grant.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from serverless_mlflow.auth import passwords
from serverless_mlflow.auth.permissions import ALL, EXPERIMENT, GATEWAY_ENDPOINT, GRANTABLE, KINDS, PROMPT, REGISTERED_MODEL
from serverless_mlflow.core.errors import already_exists, invalid, not_found
from serverless_mlflow.request import workspace as request_workspace
from serverless_mlflow.storage import schema, table

USER = schema.entity("user")
USER_ENTRY = schema.entity("user_entry")
ROLE_MEMBER = schema.entity("role_member")
ROLE_ASSIGNMENT = schema.entity("role_assignment")
_GRANT_ENTITY = {
    EXPERIMENT: schema.entity("experiment_permission"),
    REGISTERED_MODEL: schema.entity("registered_model_permission"),
    PROMPT: schema.entity("prompt_permission"),
    GATEWAY_ENDPOINT: schema.entity("gateway_endpoint_permission"),
}
_ID_FIELD = {EXPERIMENT: "experiment_id", REGISTERED_MODEL: "model_name", PROMPT: "model_name", GATEWAY_ENDPOINT: "endpoint_id"}
_KIND_OF_ENTITY = {grant_entity.name: kind for kind, grant_entity in _GRANT_ENTITY.items()}
USER_COUNTER_KEY = "seq#user"
MIN_PASSWORD_LENGTH = 12


@dataclass(frozen=True)
class User:
    id: int
    username: str
    is_admin: bool
    password_hash: str
    # Its roles in the request's workspace (role ids as strings), whose grants apply with its own there.
    role_ids: frozenset[str] = frozenset()

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "username": self.username, "is_admin": self.is_admin}


def role_ids_attribute(workspace: str) -> str:
    """The user item's attribute holding its role ids in ``workspace``: ``role_ids`` for ``default`` (as before
    workspaces), ``role_ids@<workspace>`` for another, so authorizing a request still reads one item."""
    return "role_ids" if workspace == request_workspace.DEFAULT_WORKSPACE else f"role_ids@{workspace}"


def _user_from(item: dict[str, Any]) -> User:
    role_ids = item.get(role_ids_attribute(request_workspace.current())) or ()
    return User(int(item["user_id"]), item["username"], bool(item.get("is_admin")), item["password_hash"], frozenset(role_ids))


def user_key(username: str) -> dict[str, str]:
    return USER.key(username=username)


def stored_id(kind: str, resource_id: str) -> str:
    """The id a grant on a resource is kept under. MLflow keeps a user's grants in its ``__user_<id>__`` role of
    the workspace the grant was made in, and resolves a request with the grants of the resource's workspace only.
    Registered model and prompt names are unique per workspace only, so outside ``default`` a grant on one is kept
    as ``<workspace>/<name>`` (model names cannot hold ``/``, so no ``default`` name spells it); the ``*`` grant
    of any kind likewise as ``<workspace>/*``. Experiment and endpoint ids are unique across workspaces and keep
    their ids. ``default``'s grants keep their ids (nothing changes with workspaces off)."""
    workspace = request_workspace.current()
    if workspace == request_workspace.DEFAULT_WORKSPACE or (kind not in (REGISTERED_MODEL, PROMPT) and resource_id != "*"):
        return resource_id
    return f"{workspace}/{resource_id}"


def shown_id(kind: str, stored: str, workspace: str) -> str:
    """The id a stored grant names, as MLflow lists it (with its workspace beside it)."""
    prefix = f"{workspace}/"
    if (
        workspace != request_workspace.DEFAULT_WORKSPACE
        and stored.startswith(prefix)
        and (kind in (REGISTERED_MODEL, PROMPT) or stored == f"{prefix}*")
    ):
        return stored[len(prefix) :]
    return stored


def grant_key(username: str, kind: str, resource_id: str) -> dict[str, str]:
    return _GRANT_ENTITY[kind].key(username=username, **{_ID_FIELD[kind]: stored_id(kind, resource_id)})


# --- users -----------------------------------------------------------------------------------


def validate_password(password: Any) -> None:
    if not isinstance(password, str) or len(password) < MIN_PASSWORD_LENGTH:
        raise invalid(f"Password must be at least {MIN_PASSWORD_LENGTH} characters.")


def create_user(username: Any, password: Any, is_admin: bool = False) -> User:
    if not isinstance(username, str) or username == "":
        raise invalid("Username cannot be empty.")
    validate_password(password)
    if get_user_or_none(username) is not None:
        raise already_exists(f"User (username={username}) already exists.")
    user_id = allocate_id(USER_COUNTER_KEY)
    item = USER.item(
        {"username": username, "user_id": user_id, "password_hash": passwords.hash_password(password), "is_admin": is_admin},
        username=username,
    )
    try:
        table.transact(
            [
                table.put_op(item, condition="attribute_not_exists(pk)"),
                table.put_op(USER_ENTRY.item({"username": username}, username=username)),
            ]
        )
    except table.ConditionFailed:
        raise already_exists(f"User (username={username}) already exists.") from None
    return _user_from(item)


def allocate_id(counter: str) -> int:
    """The next id of a sequence (MLflow's autoincrement ids: users, roles, role permissions, assignments)."""
    updated = table.update(
        schema.entity("config").key(key=counter),
        "ADD #v :one SET entity_type = :type",
        names={"#v": "value"},
        values={":one": 1, ":type": "config"},
        return_values="UPDATED_NEW",
    )
    return int(updated["value"]) if updated else 1


def get_user_or_none(username: str) -> User | None:
    if not isinstance(username, str) or not username:
        return None  # a JSON null or number names no user (MLflow's store finds none either)
    item = table.get(user_key(username))
    return _user_from(item) if item else None


def get_user(username: str) -> User:
    user = get_user_or_none(username)
    if user is None:
        raise not_found(f"User with username={username} not found")
    return user


def authenticate(username: str, password: str) -> User | None:
    user = get_user_or_none(username)
    if user is None or not passwords.check_password(user.password_hash, password):
        return None
    return user


def update_password(username: str, password: Any) -> None:
    get_user(username)
    validate_password(password)
    _update_user(username, "SET password_hash = :h", {":h": passwords.hash_password(password)})


def update_admin(username: str, is_admin: bool) -> None:
    get_user(username)
    _update_user(username, "SET is_admin = :a", {":a": bool(is_admin)})


def _update_user(username: str, expression: str, values: dict[str, Any]) -> None:
    try:
        table.update(user_key(username), expression, values=values, condition="attribute_exists(pk)")
    except table.ConditionFailed:
        raise not_found(f"User with username={username} not found") from None


def delete_user(username: str) -> None:
    """The user, every grant it holds and its role assignments (all items of its partition, and the roles'
    side of each assignment)."""
    get_user(username)
    items = table.query(**USER.query("with_grants", username=username))
    # Grants first: a retry after a failure part-way still finds the user item and finishes the job.
    grants = [table.key_of(item) for item in items if item[schema.ENTITY_TYPE] != USER.name]
    members = [
        ROLE_MEMBER.key(role_id=int(item["role_id"]), username=username)
        for item in items
        if item[schema.ENTITY_TYPE] == ROLE_ASSIGNMENT.name
    ]
    table.batch_write(deletes=members + grants)
    table.transact([table.delete_op(user_key(username)), table.delete_op(USER_ENTRY.key(username=username))])


def list_usernames() -> list[str]:
    """Every user name (the user-name collection: one Query, never a Scan)."""
    return [item["username"] for item in table.query(**USER_ENTRY.query("all"))]


def list_users() -> list[User]:
    """Every user: the user-name collection (a Query, never a Scan), then the user items in batches."""
    names = list_usernames()
    users = [_user_from(item) for item in table.batch_get([user_key(name) for name in names])]
    return sorted(users, key=lambda user: user.id)


# --- grants ----------------------------------------------------------------------------------


def check_kind(kind: Any) -> str:
    if kind == "workspace":
        raise invalid(
            "resource_type 'workspace' is not supported by the per-user permission convenience APIs. "
            "Use set_workspace_permission / delete_workspace_permission for workspace-wide grants."
        )
    if kind not in KINDS:
        raise invalid(f"Invalid resource type '{kind}'. Valid resource types are: {tuple(sorted(KINDS))}")
    return kind


def check_grantable(permission: Any, kind: str) -> str:
    if permission not in ALL:
        raise invalid(f"Invalid permission '{permission}'. Valid permissions are: {tuple(ALL)}")
    if permission not in GRANTABLE:
        raise invalid(f"Invalid permission '{permission}' for resource_type='{kind}'. Resource-level grants accept only: {GRANTABLE}.")
    return permission


def _grant_item(username: str, kind: str, resource_id: str, permission: str) -> dict[str, Any]:
    resource_id = stored_id(kind, resource_id)
    return _GRANT_ENTITY[kind].item(
        {"username": username, "resource_id": resource_id, "permission": permission, "workspace": request_workspace.current()},
        username=username,
        **{_ID_FIELD[kind]: resource_id},
    )


def create_grant(username: str, kind: str, resource_id: str, permission: str) -> None:
    """MLflow's grant_user_resource_permission: RESOURCE_ALREADY_EXISTS when the user has one already."""
    try:
        table.put(_grant_item(username, kind, resource_id, permission), condition="attribute_not_exists(pk)")
    except table.ConditionFailed:
        raise already_exists(f"Permission for user={username} on resource_type={kind}, resource_id={resource_id} already exists.") from None


def set_grant(username: str, kind: str, resource_id: str, permission: str) -> None:
    """Upsert (MLflow's grant_user_permission, used for the creator's MANAGE)."""
    table.put(_grant_item(username, kind, resource_id, permission))


def delete_grant(username: str, kind: str, resource_id: str) -> None:
    try:
        table.delete(grant_key(username, kind, resource_id), condition="attribute_exists(pk)")
    except table.ConditionFailed:
        raise not_found(f"Permission for user={username} on resource_type={kind}, resource_id={resource_id} not found.") from None


def _workspace_of(item: dict[str, Any]) -> str:
    """The workspace a grant was made in (grants from before workspaces carry none: ``default``)."""
    return item.get("workspace") or request_workspace.DEFAULT_WORKSPACE


def user_grants(username: str) -> list[dict[str, Any]]:
    """Every grant of a user as MLflow's list-permissions rows need them (with the workspace it holds in)."""
    out = []
    for item in table.query(**USER.query("with_grants", username=username)):
        kind = _KIND_OF_ENTITY.get(item[schema.ENTITY_TYPE])
        if kind is not None:
            workspace = _workspace_of(item)
            out.append(
                {
                    "resource_type": kind,
                    "resource_pattern": shown_id(kind, item["resource_id"], workspace),
                    "permission": item["permission"],
                    "workspace": workspace,
                }
            )
    return out


def grant_workspaces(username: str) -> set[str]:
    """The workspaces where the user holds a grant of its own: MLflow keeps them in the user's ``__user_<id>__``
    role of each, which makes the user present there (it may read the workspace's roles)."""
    items = table.query(**USER.query("with_grants", username=username))
    return {_workspace_of(item) for item in items if item[schema.ENTITY_TYPE] in _KIND_OF_ENTITY}


def _grants_of_resource(kind: str, resource_id: str) -> list[dict[str, Any]]:
    hits = table.query(**_GRANT_ENTITY[kind].query("by_resource", **{_ID_FIELD[kind]: stored_id(kind, resource_id)}), consistent=False)
    keys = [{schema.PK: item[schema.PK], schema.SK: item[schema.SK]} for item in hits]
    return table.batch_get(keys) if keys else []


def delete_grants_of_resource(kind: str, resource_id: str) -> None:
    grants = _grants_of_resource(kind, resource_id)
    table.batch_write(deletes=[table.key_of(item) for item in grants])


def rename_grants_of_resource(kind: str, old_id: str, new_id: str) -> None:
    grants = _grants_of_resource(kind, old_id)
    puts = [_grant_item(item["username"], kind, new_id, item["permission"]) for item in grants]
    table.batch_write(puts=puts)
    table.batch_write(deletes=[table.key_of(item) for item in grants])


def access(username: str, kind: str, resource_ids: list[str]) -> tuple[User | None, dict[str, list[str]]]:
    """One BatchGetItem: the user and the grants on each resource (wildcard included in every list). Only the
    grants made in the request's workspace count (MLflow resolves in the resource's workspace; a resource of
    another workspace is not found in this one, which MLflow answers with no permission)."""
    keys = [user_key(username), grant_key(username, kind, "*")] + [grant_key(username, kind, rid) for rid in resource_ids]
    items = table.batch_get(keys)
    user = next((_user_from(item) for item in items if item[schema.ENTITY_TYPE] == USER.name), None)
    workspace = request_workspace.current()
    by_id = {
        item["resource_id"]: item["permission"]
        for item in items
        if item[schema.ENTITY_TYPE] != USER.name and _workspace_of(item) == workspace
    }
    wildcard_id = stored_id(kind, "*")
    wildcard = [by_id[wildcard_id]] if wildcard_id in by_id else []
    held = {rid: by_id.get(stored_id(kind, rid)) if rid != "*" else None for rid in resource_ids}
    return user, {rid: wildcard + ([held[rid]] if held[rid] is not None else []) for rid in resource_ids}
