"""Basic auth with workspaces on, step by step over HTTP (MLflow 3.17's model): what each user sees and may do in
each workspace. ``play`` runs it against a server and returns one summary per step; ``EXPECTED`` is MLflow's own
answer (test_auth_workspaces_e2e.py checks ours against it by default, and MLflow's basic-auth app against it
in the long run), so a difference names the step.

Ids differ between servers (MLflow's per-user grants take role ids), so roles are found by name and answers are
summarised without ids.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import requests

from tests.auth.conftest import ADMIN, ADMIN_PASSWORD
from tests.workspaces.support import HEADER

PASSWORD = "a-long-password-ws"
ALICE, BOB, CAROL = "ws-alice", "ws-bob", "ws-carol"
W1, W2 = "team-one", "team-two"

Call = Callable[..., tuple[int, Any]]


def caller(url: str) -> Call:
    def call(user: str, method: str, path: str, workspace: str | None = None, **kwargs: Any) -> tuple[int, Any]:
        auth = (user, ADMIN_PASSWORD if user == ADMIN else PASSWORD)
        headers = {HEADER: workspace} if workspace else {}
        response = requests.request(method, f"{url}{path}", auth=auth, headers=headers, timeout=60, **kwargs)
        try:
            return response.status_code, response.json()
        except ValueError:
            return response.status_code, response.text

    return call


def _summary(status: int, body: Any) -> Any:
    """Status and what matters of the body, without ids."""
    if not isinstance(body, dict):
        return status, body
    if "error_code" in body:
        return status, body["error_code"]
    if "workspaces" in body or body == {}:
        return status, sorted(w["name"] for w in body.get("workspaces", []) if w["name"] in (W1, W2, "default"))
    if "registered_models" in body:
        return status, sorted(m["name"] for m in body["registered_models"])
    if "users" in body:
        return status, sorted(u["username"] for u in body["users"] if u["username"] in (ADMIN, ALICE, BOB, CAROL))
    if "experiments" in body:
        return status, sorted(e["name"] for e in body["experiments"])
    if "roles" in body:
        return status, [
            (r["name"], r["workspace"], [(p["resource_type"], p["resource_pattern"], p["permission"]) for p in r["permissions"]])
            for r in body["roles"]
            if not r["name"].startswith("__user_")
        ]
    if "allowed" in body:
        return status, (body["allowed"], body["permission"])
    if "experiment" in body:
        return status, body["experiment"]["name"]
    if "experiment_id" in body:
        return status, "created"
    if "registered_model" in body:
        return status, body["registered_model"]["name"]
    if "permissions" in body:
        return status, sorted(
            (p["workspace"], p["resource_type"], p["resource_pattern"], p["permission"])
            for p in body["permissions"]
            if not p.get("role_name", "").startswith("__user_") or p["resource_type"] != "experiment" or p["resource_pattern"] == "*"
        )
    return status, sorted(body)


def play(call: Call) -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []

    def step(label: str, *args: Any, **kwargs: Any) -> Any:
        status, body = call(*args, **kwargs)
        out.append((label, _summary(status, body)))
        return body

    for name in (W1, W2):
        step(f"admin creates {name}", ADMIN, "POST", "/api/3.0/mlflow/workspaces", json={"name": name})
    for user in (ALICE, BOB, CAROL):
        step(f"admin creates {user}", ADMIN, "POST", "/api/2.0/mlflow/users/create", json={"username": user, "password": PASSWORD})
    admin_exp = step("admin creates an experiment in w1", ADMIN, "POST", "/api/2.0/mlflow/experiments/create", W1, json={"name": "e-admin"})

    # No role anywhere: nothing is visible, not even in default.
    step("alice lists workspaces (none)", ALICE, "GET", "/api/3.0/mlflow/workspaces")
    step("alice reads experiment 0", ALICE, "GET", "/api/2.0/mlflow/experiments/get", params={"experiment_id": "0"})
    step("alice creates in default", ALICE, "POST", "/api/2.0/mlflow/experiments/create", json={"name": "e-nope"})
    step("alice searches w1", ALICE, "POST", "/api/2.0/mlflow/experiments/search", W1, json={"max_results": 10})

    # The seeded roles of a new workspace.
    roles = step("admin lists w1's roles", ADMIN, "GET", "/api/3.0/mlflow/roles/list", params={"workspace": W1})
    by_name = {r["name"]: r["id"] for r in roles["roles"]}
    w2_roles = call(ADMIN, "GET", "/api/3.0/mlflow/roles/list", params={"workspace": W2})[1]
    w2_by_name = {r["name"]: r["id"] for r in w2_roles["roles"]}
    step(
        "admin makes alice a user of w1",
        ADMIN,
        "POST",
        "/api/3.0/mlflow/roles/assign",
        json={"username": ALICE, "role_id": by_name["user"]},
    )
    step(
        "admin makes bob an admin of w2",
        ADMIN,
        "POST",
        "/api/3.0/mlflow/roles/assign",
        json={"username": BOB, "role_id": w2_by_name["admin"]},
    )

    step("alice lists workspaces", ALICE, "GET", "/api/3.0/mlflow/workspaces")
    step("bob lists workspaces", BOB, "GET", "/api/3.0/mlflow/workspaces")
    step("carol lists workspaces", CAROL, "GET", "/api/3.0/mlflow/workspaces")
    step("alice gets w1 (admin-only)", ALICE, "GET", f"/api/3.0/mlflow/workspaces/{W1}")
    step("admin lists workspaces", ADMIN, "GET", "/api/3.0/mlflow/workspaces")

    # USE on the workspace: create there, list what it holds, but not read another's experiment by id.
    exp_id = admin_exp["experiment_id"]
    step("alice reads admin's experiment", ALICE, "GET", "/api/2.0/mlflow/experiments/get", W1, params={"experiment_id": exp_id})
    mine = step("alice creates in w1", ALICE, "POST", "/api/2.0/mlflow/experiments/create", W1, json={"name": "e-alice"})
    step("alice reads her experiment", ALICE, "GET", "/api/2.0/mlflow/experiments/get", W1, params={"experiment_id": mine["experiment_id"]})
    step("alice searches w1 (workspace tier lists)", ALICE, "POST", "/api/2.0/mlflow/experiments/search", W1, json={"max_results": 10})
    step("alice creates in w2", ALICE, "POST", "/api/2.0/mlflow/experiments/create", W2, json={"name": "e-alice"})
    step("alice searches w2", ALICE, "POST", "/api/2.0/mlflow/experiments/search", W2, json={"max_results": 10})
    step(
        "alice reads her experiment through w2",
        ALICE,
        "GET",
        "/api/2.0/mlflow/experiments/get",
        W2,
        params={"experiment_id": mine["experiment_id"]},
    )
    step("alice creates a model in w1", ALICE, "POST", "/api/2.0/mlflow/registered-models/create", W1, json={"name": "m-alice"})
    step("admin denies alice a model name in w1", ADMIN, "POST", "/api/3.0/mlflow/users/permissions/grant", W1,
         json={"username": ALICE, "resource_type": "registered_model", "resource_id": "m-denied", "permission": "DENY"})  # fmt: skip
    step("alice creates the denied model", ALICE, "POST", "/api/2.0/mlflow/registered-models/create", W1, json={"name": "m-denied"})
    step("alice creates it in w2 (no role there)", ALICE, "POST", "/api/2.0/mlflow/registered-models/create", W2, json={"name": "m-denied"})
    step("admin creates a model in w1", ADMIN, "POST", "/api/2.0/mlflow/registered-models/create", W1, json={"name": "m-admin"})
    step("alice reads admin's model", ALICE, "GET", "/api/2.0/mlflow/registered-models/get", W1, params={"name": "m-admin"})
    step(
        "alice updates her model",
        ALICE,
        "PATCH",
        "/api/2.0/mlflow/registered-models/update",
        W1,
        json={"name": "m-alice", "description": "d"},
    )
    step("alice searches w1's models", ALICE, "GET", "/api/2.0/mlflow/registered-models/search", W1)
    step("alice reads her model through w2", ALICE, "GET", "/api/2.0/mlflow/registered-models/get", W2, params={"name": "m-alice"})
    step("alice lists users in w1", ALICE, "GET", "/api/2.0/mlflow/users/list", W1)
    step("alice lists users in w2", ALICE, "GET", "/api/2.0/mlflow/users/list", W2)

    # MANAGE on the workspace: everything in it, nothing elsewhere (an id of another workspace is refused, not found).
    step("bob creates in w2", BOB, "POST", "/api/2.0/mlflow/experiments/create", W2, json={"name": "e-bob"})
    step(
        "bob reads alice's experiment through w2",
        BOB,
        "GET",
        "/api/2.0/mlflow/experiments/get",
        W2,
        params={"experiment_id": mine["experiment_id"]},
    )
    step(
        "bob reads alice's experiment in w1",
        BOB,
        "GET",
        "/api/2.0/mlflow/experiments/get",
        W1,
        params={"experiment_id": mine["experiment_id"]},
    )
    step("bob reads a missing experiment in w2", BOB, "GET", "/api/2.0/mlflow/experiments/get", W2, params={"experiment_id": "987654"})
    step("bob searches w2", BOB, "POST", "/api/2.0/mlflow/experiments/search", W2, json={"max_results": 10})
    step("bob creates a role in w2", BOB, "POST", "/api/3.0/mlflow/roles/create", json={"workspace": W2, "name": "readers"})
    step("bob creates a role in w1", BOB, "POST", "/api/3.0/mlflow/roles/create", json={"workspace": W1, "name": "readers"})

    # A role's grants hold in its own workspace: carol reads every w2 experiment through a role of w2, not w1's.
    readers = call(ADMIN, "GET", "/api/3.0/mlflow/roles/list", params={"workspace": W2})[1]
    readers_id = next(r["id"] for r in readers["roles"] if r["name"] == "readers")
    step("bob grants READ on experiments", BOB, "POST", "/api/3.0/mlflow/roles/permissions/add",
         json={"role_id": readers_id, "resource_type": "experiment", "resource_pattern": "*", "permission": "READ"})  # fmt: skip
    step("bob assigns carol", BOB, "POST", "/api/3.0/mlflow/roles/assign", json={"username": CAROL, "role_id": readers_id})
    step("carol lists workspaces", CAROL, "GET", "/api/3.0/mlflow/workspaces")
    step("carol searches w2", CAROL, "POST", "/api/2.0/mlflow/experiments/search", W2, json={"max_results": 10})
    step("carol searches w1", CAROL, "POST", "/api/2.0/mlflow/experiments/search", W1, json={"max_results": 10})
    step("carol creates in w2 (no workspace grant)", CAROL, "POST", "/api/2.0/mlflow/experiments/create", W2, json={"name": "e-carol"})
    step("carol reads admin's experiment in w1", CAROL, "GET", "/api/2.0/mlflow/experiments/get", W1, params={"experiment_id": exp_id})

    # A user's own grant holds in the workspace it was made in (its ``*`` too), and does not show the workspace.
    step("admin grants carol READ on w1's experiments", ADMIN, "POST", "/api/3.0/mlflow/users/permissions/grant", W1,
         json={"username": CAROL, "resource_type": "experiment", "resource_id": "*", "permission": "READ"})  # fmt: skip
    step("carol reads admin's experiment in w1 now", CAROL, "GET", "/api/2.0/mlflow/experiments/get", W1, params={"experiment_id": exp_id})
    step("carol searches w1 now", CAROL, "POST", "/api/2.0/mlflow/experiments/search", W1, json={"max_results": 10})
    step("carol searches w1's models", CAROL, "GET", "/api/2.0/mlflow/registered-models/search", W1)
    step("carol lists users in w1", CAROL, "GET", "/api/2.0/mlflow/users/list", W1)
    step("carol reads experiment 0", CAROL, "GET", "/api/2.0/mlflow/experiments/get", params={"experiment_id": "0"})
    step("carol lists workspaces again", CAROL, "GET", "/api/3.0/mlflow/workspaces")
    step("carol's permission in w1", CAROL, "GET", "/api/3.0/mlflow/users/permissions/get", W1,
         params={"username": CAROL, "resource_type": "experiment", "resource_id": exp_id})  # fmt: skip
    step("carol's permission in default", CAROL, "GET", "/api/3.0/mlflow/users/permissions/get",
         params={"username": CAROL, "resource_type": "experiment", "resource_id": exp_id})  # fmt: skip
    step("carol's permissions", CAROL, "GET", "/api/3.0/mlflow/users/current/permissions")
    step("bob reads carol's roles", BOB, "GET", "/api/3.0/mlflow/users/roles/list", params={"username": CAROL})
    step("bob unassigns carol", BOB, "DELETE", "/api/3.0/mlflow/roles/unassign", json={"username": CAROL, "role_id": readers_id})
    step("carol searches w2 after", CAROL, "POST", "/api/2.0/mlflow/experiments/search", W2, json={"max_results": 10})
    step("carol lists workspaces after", CAROL, "GET", "/api/3.0/mlflow/workspaces")
    return out


DAVE, W3 = "ws-dave", "team-three"


def play_default_access(call: Call) -> list[tuple[str, Any]]:
    """With ``grant_default_workspace_access`` on: a user without any grant holds ``default_permission`` (READ)
    in ``default``, and only there."""
    out: list[tuple[str, Any]] = []

    def step(label: str, *args: Any, **kwargs: Any) -> Any:
        status, body = call(*args, **kwargs)
        out.append((label, _summary(status, body)))
        return body

    step("admin creates dave", ADMIN, "POST", "/api/2.0/mlflow/users/create", json={"username": DAVE, "password": PASSWORD})
    step("admin creates w3", ADMIN, "POST", "/api/3.0/mlflow/workspaces", json={"name": W3})
    made = step("admin creates in default", ADMIN, "POST", "/api/2.0/mlflow/experiments/create", json={"name": "e-default"})
    other = step("admin creates in w3", ADMIN, "POST", "/api/2.0/mlflow/experiments/create", W3, json={"name": "e-three"})
    step("dave lists workspaces", DAVE, "GET", "/api/3.0/mlflow/workspaces")
    step("dave gets default (admin-only)", DAVE, "GET", "/api/3.0/mlflow/workspaces/default")
    step("dave reads in default", DAVE, "GET", "/api/2.0/mlflow/experiments/get", params={"experiment_id": made["experiment_id"]})
    step("dave renames in default", DAVE, "POST", "/api/2.0/mlflow/experiments/update",
         json={"experiment_id": made["experiment_id"], "new_name": "e-renamed"})  # fmt: skip
    step("dave creates in default (READ cannot use)", DAVE, "POST", "/api/2.0/mlflow/experiments/create", json={"name": "e-dave"})
    step("dave searches default", DAVE, "POST", "/api/2.0/mlflow/experiments/search", json={"max_results": 10})
    step("dave reads in w3", DAVE, "GET", "/api/2.0/mlflow/experiments/get", W3, params={"experiment_id": other["experiment_id"]})
    step("dave searches w3", DAVE, "POST", "/api/2.0/mlflow/experiments/search", W3, json={"max_results": 10})
    step("dave lists users in default", DAVE, "GET", "/api/2.0/mlflow/users/list")
    return out
