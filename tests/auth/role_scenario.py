"""Roles (MLflow 3's basic-auth RBAC) played over HTTP against any MLflow basic-auth server: the role API with
good and bad input, and what a role's grants let its members do, as workspace admins and members.

Users and roles carry a prefix of their own: MLflow's reference server is shared with other modules.
"""

from __future__ import annotations

from typing import Any

from tests.auth.conftest import ADMIN, ADMIN_PASSWORD
from tests.auth.scenario import M2, M3, Ctx, Step, _set

R = f"{M3}/roles"
AJAX_R = "/ajax-api/3.0/mlflow/roles"
ANN, BEN, CAT = "rho-ann", "rho-ben", "rho-cat"  # a reader by role, a workspace admin by role, no role
PASSWORDS = {ADMIN: ADMIN_PASSWORD, ANN: "ann-password-123", BEN: "ben-password-123", CAT: "cat-password-123"}
PREFIX = "rho-"


def _role(key: str = "role") -> Any:
    return lambda c: {"role_id": c[key]}


def _perm(c: Ctx) -> dict[str, Any]:
    return {"role_permission_id": c["perm"]}


def _add(role: str, resource_type: str, pattern: Any, permission: str) -> Any:
    def payload(c: Ctx) -> dict[str, Any]:
        return {"role_id": c[role], "resource_type": resource_type, "resource_pattern": c.get(pattern, pattern), "permission": permission}

    return payload


def _tag(value: str) -> Any:
    return lambda c: {"experiment_id": c["exp"], "key": "k", "value": value}


STEPS: list[Step] = [
    *(
        Step(f"admin creates {name}", ADMIN, "POST", f"{M2}/users/create", lambda c, n=name: {"username": n, "password": PASSWORDS[n]})
        for name in (ANN, BEN, CAT)
    ),
    Step(
        "admin creates an experiment",
        ADMIN,
        "POST",
        f"{M2}/experiments/create",
        lambda c: {"name": "rho-exp"},
        keep=_set("exp", lambda b: b["experiment_id"]),
    ),
    # --- roles: create, read, bad input ---------------------------------------------------------------------
    Step("anonymous lists roles", None, "GET", f"{R}/list", lambda c: {"workspace": "default"}),
    Step(
        "admin creates a role",
        ADMIN,
        "POST",
        f"{R}/create",
        lambda c: {"name": "rho-readers", "workspace": "default", "description": "reads"},
        keep=_set("role", lambda b: b["role"]["id"]),
        compare_json=True,
    ),
    Step("duplicate role", ADMIN, "POST", f"{R}/create", lambda c: {"name": "rho-readers", "workspace": "default"}),
    Step(
        "a role of another workspace",
        ADMIN,
        "POST",
        f"{R}/create",
        lambda c: {"name": "rho-elsewhere", "workspace": "rho-elsewhere"},
        keep=_set("far", lambda b: b["role"]["id"]),
        compare_json=True,
    ),
    Step("reserved role name", ADMIN, "POST", f"{R}/create", lambda c: {"name": "__user_7__", "workspace": "default"}, compare_json=True),
    Step("empty role name", ADMIN, "POST", f"{R}/create", lambda c: {"name": " ", "workspace": "default"}, compare_json=True),
    Step("numeric role name", ADMIN, "POST", f"{R}/create", lambda c: {"name": 5, "workspace": "default"}, compare_json=True),
    Step("role without workspace", ADMIN, "POST", f"{R}/create", lambda c: {"name": "rho-x"}, compare_json=True),
    Step("role with empty workspace", ADMIN, "POST", f"{R}/create", lambda c: {"name": "rho-x", "workspace": ""}, compare_json=True),
    Step(
        "role with numeric description",
        ADMIN,
        "POST",
        f"{R}/create",
        lambda c: {"name": "rho-x", "workspace": "default", "description": 5},
        compare_json=True,
    ),
    Step("role from a non-JSON body", ADMIN, "POST", f"{R}/create", raw=lambda c: b"name=x", compare_json=True),
    Step("admin gets the role", ADMIN, "GET", f"{R}/get", _role(), compare_json=True),
    Step("the role on the ajax path", ADMIN, "GET", f"{AJAX_R}/get", _role(), compare_json=True),
    Step("role id not a number", ADMIN, "GET", f"{R}/get", lambda c: {"role_id": "x"}, compare_json=True),
    Step("role id missing", ADMIN, "GET", f"{R}/get", compare_json=True),
    Step("role not found", ADMIN, "GET", f"{R}/get", lambda c: {"role_id": "987654"}, compare_json=True),
    Step("get role with POST", ADMIN, "POST", f"{R}/get", _role()),
    # --- permissions of a role --------------------------------------------------------------------------------
    Step(
        "admin adds READ on the experiment",
        ADMIN,
        "POST",
        f"{R}/permissions/add",
        _add("role", "experiment", "exp", "READ"),
        keep=_set("perm", lambda b: b["role_permission"]["id"]),
        compare_json=True,
    ),
    Step("the same permission again", ADMIN, "POST", f"{R}/permissions/add", _add("role", "experiment", "exp", "EDIT")),
    Step("READ on the workspace", ADMIN, "POST", f"{R}/permissions/add", _add("role", "workspace", "*", "READ"), compare_json=True),
    Step("an unknown resource type", ADMIN, "POST", f"{R}/permissions/add", _add("role", "bogus", "*", "READ")),
    Step("an unknown permission", ADMIN, "POST", f"{R}/permissions/add", _add("role", "experiment", "*", "ALL"), compare_json=True),
    Step(
        "NO_PERMISSIONS is not grantable",
        ADMIN,
        "POST",
        f"{R}/permissions/add",
        _add("role", "experiment", "*", "NO_PERMISSIONS"),
        compare_json=True,
    ),
    Step(
        "a permission on a missing role",
        ADMIN,
        "POST",
        f"{R}/permissions/add",
        lambda c: {**_add("role", "experiment", "*", "READ")(c), "role_id": 987654},
        compare_json=True,
    ),
    Step(
        "a permission without a pattern",
        ADMIN,
        "POST",
        f"{R}/permissions/add",
        lambda c: {"role_id": c["role"], "resource_type": "experiment", "permission": "READ"},
        compare_json=True,
    ),
    Step("admin lists the role's permissions", ADMIN, "GET", f"{R}/permissions/list", _role(), compare_json=True),
    # --- assignments -------------------------------------------------------------------------------------------
    Step("admin assigns ann", ADMIN, "POST", f"{R}/assign", lambda c: {"username": ANN, "role_id": c["role"]}, compare_json=True),
    Step("assigned twice", ADMIN, "POST", f"{R}/assign", lambda c: {"username": ANN, "role_id": c["role"]}),
    Step(
        "assign a missing user", ADMIN, "POST", f"{R}/assign", lambda c: {"username": "rho-nobody", "role_id": c["role"]}, compare_json=True
    ),
    Step("assign a missing role", ADMIN, "POST", f"{R}/assign", lambda c: {"username": ANN, "role_id": 987654}, compare_json=True),
    Step("admin lists the role's users", ADMIN, "GET", f"{R}/users/list", _role(), compare_json=True),
    Step("admin lists ann's roles", ADMIN, "GET", f"{M3}/users/roles/list", lambda c: {"username": ANN}, compare_json=True),
    Step(
        "admin lists a missing user's roles",
        ADMIN,
        "GET",
        f"{M3}/users/roles/list",
        lambda c: {"username": "rho-nobody"},
        compare_json=True,
    ),
    # --- what the role lets ann do -------------------------------------------------------------------------------
    Step("ann reads the experiment", ANN, "GET", f"{M2}/experiments/get", lambda c: {"experiment_id": c["exp"]}),
    Step("ann cannot tag it", ANN, "POST", f"{M2}/experiments/set-experiment-tag", _tag("ann")),
    Step(
        "ann's permission on it",
        ANN,
        "GET",
        f"{M3}/users/permissions/get",
        lambda c: {"username": ANN, "resource_type": "experiment", "resource_id": c["exp"]},
        compare_json=True,
    ),
    Step("ann's permissions", ANN, "GET", f"{M3}/users/current/permissions", compare_json=True),
    Step("ann reads her role", ANN, "GET", f"{R}/get", _role(), compare_json=True),
    Step("ann lists the default workspace's roles", ANN, "GET", f"{R}/list", lambda c: {"workspace": "default"}, compare_json=True),
    Step("ann lists every role", ANN, "GET", f"{R}/list"),
    Step("ann lists another workspace's roles", ANN, "GET", f"{R}/list", lambda c: {"workspace": "rho-elsewhere"}),
    Step("ann reads a role of another workspace", ANN, "GET", f"{R}/get", _role("far")),
    Step("ann reads a missing role", ANN, "GET", f"{R}/get", lambda c: {"role_id": "987654"}),
    Step("ann's bad role id", ANN, "GET", f"{R}/get", lambda c: {"role_id": "x"}, compare_json=True),
    Step("ann adds a permission", ANN, "POST", f"{R}/permissions/add", _add("role", "experiment", "exp", "MANAGE")),
    Step("ann assigns cat", ANN, "POST", f"{R}/assign", lambda c: {"username": CAT, "role_id": c["role"]}),
    Step("ann lists the role's users", ANN, "GET", f"{R}/users/list", _role()),
    Step("ann lists her roles", ANN, "GET", f"{M3}/users/roles/list", lambda c: {"username": ANN}, compare_json=True),
    Step("cat reads the role", CAT, "GET", f"{R}/get", _role()),
    Step("cat lists ann's roles", CAT, "GET", f"{M3}/users/roles/list", lambda c: {"username": ANN}),
    Step("cat lists ann's permissions", CAT, "GET", f"{M3}/users/permissions/list", lambda c: {"username": ANN}),
    # EDIT through the role: ann may tag the experiment.
    Step(
        "admin raises the permission to EDIT",
        ADMIN,
        "PATCH",
        f"{R}/permissions/update",
        lambda c: {**_perm(c), "permission": "EDIT"},
        compare_json=True,
    ),
    Step("ann tags the experiment", ANN, "POST", f"{M2}/experiments/set-experiment-tag", _tag("ann")),
    Step("ann cannot delete it", ANN, "POST", f"{M2}/experiments/delete", lambda c: {"experiment_id": c["exp"]}),
    Step(
        "update to a permission of no kind",
        ADMIN,
        "PATCH",
        f"{R}/permissions/update",
        lambda c: {**_perm(c), "permission": "ALL"},
        compare_json=True,
    ),
    Step(
        "update a missing role permission",
        ADMIN,
        "PATCH",
        f"{R}/permissions/update",
        lambda c: {"role_permission_id": 987654, "permission": "READ"},
        compare_json=True,
    ),
    # DENY anywhere among the user's grants wins over every positive grant (of the role or the user's own).
    Step(
        "admin denies every experiment",
        ADMIN,
        "POST",
        f"{R}/permissions/add",
        _add("role", "experiment", "*", "DENY"),
        keep=_set("deny", lambda b: b["role_permission"]["id"]),
        compare_json=True,
    ),
    Step(
        "admin grants ann MANAGE herself",
        ADMIN,
        "POST",
        f"{M3}/users/permissions/grant",
        lambda c: {"username": ANN, "resource_type": "experiment", "resource_id": c["exp"], "permission": "MANAGE"},
    ),
    Step("denied ann reads the experiment", ANN, "GET", f"{M2}/experiments/get", lambda c: {"experiment_id": c["exp"]}),
    Step("denied ann reads the Default experiment", ANN, "GET", f"{M2}/experiments/get", lambda c: {"experiment_id": "0"}),
    Step(
        "admin lifts the DENY", ADMIN, "DELETE", f"{R}/permissions/remove", lambda c: {"role_permission_id": c["deny"]}, compare_json=True
    ),
    Step("lifted again", ADMIN, "DELETE", f"{R}/permissions/remove", lambda c: {"role_permission_id": c["deny"]}),
    Step(
        "ann's own MANAGE and the role's EDIT",
        ANN,
        "GET",
        f"{M3}/users/permissions/get",
        lambda c: {"username": ANN, "resource_type": "experiment", "resource_id": c["exp"]},
        compare_json=True,
    ),
    # --- a workspace admin: MANAGE on the workspace --------------------------------------------------------------
    Step(
        "admin creates an admins role",
        ADMIN,
        "POST",
        f"{R}/create",
        lambda c: {"name": "rho-admins", "workspace": "default"},
        keep=_set("admins", lambda b: b["role"]["id"]),
    ),
    Step(
        "admin makes it manage the workspace",
        ADMIN,
        "POST",
        f"{R}/permissions/add",
        _add("admins", "workspace", "*", "MANAGE"),
        compare_json=True,
    ),
    Step("ben cannot create a role yet", BEN, "POST", f"{R}/create", lambda c: {"name": "rho-ben", "workspace": "default"}),
    Step(
        "ben cannot create a user yet", BEN, "POST", f"{M2}/users/create", lambda c: {"username": "rho-dan", "password": "dan-password-123"}
    ),
    Step("admin assigns ben", ADMIN, "POST", f"{R}/assign", lambda c: {"username": BEN, "role_id": c["admins"]}, compare_json=True),
    Step(
        "ben creates a role",
        BEN,
        "POST",
        f"{R}/create",
        lambda c: {"name": "rho-ben", "workspace": "default"},
        keep=_set("bens", lambda b: b["role"]["id"]),
        compare_json=True,
    ),
    Step("ben creates a role elsewhere", BEN, "POST", f"{R}/create", lambda c: {"name": "rho-ben", "workspace": "rho-elsewhere"}),
    Step("ben's request names no workspace", BEN, "POST", f"{R}/create", lambda c: {"name": "rho-ben"}, compare_json=True),
    Step(
        "ben's request names an empty workspace",
        BEN,
        "POST",
        f"{R}/create",
        lambda c: {"name": "rho-ben", "workspace": 5},
        compare_json=True,
    ),
    Step(
        "ben's request names a bad role id",
        BEN,
        "POST",
        f"{R}/permissions/add",
        lambda c: {"role_id": "x", "resource_type": "experiment", "resource_pattern": "*", "permission": "READ"},
        compare_json=True,
    ),
    Step(
        "ben adds to a missing role",
        BEN,
        "POST",
        f"{R}/permissions/add",
        lambda c: {"role_id": 987654, "resource_type": "experiment", "resource_pattern": "*", "permission": "READ"},
    ),
    Step("ben assigns cat", BEN, "POST", f"{R}/assign", lambda c: {"username": CAT, "role_id": c["role"]}, compare_json=True),
    Step("ben lists cat's roles", BEN, "GET", f"{M3}/users/roles/list", lambda c: {"username": CAT}, compare_json=True),
    Step("ben lists the role's users", BEN, "GET", f"{R}/users/list", _role(), compare_json=True),
    Step("ben lists every role", BEN, "GET", f"{R}/list"),
    Step("ben assigns to a role elsewhere", BEN, "POST", f"{R}/assign", lambda c: {"username": CAT, "role_id": c["far"]}),
    Step("ben creates a user", BEN, "POST", f"{M2}/users/create", lambda c: {"username": "rho-dan", "password": "dan-password-123"}),
    Step("ben makes cat an admin", BEN, "PATCH", f"{M2}/users/update-admin", lambda c: {"username": CAT, "is_admin": True}),
    Step("ben tags the experiment", BEN, "POST", f"{M2}/experiments/set-experiment-tag", _tag("ben")),
    Step(
        "ben reads cat's permission",
        BEN,
        "GET",
        f"{M3}/users/permissions/get",
        lambda c: {"username": CAT, "resource_type": "experiment", "resource_id": c["exp"]},
        compare_json=True,
    ),
    Step("ben lists ann's permissions", BEN, "GET", f"{M3}/users/permissions/list", lambda c: {"username": ANN}, compare_json=True),
    Step(
        "ben grants every experiment",
        BEN,
        "POST",
        f"{M3}/users/permissions/grant",
        lambda c: {"username": CAT, "resource_type": "experiment", "resource_id": "*", "permission": "READ"},
    ),
    Step("admin lists users with their roles", ADMIN, "GET", f"{M2}/users/list", compare_json=True),
    Step("ben lists users with their roles", BEN, "GET", f"{M2}/users/list", compare_json=True),
    # --- renaming, unassigning and deleting ----------------------------------------------------------------------
    Step(
        "admin renames the role", ADMIN, "PATCH", f"{R}/update", lambda c: {"role_id": c["role"], "name": "rho-viewers"}, compare_json=True
    ),
    Step("rename onto another role", ADMIN, "PATCH", f"{R}/update", lambda c: {"role_id": c["role"], "name": "rho-admins"}),
    Step(
        "rename to a reserved name", ADMIN, "PATCH", f"{R}/update", lambda c: {"role_id": c["role"], "name": "__user_x"}, compare_json=True
    ),
    Step("update with nothing", ADMIN, "PATCH", f"{R}/update", _role(), compare_json=True),
    Step(
        "update with a numeric description",
        ADMIN,
        "PATCH",
        f"{R}/update",
        lambda c: {"role_id": c["role"], "description": 3},
        compare_json=True,
    ),
    Step("update a missing role", ADMIN, "PATCH", f"{R}/update", lambda c: {"role_id": 987654, "description": "d"}, compare_json=True),
    Step(
        "admin describes the role",
        ADMIN,
        "PATCH",
        f"{R}/update",
        lambda c: {"role_id": c["role"], "description": "views"},
        compare_json=True,
    ),
    Step(
        "the old name is free again",
        ADMIN,
        "POST",
        f"{R}/create",
        lambda c: {"name": "rho-readers", "workspace": "default"},
        keep=_set("again", lambda b: b["role"]["id"]),
        compare_json=True,
    ),
    Step("admin unassigns ann", ADMIN, "DELETE", f"{R}/unassign", lambda c: {"username": ANN, "role_id": c["role"]}, compare_json=True),
    Step("unassigned twice", ADMIN, "DELETE", f"{R}/unassign", lambda c: {"username": ANN, "role_id": c["role"]}),
    Step(
        "unassign a missing user",
        ADMIN,
        "DELETE",
        f"{R}/unassign",
        lambda c: {"username": "rho-nobody", "role_id": c["role"]},
        compare_json=True,
    ),
    Step("ann keeps her own MANAGE", ANN, "POST", f"{M2}/experiments/set-experiment-tag", _tag("ann-2")),
    Step("ann has no role to read", ANN, "GET", f"{R}/get", _role()),
    Step("admin deletes the role", ADMIN, "DELETE", f"{R}/delete", _role(), compare_json=True),
    Step("deleted role", ADMIN, "GET", f"{R}/get", _role()),
    Step("deleted twice", ADMIN, "DELETE", f"{R}/delete", _role()),
    Step("cat's roles after the delete", ADMIN, "GET", f"{M3}/users/roles/list", lambda c: {"username": CAT}, compare_json=True),
    Step("cat's experiment access after the delete", CAT, "POST", f"{M2}/experiments/set-experiment-tag", _tag("cat")),
    Step("admin deletes ben", ADMIN, "DELETE", f"{M2}/users/delete", lambda c: {"username": BEN}),
    Step("the admins role has no users", ADMIN, "GET", f"{R}/users/list", _role("admins"), compare_json=True),
    Step("admin lists the default workspace's roles", ADMIN, "GET", f"{R}/list", lambda c: {"workspace": "default"}, compare_json=True),
    Step("admin lists two workspaces' roles", ADMIN, "GET", f"{R}/list?workspace=default&workspace=rho-elsewhere", compare_json=True),
    Step("admin lists an empty workspace name", ADMIN, "GET", f"{R}/list", lambda c: {"workspace": " "}, compare_json=True),
    Step("admin lists every role", ADMIN, "GET", f"{R}/list", compare_json=True),
]
