"""``GET /api/2.0/mlflow/artifacts/list`` (a run's artifacts, as older clients and the UI list them).

Driven through the real client's REST layer (``call_endpoint`` parses the answer into ``ListArtifacts``),
compared with MLflow's own server (its Flask app on sqlite, ``tests/mlflow_reference``) holding the same
files under the same run-relative paths.
"""

from __future__ import annotations

from typing import Any

import pytest
import requests
from mlflow.exceptions import RestException
from mlflow.protos.service_pb2 import ListArtifacts
from mlflow.utils.proto_json_utils import message_to_json
from mlflow.utils.rest_utils import MlflowHostCreds, call_endpoint

from tests.conftest import unique
from tests.mlflow_reference import reference_server

pytestmark = pytest.mark.e2e

ROUTE = "/api/2.0/mlflow/artifacts/list"
FILES = {"model/MLmodel": "flavors: {}\n", "model/data/weights.bin": "0123456789", "notes ü 1.txt": "hello", "top.json": "{}"}


def _list(server: str, run_id: str, path: str | None = None) -> ListArtifacts.Response:
    body: dict[str, Any] = {"run_id": run_id} | ({"path": path} if path is not None else {})
    return call_endpoint(MlflowHostCreds(server), ROUTE, "GET", message_to_json(ListArtifacts(**body)), ListArtifacts.Response())


def _ours(server: str, client) -> tuple[str, str]:
    """A run on our server holding FILES; (run_id, its artifact_uri)."""
    experiment_id = client.create_experiment(unique("list"))
    run = client.create_run(experiment_id)
    for name, text in FILES.items():
        client.log_text(run.info.run_id, text, name)
    return run.info.run_id, run.info.artifact_uri


def _reference() -> tuple[str, str]:
    """The same files under a run of MLflow's own server (written where its artifact store keeps them)."""
    ref = reference_server()
    status, body = ref.call("POST", "/api/2.0/mlflow/experiments/create", {"name": unique("list")})
    assert status == 200
    status, body = ref.call("POST", "/api/2.0/mlflow/runs/create", {"experiment_id": body["experiment_id"]})
    run = body["run"]["info"]
    root = ref.artifacts / run["artifact_uri"].removeprefix("mlflow-artifacts:/")
    for name, text in FILES.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return run["run_id"], run["artifact_uri"]


def _reference_list(run_id: str, path: str | None = None) -> tuple[int, dict[str, Any]]:
    query = {"run_id": run_id} | ({"path": path} if path is not None else {})
    return reference_server().call("GET", ROUTE, query=query)


def _ours_raw(server: str, query: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    response = requests.get(f"{server}{ROUTE}", params=query, timeout=30)
    return response.status_code, response.json()


def test_listing_matches_mlflow_server(server: str, client) -> None:
    run_id, root_uri = _ours(server, client)
    ref_run_id, ref_root = _reference()
    for path in (None, "", "model", "model/data", "model/", "./model", "missing", "top.json"):
        ours = _list(server, run_id, path)
        status, theirs = _reference_list(ref_run_id, path)
        assert status == 200, (path, theirs)
        assert ours.root_uri == root_uri
        assert theirs["root_uri"] == ref_root
        mine = [{"path": f.path, "is_dir": f.is_dir} | ({"file_size": f.file_size} if f.HasField("file_size") else {}) for f in ours.files]
        # MLflow's local store lists in directory order; S3 lists in key order.
        assert sorted(mine, key=lambda f: f["path"]) == sorted(theirs.get("files", []), key=lambda f: f["path"]), path
    # A run-relative path of a nested entry, directly usable by the next listing (as the UI walks the tree).
    assert [f.path for f in _list(server, run_id, "model").files] == ["model/MLmodel", "model/data"]


def test_bad_paths_and_unknown_runs_answer_as_mlflow(server: str, client) -> None:
    run_id, _ = _ours(server, client)
    ref_run_id, _ = _reference()
    cases = [
        {"run_id": "{run}", "path": "../x"},
        {"run_id": "{run}", "path": "model/../../x"},
        {"run_id": "{run}", "path": "/etc"},
        {"run_id": "{run}", "path": "%2e%2e/x"},
        {"run_id": "{run}", "path": "a#b"},
        {"run_id": "0" * 32},
        {"run_id": "not-a-run"},
        {"path": "model"},
        {"run_id": ""},
    ]
    for case in cases:
        status, body = _ours_raw(server, {k: v.replace("{run}", run_id) for k, v in case.items()})
        ref_status, ref_body = reference_server().call("GET", ROUTE, query={k: v.replace("{run}", ref_run_id) for k, v in case.items()})
        assert (status, body["error_code"]) == (ref_status, ref_body["error_code"]), (case, body, ref_body)
        assert body["message"].replace(run_id, "<run>") == ref_body["message"].replace(ref_run_id, "<run>"), case
    # Old clients send run_uuid alone: MLflow's required check of run_id falls back to it.
    assert _ours_raw(server, {"run_uuid": run_id}) == _ours_raw(server, {"run_id": run_id})
    with pytest.raises(RestException) as excinfo:
        _list(server, run_id, "../secrets")
    assert excinfo.value.error_code == "INVALID_PARAMETER_VALUE" and "Invalid path" in str(excinfo.value)


def test_run_with_s3_root_is_refused_clearly(server: str, client) -> None:
    experiment_id = client.create_experiment(unique("s3root"), artifact_location="s3://elsewhere/prefix")
    run = client.create_run(experiment_id)
    status, body = _ours_raw(server, {"run_id": run.info.run_id})
    assert status == 400 and body["error_code"] == "INVALID_PARAMETER_VALUE"
    assert "s3://elsewhere/prefix" in body["message"]


def _reference_logged_model() -> tuple[str, str]:
    ref = reference_server()
    _, experiment = ref.call("POST", "/api/2.0/mlflow/experiments/create", {"name": unique("lm-list")})
    _, body = ref.call("POST", "/api/2.0/mlflow/logged-models", {"experiment_id": experiment["experiment_id"]})
    info = body["model"]["info"]
    root = ref.artifacts / info["artifact_uri"].removeprefix("mlflow-artifacts:/")
    for name, text in FILES.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return info["model_id"], info["artifact_uri"]


def test_logged_model_listing_matches_mlflow_server(server: str, client, tmp_path) -> None:
    from mlflow.protos.service_pb2 import ListLoggedModelArtifacts

    experiment_id = client.create_experiment(unique("lm-list"))
    model = client.create_logged_model(experiment_id)
    for name, text in FILES.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    client.log_model_artifacts(model.model_id, str(tmp_path))
    ref_id, ref_root = _reference_logged_model()
    route = "/api/2.0/mlflow/logged-models/{}/artifacts/directories"
    for path in (None, "model", "model/data", "missing"):
        query = {"artifact_directory_path": path} if path is not None else {}
        parsed = call_endpoint(
            MlflowHostCreds(server),
            route.format(model.model_id),
            "GET",
            message_to_json(ListLoggedModelArtifacts(**query)),
            ListLoggedModelArtifacts.Response(),
        )
        assert parsed.root_uri == model.artifact_location
        ours = requests.get(f"{server}{route.format(model.model_id)}", params=query, timeout=30).json()
        status, theirs = reference_server().call("GET", route.format(ref_id), query=query)
        assert status == 200 and theirs["root_uri"] == ref_root
        assert sorted(ours.get("files", []), key=lambda f: f["path"]) == sorted(theirs.get("files", []), key=lambda f: f["path"]), path
    for model_id, bad in ((model.model_id, {"artifact_directory_path": "../x"}), ("m-" + "0" * 32, {})):
        mine = requests.get(f"{server}{route.format(model_id)}", params=bad, timeout=30)
        ref_model = ref_id if model_id == model.model_id else model_id
        status, theirs = reference_server().call("GET", route.format(ref_model), query=bad)
        assert (mine.status_code, mine.json()) == (status, theirs)
