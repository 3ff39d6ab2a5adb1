"""``POST /ajax-api/2.0/mlflow/upload-artifact`` (the web UI's one-request upload), compared with MLflow's own server
(``tests/mlflow_reference``: sqlite, ``mlflow-artifacts:/`` served from a local directory)."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import mlflow
import pytest
import requests

from tests.conftest import unique
from tests.mlflow_reference import reference_server

pytestmark = pytest.mark.e2e

UPLOAD = "/ajax-api/2.0/mlflow/upload-artifact"


def _run(base: str) -> str:
    client = mlflow.MlflowClient(base)
    return client.create_run(client.create_experiment(unique("ui-upload"))).info.run_id


def _post(base: str, params: dict[str, str], data: bytes, **kwargs: Any) -> tuple[int, Any]:
    response = requests.post(f"{base}{UPLOAD}", params=params, data=data, timeout=60, **kwargs)
    if not response.content:
        return response.status_code, response.headers.get("content-type")
    return response.status_code, response.json()


def test_the_uploaded_file_reads_back_as_from_mlflow(server: str) -> None:
    table = b'{"columns": ["a"], "data": [[1]]}'
    seen = []
    for base in (server, reference_server().url):
        run_id = _run(base)
        answers = [
            _post(base, {"run_uuid": run_id, "path": "eval_results_table.json"}, table, headers={"Content-Type": "application/json"}),
            _post(base, {"run_uuid": run_id, "path": "nested/dir/note.txt"}, b"hello"),
        ]
        client = mlflow.MlflowClient(base)
        listing = [(f.path, f.is_dir, f.file_size) for f in client.list_artifacts(run_id)]
        nested = [(f.path, f.file_size) for f in client.list_artifacts(run_id, "nested/dir")]
        with tempfile.TemporaryDirectory() as directory:
            content = Path(client.download_artifacts(run_id, "eval_results_table.json", directory)).read_bytes()
        seen.append((answers, listing, nested, content))
    assert seen[0] == seen[1]
    assert seen[0][0] == [(200, "application/json")] * 2 and seen[0][3] == table


@pytest.mark.parametrize(
    ("params", "data"),
    [
        ({"path": "x.json"}, b"{}"),
        ({"run_uuid": "$run"}, b"{}"),
        ({"run_id": "$run", "path": "x.json"}, b"{}"),
        ({"run_uuid": "$run", "path": "../outside.json"}, b"{}"),
        ({"run_uuid": "$run", "path": "%2e%2e/outside.json"}, b"{}"),
        ({"run_uuid": "$run", "path": "empty.json"}, b""),
        ({"run_uuid": "0" * 32, "path": "x.json"}, b"{}"),
    ],
    ids=["no-run", "no-path", "run_id-is-not-read", "dot-dot", "encoded-dot-dot", "no-data", "unknown-run"],
)
def test_bad_uploads_answer_as_mlflow(server: str, params: dict[str, str], data: bytes) -> None:
    answers = []
    for base in (server, reference_server().url):
        run_id = _run(base)
        answers.append(_post(base, {k: run_id if v == "$run" else v for k, v in params.items()}, data))
    assert answers[0] == answers[1]
    assert answers[0][0] in (400, 404)


def test_a_body_past_the_function_limit_is_refused_in_mlflows_words(server: str) -> None:
    # MLflow takes up to 10 MB here; a function's request holds 6 MB (4/3 of that for a base64 body), so the
    # limit is the proxied PUT's (4 MiB), answered as MLflow answers an artifact past its own limit.
    run_id = _run(server)
    over = b"x" * (4 * 1024 * 1024 + 1)
    assert _post(server, {"run_uuid": run_id, "path": "big.bin"}, over) == (
        400,
        {
            "error_code": "INVALID_PARAMETER_VALUE",
            "message": "Artifact size is too large. Max size is 4MB.",
            "sqlstate": "KAM00",
            "error_class": "INVALID_PARAMETER_VALUE",
        },
    )
    assert _post(server, {"run_uuid": run_id, "path": "fits.bin"}, over[:-1]) == (200, "application/json")
    assert [f.path for f in mlflow.MlflowClient(server).list_artifacts(run_id)] == ["fits.bin"]
    # Past the request cap, the front answers before any function (API Gateway does the same deployed).
    assert _post(server, {"run_uuid": run_id, "path": "huge.bin"}, b"x" * (11 * 1024 * 1024))[0] == 413


def test_a_deleted_runs_root_is_not_written(server: str) -> None:
    client = mlflow.MlflowClient(server)
    run_id = _run(server)
    client.delete_run(run_id)
    status, body = _post(server, {"run_uuid": run_id, "path": "late.json"}, b"{}")
    assert status == 400 and body["error_code"] == "INVALID_PARAMETER_VALUE", body
    client.restore_run(run_id)
    assert client.list_artifacts(run_id) == []
