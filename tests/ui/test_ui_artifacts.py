"""What the UI's artifact browser reads: a run's listing (``artifacts/list``) and single files of runs,
model versions and logged models, each a redirect to a presigned S3 URL (text shown inline as text/plain)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import requests

from tests.conftest import unique

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def logged(server: str, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    import mlflow

    client = mlflow.MlflowClient(server, registry_uri=server)
    experiment_id = client.create_experiment(unique("ui-art"))
    run = client.create_run(experiment_id)
    files: Path = tmp_path_factory.mktemp("files")
    (files / "notes.txt").write_text("hello text\n")
    (files / "page.html").write_text("<script>alert(1)</script>")
    (files / "blob.bin").write_bytes(b"\x00\x01\x02")
    (files / "MLmodel").write_text("flavors: {}\n")
    client.log_artifact(run.info.run_id, str(files / "notes.txt"), "docs")
    client.log_artifact(run.info.run_id, str(files / "page.html"), "docs")
    client.log_artifact(run.info.run_id, str(files / "blob.bin"))
    client.log_artifact(run.info.run_id, str(files / "MLmodel"), "model")
    name = unique("ui-model")
    client.create_registered_model(name)
    client.create_model_version(name, f"{run.info.artifact_uri}/model", run_id=run.info.run_id)
    return {"client": client, "run": run, "model": name, "experiment_id": experiment_id}


def _redirect(server: str, route: str, **params: str) -> str:
    answer = requests.get(f"{server}{route}", params=params, allow_redirects=False, timeout=30)
    assert answer.status_code == 302, answer.text
    return answer.headers["Location"]


def test_run_listing_like_mlflow(server: str, logged: dict[str, Any]) -> None:
    run = logged["run"]
    root = requests.get(f"{server}/ajax-api/2.0/mlflow/artifacts/list", params={"run_uuid": run.info.run_id}, timeout=30).json()
    assert root["root_uri"] == run.info.artifact_uri
    assert root["files"] == [
        {"path": "blob.bin", "is_dir": False, "file_size": 3},
        {"path": "docs", "is_dir": True},
        {"path": "model", "is_dir": True},
    ]
    docs = requests.get(f"{server}/api/2.0/mlflow/artifacts/list", params={"run_id": run.info.run_id, "path": "docs"}, timeout=30).json()
    assert [f["path"] for f in docs["files"]] == ["docs/notes.txt", "docs/page.html"]
    # The client's own listing agrees (it reads the mlflow-artifacts routes).
    assert [f.path for f in logged["client"].list_artifacts(run.info.run_id, "docs")] == ["docs/notes.txt", "docs/page.html"]
    empty = requests.get(f"{server}/api/2.0/mlflow/artifacts/list", params={"run_id": run.info.run_id, "path": "none"}, timeout=30)
    assert empty.json() == {"root_uri": run.info.artifact_uri}


def test_listing_errors(server: str) -> None:
    missing_run = requests.get(f"{server}/api/2.0/mlflow/artifacts/list", params={"run_id": "0" * 32}, timeout=30)
    assert missing_run.status_code == 404 and missing_run.json()["error_code"] == "RESOURCE_DOES_NOT_EXIST"
    no_run = requests.get(f"{server}/api/2.0/mlflow/artifacts/list", timeout=30)
    assert no_run.status_code == 400 and no_run.json()["error_code"] == "INVALID_PARAMETER_VALUE"


def test_text_files_open_inline_as_plain_text(server: str, logged: dict[str, Any]) -> None:
    run_id = logged["run"].info.run_id
    text = requests.get(_redirect(server, "/get-artifact", path="docs/notes.txt", run_uuid=run_id), timeout=30)
    assert text.text == "hello text\n" and text.headers["Content-Type"].startswith("text/plain")
    assert text.headers["Content-Disposition"] == "inline"
    # HTML is text too: shown as text/plain, never rendered.
    page = requests.get(_redirect(server, "/get-artifact", path="docs/page.html", run_id=run_id), timeout=30)
    assert page.headers["Content-Type"].startswith("text/plain") and "<script>" in page.text
    blob = requests.get(_redirect(server, "/get-artifact", path="blob.bin", run_id=run_id), timeout=30)
    assert blob.content == b"\x00\x01\x02" and blob.headers["Content-Disposition"].startswith("attachment")


def test_get_artifact_errors(server: str, logged: dict[str, Any]) -> None:
    run_id = logged["run"].info.run_id
    cases = [
        ({"run_uuid": run_id, "path": "docs/none.txt"}, 404, "RESOURCE_DOES_NOT_EXIST"),
        ({"run_uuid": run_id}, 400, "INVALID_PARAMETER_VALUE"),
        ({"run_uuid": run_id, "path": "../../other"}, 400, "INVALID_PARAMETER_VALUE"),
        ({"run_uuid": "0" * 32, "path": "a.txt"}, 404, "RESOURCE_DOES_NOT_EXIST"),
    ]
    for params, status, code in cases:
        answer = requests.get(f"{server}/get-artifact", params=params, allow_redirects=False, timeout=30)
        assert (answer.status_code, answer.json()["error_code"]) == (status, code), params


def test_model_version_artifact(server: str, logged: dict[str, Any]) -> None:
    location = _redirect(server, "/model-versions/get-artifact", name=logged["model"], version="1", path="MLmodel")
    assert requests.get(location, timeout=30).text == "flavors: {}\n"
    missing = requests.get(
        f"{server}/model-versions/get-artifact", params={"name": logged["model"], "version": "7", "path": "MLmodel"}, timeout=30
    )
    assert missing.status_code == 404 and missing.json()["error_code"] == "RESOURCE_DOES_NOT_EXIST"


def test_logged_model_artifact(server: str, logged: dict[str, Any], tmp_path: Path) -> None:
    client = logged["client"]
    model = client.create_logged_model(logged["experiment_id"], name="ui-logged")
    (tmp_path / "MLmodel").write_text("logged: yes\n")
    client.log_model_artifacts(model.model_id, str(tmp_path))
    route = f"/ajax-api/2.0/mlflow/logged-models/{model.model_id}/artifacts/files"
    assert requests.get(_redirect(server, route, artifact_file_path="MLmodel"), timeout=30).text == "logged: yes\n"
    no_path = requests.get(f"{server}{route}", timeout=30)
    assert no_path.status_code == 400 and no_path.json()["error_code"] == "BAD_REQUEST"
    unknown = requests.get(
        f"{server}/ajax-api/2.0/mlflow/logged-models/m-{'0' * 32}/artifacts/files", params={"artifact_file_path": "x"}, timeout=30
    )
    assert unknown.status_code == 404
