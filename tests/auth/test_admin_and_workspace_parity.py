"""Issue 41's basic-auth cases, each played against ours and MLflow's own basic-auth app (``mlflow server
--app-name basic-auth``; with ``MLFLOW_ENABLE_WORKSPACES`` for the workspace case), which must answer alike:

- deleting the demo data is an admin's (MLflow's ``DEMO_DELETE: sender_is_admin``), and the job that deletes it
  cannot be submitted around that;
- a workspace member logs, lists and reads artifacts of their own run in a non-default workspace, whose proxied
  paths start ``workspaces/<workspace>/`` (a user with no role there is still refused);
- an explicit DENY on a gateway endpoint hides its configuration (``validate_can_read_gateway_endpoint``).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import mlflow
import pytest
import requests
from mlflow import MlflowClient

from tests.auth.conftest import ADMIN, ADMIN_PASSWORD, WITH_MLFLOW, basic_env, basic_runtime, mlflow_basic_auth_server
from tests.conftest import unique

pytestmark = [pytest.mark.e2e, WITH_MLFLOW]

PASSWORD = "a-long-password-" + unique("p")[-6:]
M2, M3, ART = "/api/2.0/mlflow", "/api/3.0/mlflow", "/api/2.0/mlflow-artifacts"
ADMIN_AUTH = (ADMIN, ADMIN_PASSWORD)
WORKSPACE_HEADER = "X-MLFLOW-WORKSPACE"


def _call(url: str, auth: tuple[str, str], method: str, path: str, workspace: str | None = None, **kwargs: Any) -> requests.Response:
    headers = {WORKSPACE_HEADER: workspace} if workspace else {}
    return requests.request(method, f"{url}{path}", auth=auth, headers=headers, timeout=120, **kwargs)


def _ok(response: requests.Response) -> Any:
    assert response.status_code in (200, 201), (response.status_code, response.text)
    return response.json() if response.content else {}


def _new_user(url: str) -> tuple[str, str]:
    user = (unique("u"), PASSWORD)
    _ok(_call(url, ADMIN_AUTH, "POST", f"{M2}/users/create", json={"username": user[0], "password": PASSWORD}))
    return user


# --- the demo data ---------------------------------------------------------------------------------------


def _demo_delete(url: str) -> list[int]:
    user = _new_user(url)
    return [_call(url, who, "POST", "/ajax-api/3.0/mlflow/demo/delete", json={}).status_code for who in (user, ADMIN_AUTH)]


def test_only_admins_delete_the_demo(basic_server: str, mlflow_server: str) -> None:
    assert _demo_delete(mlflow_server) == [403, 200]
    assert _demo_delete(basic_server) == [403, 200]


def test_the_demo_delete_job_is_the_admins_too(basic_server: str) -> None:
    """MLflow's jobs API knows no ``demo_delete`` (its "Invalid job name" for everyone); ours runs the demo's
    deletion as that job, so the job must not be a way around the route's admin check."""
    user = _new_user(basic_server)
    body = {"job_name": "demo_delete", "params": {}}
    refused = _call(basic_server, user, "POST", "/ajax-api/3.0/jobs/", json=body)
    assert refused.status_code == 403, refused.text
    jobs = _call(basic_server, ADMIN_AUTH, "POST", "/ajax-api/3.0/jobs/search", json={"job_name": "demo_delete"}).json().get("jobs", [])
    assert [job for job in jobs if job["creator"] == user[0]] == []  # nothing was queued
    assert _ok(_call(basic_server, ADMIN_AUTH, "POST", "/ajax-api/3.0/jobs/", json=body))["job_name"] == "demo_delete"


# --- a DENY on a gateway endpoint ----------------------------------------------------------------------------


def _gateway_deny(url: str) -> list[Any]:
    name = unique("deny")
    secret = _ok(
        _call(
            url,
            ADMIN_AUTH,
            "POST",
            f"{M3}/gateway/secrets/create",
            json={"secret_name": name, "secret_value": {"api_key": "sk-x"}, "provider": "openai"},
        )
    )["secret"]["secret_id"]
    definition = _ok(
        _call(
            url,
            ADMIN_AUTH,
            "POST",
            f"{M3}/gateway/model-definitions/create",
            json={"name": name, "secret_id": secret, "provider": "openai", "model_name": "gpt-4o"},
        )
    )["model_definition"]["model_definition_id"]
    config = {"model_definition_id": definition, "linkage_type": "PRIMARY", "weight": 1.0}
    endpoint_id = _ok(_call(url, ADMIN_AUTH, "POST", f"{M3}/gateway/endpoints/create", json={"name": name, "model_configs": [config]}))[
        "endpoint"
    ]["endpoint_id"]
    user = _new_user(url)

    def reads() -> list[Any]:
        by_id = _call(url, user, "GET", f"{M3}/gateway/endpoints/get", params={"endpoint_id": endpoint_id}).status_code
        by_name = _call(url, user, "GET", f"{M3}/gateway/endpoints/get", params={"name": name}).status_code
        listed = _call(url, user, "GET", f"{M3}/gateway/endpoints/list")
        bindings = _call(url, user, "GET", f"{M3}/gateway/endpoints/bindings/list", params={"endpoint_id": endpoint_id}).status_code
        return [by_id, by_name, listed.status_code, name in {e["name"] for e in listed.json().get("endpoints", [])}, bindings]

    before = reads()
    grant = {"username": user[0], "resource_type": "gateway_endpoint", "resource_id": endpoint_id, "permission": "DENY"}
    _ok(_call(url, ADMIN_AUTH, "POST", f"{M3}/users/permissions/grant", json=grant))
    all_bindings = _call(url, user, "GET", f"{M3}/gateway/endpoints/bindings/list").status_code
    return [before, reads(), all_bindings]


def test_a_denied_endpoint_is_not_read(basic_server: str, mlflow_server: str) -> None:
    expected = [[200, 200, 200, True, 200], [403, 403, 200, False, 403], 403]
    assert _gateway_deny(mlflow_server) == expected
    assert _gateway_deny(basic_server) == expected


# --- artifacts in a non-default workspace --------------------------------------------------------------------


@pytest.fixture(scope="module")
def workspace_servers(basic_server: str) -> Iterator[tuple[str, str]]:
    """(ours, MLflow's), both basic auth with workspaces on."""
    with basic_runtime(env={**basic_env(), "MLFLOW_ENABLE_WORKSPACES": "true"}) as ours:
        with mlflow_basic_auth_server({"MLFLOW_ENABLE_WORKSPACES": "true"}) as theirs:
            yield ours, theirs


def _member_of_new_workspace(url: str) -> tuple[str, tuple[str, str]]:
    workspace = unique("ws")
    assert _call(url, ADMIN_AUTH, "POST", f"{M3}/workspaces", json={"name": workspace}).status_code == 201
    user = _new_user(url)
    roles = _ok(_call(url, ADMIN_AUTH, "GET", f"{M3}/roles/list", params={"workspace": workspace}))["roles"]
    role_id = next(role["id"] for role in roles if role["name"] == "user")
    _ok(_call(url, ADMIN_AUTH, "POST", f"{M3}/roles/assign", json={"username": user[0], "role_id": role_id}))
    return workspace, user


def _workspace_artifacts(url: str, tmp: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    workspace, member = _member_of_new_workspace(url)
    outsider = _new_user(url)
    # The run's owner logs with the stock client, as a notebook would.
    monkeypatch.setenv("MLFLOW_TRACKING_USERNAME", member[0])
    monkeypatch.setenv("MLFLOW_TRACKING_PASSWORD", member[1])
    mlflow.set_workspace(workspace)
    try:
        client = MlflowClient(url)
        experiment_id = client.create_experiment(unique("ws-artifacts"))
        run = client.create_run(experiment_id)
        (tmp / "notes.txt").write_text("logged by the stock client")
        client.log_artifact(run.info.run_id, str(tmp / "notes.txt"))
        listed = [f.path for f in client.list_artifacts(run.info.run_id)]
        downloaded = Path(client.download_artifacts(run.info.run_id, "notes.txt", str(tmp))).read_text()
    finally:
        mlflow.set_workspace(None)
    root = run.info.artifact_uri.removeprefix("mlflow-artifacts:/").strip("/")

    def raw(user: tuple[str, str]) -> list[int]:
        put = _call(url, user, "PUT", f"{ART}/artifacts/{root}/raw.txt", workspace, data=b"raw bytes").status_code
        get = _call(url, user, "GET", f"{ART}/artifacts/{root}/notes.txt", workspace).status_code
        listing = _call(url, user, "GET", f"{ART}/artifacts", workspace, params={"path": root}).status_code
        return [put, get, listing]

    def not_refused(user: tuple[str, str]) -> list[bool]:
        """MLflow's local artifact store serves no multipart upload or presigned URL (ours always does): only
        whether the auth app lets the request through is compared."""
        create = _call(url, user, "POST", f"{ART}/mpu/create/{root}/big.bin", workspace, json={"path": "big.bin", "num_parts": 1})
        presigned = _call(url, user, "GET", f"{ART}/presigned/{root}/notes.txt", workspace)
        return [create.status_code not in (401, 403), presigned.status_code not in (401, 403)]

    return {
        "root_is_the_workspace's": root.startswith(f"workspaces/{workspace}/{experiment_id}/"),
        "client": (listed, downloaded),
        "member": raw(member) + not_refused(member),
        "outsider": raw(outsider) + not_refused(outsider),
    }


def test_members_use_artifacts_in_their_workspace(
    workspace_servers: tuple[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ours, theirs = workspace_servers
    expected = {
        "root_is_the_workspace's": True,
        "client": (["notes.txt"], "logged by the stock client"),
        "member": [200, 200, 200, True, True],
        "outsider": [403, 403, 403, False, False],
    }
    (tmp_path / "theirs").mkdir(), (tmp_path / "ours").mkdir()
    assert _workspace_artifacts(theirs, tmp_path / "theirs", monkeypatch) == expected
    assert _workspace_artifacts(ours, tmp_path / "ours", monkeypatch) == expected
