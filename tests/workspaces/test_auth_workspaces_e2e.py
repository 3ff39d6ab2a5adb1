"""Basic auth with workspaces on, as MLflow 3.17's auth app: the scenario of ``auth_scenario.py`` on our runtime
against MLflow's recorded answers, and (long run) MLflow's basic-auth app against the same answers.

And a grant on a registered model or prompt holds in its own workspace only: model names are unique per
workspace, so two users can each create (and so MANAGE) a model of the same name in two workspaces (each a
member of both through the workspace's seeded ``user`` role, which lets them create there); neither may then
manage the other's, and deleting one model drops only its own grants."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from tests.auth.conftest import ADMIN, ADMIN_PASSWORD, basic_env, basic_runtime, mlflow_basic_auth_server
from tests.conftest import unique
from tests.workspaces.auth_expected import EXPECTED, EXPECTED_DEFAULT_ACCESS
from tests.workspaces.auth_scenario import caller, play, play_default_access
from tests.workspaces.support import HEADER, assert_same

pytestmark = [pytest.mark.e2e]

PASSWORD = "a-long-password-" + unique("p")[-6:]


@pytest.fixture(scope="module")
def basic_workspaces() -> Iterator[str]:
    with basic_runtime(env={**basic_env(), "MLFLOW_ENABLE_WORKSPACES": "true"}) as url:
        yield url


def test_workspace_permissions_and_roles(basic_workspaces: str) -> None:
    assert_same(play(caller(basic_workspaces)), EXPECTED)


@pytest.mark.long
def test_mlflow_answers_the_same() -> None:
    """The recorded answers are MLflow's: its basic-auth app with workspaces on, fresh, plays the scenario."""
    with mlflow_basic_auth_server({"MLFLOW_ENABLE_WORKSPACES": "true"}) as url:
        assert_same(play(caller(url)), EXPECTED)


def test_default_workspace_access() -> None:
    """MLflow's opt-in ``grant_default_workspace_access`` (``AUTH_GRANT_DEFAULT_WORKSPACE_ACCESS``)."""
    env = {**basic_env(), "MLFLOW_ENABLE_WORKSPACES": "true", "AUTH_GRANT_DEFAULT_WORKSPACE_ACCESS": "true"}
    with basic_runtime(env=env) as url:
        assert_same(play_default_access(caller(url)), EXPECTED_DEFAULT_ACCESS)


@pytest.mark.long
def test_mlflow_answers_the_same_with_default_workspace_access(tmp_path: Path) -> None:
    """MLflow's basic-auth app configured with ``grant_default_workspace_access = true`` (its own ini, that one
    setting changed) gives the recorded answers."""
    from mlflow.server import auth

    shipped = (Path(auth.__file__).parent / "basic_auth.ini").read_text()
    assert "grant_default_workspace_access = false" in shipped
    ini = tmp_path / "basic_auth.ini"
    ini.write_text(shipped.replace("grant_default_workspace_access = false", "grant_default_workspace_access = true"))
    with mlflow_basic_auth_server({"MLFLOW_ENABLE_WORKSPACES": "true", "MLFLOW_AUTH_CONFIG_PATH": str(ini)}) as url:
        assert_same(play_default_access(caller(url)), EXPECTED_DEFAULT_ACCESS)


def _call(url: str, user: str, method: str, path: str, workspace: str | None = None, **kwargs: Any) -> tuple[int, Any]:
    password = ADMIN_PASSWORD if user == ADMIN else PASSWORD
    headers = {HEADER: workspace} if workspace else {}
    response = requests.request(method, f"{url}{path}", auth=(user, password), headers=headers, timeout=60, **kwargs)
    try:
        body = response.json()
    except ValueError:
        body = {}
    return response.status_code, body.get("error_code") if isinstance(body, dict) else None


def test_model_grants_stay_in_their_workspace(basic_workspaces: str) -> None:
    url, suffix = basic_workspaces, unique("a")[-6:]
    team_a, team_b = f"auth-a-{suffix}", f"auth-b-{suffix}"
    alice, bob = f"alice-{suffix}", f"bob-{suffix}"
    for name in (team_a, team_b):
        assert _call(url, ADMIN, "POST", "/api/3.0/mlflow/workspaces", json={"name": name})[0] == 201
    for user in (alice, bob):
        assert _call(url, ADMIN, "POST", "/api/2.0/mlflow/users/create", json={"username": user, "password": PASSWORD})[0] == 200

    for workspace in (team_a, team_b):
        roles = requests.get(
            f"{url}/api/3.0/mlflow/roles/list", params={"workspace": workspace}, auth=(ADMIN, ADMIN_PASSWORD), timeout=60
        ).json()["roles"]
        user_role = next(role["id"] for role in roles if role["name"] == "user")
        for user in (alice, bob):
            assert _call(url, ADMIN, "POST", "/api/3.0/mlflow/roles/assign", json={"username": user, "role_id": user_role})[0] == 200

    create, update = "/api/2.0/mlflow/registered-models/create", "/api/2.0/mlflow/registered-models/update"
    delete = "/api/2.0/mlflow/registered-models/delete"
    assert _call(url, alice, "POST", create, team_a, json={"name": "shared"})[0] == 200  # alice MANAGEs A's
    assert _call(url, bob, "POST", create, team_b, json={"name": "shared"})[0] == 200  # bob MANAGEs B's

    # Bob's grant on B's model does not reach A's (the workspace's USE lets him create, not read others' models).
    assert _call(url, bob, "GET", "/api/2.0/mlflow/registered-models/get", team_a, params={"name": "shared"})[0] == 403
    assert _call(url, bob, "PATCH", update, team_a, json={"name": "shared", "description": "x"})[0] == 403
    assert _call(url, bob, "DELETE", delete, team_a, json={"name": "shared"})[0] == 403
    assert _call(url, alice, "PATCH", update, team_b, json={"name": "shared", "description": "x"})[0] == 403

    # Deleting B's model drops B's grants only: alice still manages A's.
    assert _call(url, bob, "DELETE", delete, team_b, json={"name": "shared"})[0] == 200
    assert _call(url, alice, "PATCH", update, team_a, json={"name": "shared", "description": "mine"})[0] == 200
    assert _call(url, alice, "DELETE", delete, team_a, json={"name": "shared"})[0] == 200
