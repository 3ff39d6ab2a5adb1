"""The stock mlflow client against the basic-auth runtime: MLFLOW_TRACKING_USERNAME/PASSWORD, the
AuthServiceClient of get_app_client("basic-auth"), search results filtered to what a user
may read, artifacts, the browser's /login, and the authorizer's cache."""

from __future__ import annotations

import base64
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import mlflow
import pytest
import requests
from mlflow.exceptions import MlflowException, RestException
from mlflow.server import get_app_client

from tests.auth.conftest import ADMIN, ADMIN_PASSWORD
from tests.conftest import unique

PASSWORD = "a-long-password-1"


@contextmanager
def as_user(username: str, password: str = PASSWORD) -> Iterator[None]:
    saved = {k: os.environ.get(k) for k in ("MLFLOW_TRACKING_USERNAME", "MLFLOW_TRACKING_PASSWORD")}
    os.environ["MLFLOW_TRACKING_USERNAME"], os.environ["MLFLOW_TRACKING_PASSWORD"] = username, password
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@pytest.fixture
def users(basic_server: str) -> tuple[str, str]:
    owner, other = unique("owner"), unique("other")
    with as_user(ADMIN, ADMIN_PASSWORD):
        auth = get_app_client("basic-auth", tracking_uri=basic_server)
        auth.create_user(owner, PASSWORD)
        auth.create_user(other, PASSWORD)
    return owner, other


def test_auth_service_client_user_lifecycle(basic_server: str) -> None:
    name = unique("u")
    with as_user(ADMIN, ADMIN_PASSWORD):
        auth = get_app_client("basic-auth", tracking_uri=basic_server)
        created = auth.create_user(name, PASSWORD)
        assert (created.username, created.is_admin) == (name, False)
        fetched = auth.get_user(name)
        assert (fetched.id, fetched.username, fetched.is_admin) == (created.id, name, False)
        auth.update_user_admin(name, True)
        assert auth.get_user(name).is_admin is True
        auth.update_user_password(name, "another-password-1")
    with as_user(name, "another-password-1"):
        client = mlflow.MlflowClient(basic_server)
        assert client.get_experiment("0").name == "Default"
    with as_user(name, PASSWORD), pytest.raises(MlflowException, match="401"):
        mlflow.MlflowClient(basic_server).get_experiment("0")
    with as_user(ADMIN, ADMIN_PASSWORD):
        auth.delete_user(name)
        with pytest.raises(RestException, match="RESOURCE_DOES_NOT_EXIST"):
            auth.get_user(name)


def test_real_client_with_credentials_logs_and_owns_what_it_creates(basic_server: str, users: tuple[str, str], tmp_path: Path) -> None:
    owner, other = users
    with as_user(owner):
        mlflow.set_tracking_uri(basic_server)
        experiment_id = mlflow.create_experiment(unique("owned"))
        with mlflow.start_run(experiment_id=experiment_id) as run:
            mlflow.log_param("p", 1)
            mlflow.log_metric("m", 0.5)
            (tmp_path / "notes.txt").write_text("hello")
            mlflow.log_artifact(str(tmp_path / "notes.txt"))
        auth = get_app_client("basic-auth", tracking_uri=basic_server)
        permission = auth.get_user_permission(owner, "experiment", experiment_id)
        assert (permission.permission, permission.allowed) == ("MANAGE", True)
        auth.grant_user_permission(other, "experiment", experiment_id, "READ")
    with as_user(other):
        client = mlflow.MlflowClient(basic_server)
        assert client.get_run(run.info.run_id).data.params == {"p": "1"}
        # READ: artifacts can be listed and downloaded, not written.
        assert [f.path for f in client.list_artifacts(run.info.run_id)] == ["notes.txt"]
        assert Path(client.download_artifacts(run.info.run_id, "notes.txt", str(tmp_path / "dl"))).read_text() == "hello"
        # An upload is refused before anything is written (the client cannot parse MLflow's plain-text 403
        # on this route either, so the route is checked over HTTP).
        root = run.info.artifact_uri.split(":", 1)[1].lstrip("/")
        refused = requests.put(
            f"{basic_server}/api/2.0/mlflow-artifacts/artifacts/{root}/notes.txt", data=b"overwritten", auth=(other, PASSWORD), timeout=30
        )
        assert (refused.status_code, refused.text) == (403, "Permission denied")
        assert Path(client.download_artifacts(run.info.run_id, "notes.txt", str(tmp_path / "again"))).read_text() == "hello"
        with pytest.raises(MlflowException, match="403"):
            client.log_param(run.info.run_id, "q", 2)
    with as_user(owner):
        auth = get_app_client("basic-auth", tracking_uri=basic_server)
        auth.revoke_user_permission(other, "experiment", experiment_id)
        auth.grant_user_permission(other, "experiment", experiment_id, "EDIT")
    with as_user(other):
        mlflow.MlflowClient(basic_server).log_param(run.info.run_id, "q", 2)


def test_search_results_are_filtered_to_readable_resources(basic_server: str, users: tuple[str, str]) -> None:
    owner, other = users
    prefix = unique("filter")
    with as_user(owner):
        client = mlflow.MlflowClient(basic_server)
        experiment_ids = [client.create_experiment(f"{prefix}-{i}") for i in range(5)]
        run_ids = [client.create_run(experiment_id).info.run_id for experiment_id in experiment_ids]
        models = [client.create_registered_model(f"{prefix}-m{i}").name for i in range(3)]
        for model in models:
            client.create_model_version(model, "s3://bucket/model")
        auth = get_app_client("basic-auth", tracking_uri=basic_server)
        hidden = experiment_ids[1::2]
        for experiment_id in hidden:
            auth.grant_user_permission(other, "experiment", experiment_id, "DENY")
        auth.grant_user_permission(other, "registered_model", models[0], "DENY")
    with as_user(other):
        client = mlflow.MlflowClient(basic_server)
        # Pages of 1 are refilled past the hidden experiments, as MLflow's filter_search_experiments does.
        seen, token = [], None
        while True:
            page = client.search_experiments(filter_string=f"name LIKE '{prefix}-%'", max_results=1, page_token=token)
            seen += [e.experiment_id for e in page]
            assert len(page) == 1 or not page.token
            token = page.token
            if not token:
                break
        assert sorted(seen) == sorted(set(experiment_ids) - set(hidden))
        runs = client.search_runs(experiment_ids)
        assert {r.info.run_id for r in runs} == {run_ids[i] for i in (0, 2, 4)}
        assert client.search_runs(hidden) == []
        names = {m.name for m in client.search_registered_models(filter_string=f"name LIKE '{prefix}-%'")}
        assert names == set(models[1:])
        versions = client.search_model_versions(f"name LIKE '{prefix}-%'")
        assert {v.name for v in versions} == set(models[1:])
        with pytest.raises(MlflowException, match="403"):
            client.get_experiment(hidden[0])
    with as_user(ADMIN, ADMIN_PASSWORD):
        # Admins are not restrictable.
        everything = mlflow.MlflowClient(basic_server).search_experiments(filter_string=f"name LIKE '{prefix}-%'")
        assert len(everything) == 5


def test_browser_login_challenges_then_redirects(basic_server: str) -> None:
    response = requests.get(f"{basic_server}/login", timeout=30, allow_redirects=False)
    assert response.status_code == 401 and response.headers["WWW-Authenticate"] == 'Basic realm="mlflow"'
    wrong = requests.get(f"{basic_server}/login", auth=(ADMIN, "wrong-password-1"), timeout=30, allow_redirects=False)
    assert wrong.status_code == 401
    right = requests.get(f"{basic_server}/login", auth=(ADMIN, ADMIN_PASSWORD), timeout=30, allow_redirects=False)
    assert right.status_code == 302 and right.headers["Location"] == "/"
    # The credentials a browser then sends with every request (Basic, cached for the realm) are all it needs.
    token = base64.b64encode(f"{ADMIN}:{ADMIN_PASSWORD}".encode()).decode()
    current = requests.get(f"{basic_server}/api/2.0/mlflow/users/current", headers={"Authorization": f"Basic {token}"}, timeout=30)
    assert current.json() == {"user": {"id": 1, "username": ADMIN, "is_admin": True}, "is_basic_auth": True}


def test_list_users_and_permissions(basic_server: str, users: tuple[str, str]) -> None:
    owner, other = users
    with as_user(owner):
        experiment_id = mlflow.MlflowClient(basic_server).create_experiment(unique("listed"))
        listed = requests.get(f"{basic_server}/api/2.0/mlflow/users/list", auth=(owner, PASSWORD), timeout=30).json()["users"]
        assert {owner, other, ADMIN} <= {u["username"] for u in listed}
        mine = requests.get(f"{basic_server}/api/3.0/mlflow/users/current/permissions", auth=(owner, PASSWORD), timeout=30).json()
        assert mine["is_admin"] is False
        assert {(p["resource_type"], p["resource_pattern"], p["permission"]) for p in mine["permissions"]} == {
            ("experiment", experiment_id, "MANAGE")
        }
    theirs = requests.get(
        f"{basic_server}/api/3.0/mlflow/users/permissions/list", params={"username": owner}, auth=(other, PASSWORD), timeout=30
    )
    assert theirs.status_code == 403
