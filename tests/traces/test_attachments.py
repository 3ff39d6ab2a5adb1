"""Trace attachments (mlflow 3.17+): a binary span input the client uploads beside the trace, read back through
``get-trace-artifact?path=<uuid>`` (the UI's download), compared with MLflow's own server."""

from __future__ import annotations

import uuid
from typing import Any

import mlflow
import pytest
import requests
from mlflow import MlflowClient
from mlflow.tracing.attachments import Attachment

from tests.conftest import unique
from tests.mlflow_reference import reference_server

pytestmark = pytest.mark.usefixtures("tracing")

GET_TRACE_ARTIFACT = "/ajax-api/2.0/mlflow/get-trace-artifact"
PICTURE = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4


def _served(base: str) -> list[tuple[int, Any]]:
    mlflow.set_tracking_uri(base)
    mlflow.set_experiment(experiment_id=mlflow.create_experiment(unique("attachments")))
    with mlflow.start_span(name="look") as span:
        span.set_inputs({"image": Attachment(content_type="image/png", content_bytes=PICTURE), "question": "what is it?"})
    ref = MlflowClient(base).get_trace(span.trace_id).data.spans[0].inputs["image"]
    parsed = Attachment.parse_ref(ref)
    assert parsed is not None, ref
    attachment_id = str(parsed["attachment_id"])
    got = requests.get(f"{base}{GET_TRACE_ARTIFACT}", params={"request_id": span.trace_id, "path": attachment_id}, timeout=30)
    answers: list[tuple[int, Any]] = [(got.status_code, got.content)]
    refused = [
        (span.trace_id, "../x"),
        (span.trace_id, "not-a-uuid"),
        (span.trace_id, "ABCDEF00-0000-4000-8000-000000000007"),
        (span.trace_id, "%2e%2e/x"),
        ("", attachment_id),
        ("tr-" + "0" * 32, str(uuid.UUID(int=7))),
    ]
    for request_id, path in refused:
        response = requests.get(f"{base}{GET_TRACE_ARTIFACT}", params={"request_id": request_id, "path": path}, timeout=30)
        answers.append((response.status_code, response.json()))
    # An attachment that was never uploaded: MLflow's 404 names it "No such artifact: 'attachments/<id>'", ours is
    # the artifacts route's "Artifact '<key>' does not exist." (docs/compatibility.md): the code and status compared.
    missing = requests.get(f"{base}{GET_TRACE_ARTIFACT}", params={"request_id": span.trace_id, "path": str(uuid.UUID(int=7))}, timeout=30)
    answers.append((missing.status_code, missing.json()["error_code"]))
    return answers


def test_an_attachment_reads_back_and_bad_paths_are_refused_as_mlflow(server: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # A small file goes up in one proxied PUT, as for any user (the suite's minimum of 0 sends everything through
    # multipart, where 3.17's upload_attachment fails in the client: it puts a PosixPath into the JSON request).
    monkeypatch.delenv("MLFLOW_MULTIPART_UPLOAD_MINIMUM_FILE_SIZE")
    ours, theirs = _served(server), _served(reference_server().url)
    assert ours == theirs
    assert ours[0] == (200, PICTURE)
    assert [(status, body["error_code"], body.get("error_class")) for status, body in ours[1:-1]] == [
        (400, "INVALID_PARAMETER_VALUE", "INVALID_PARAMETER_VALUE"),
        (400, "INVALID_PARAMETER_VALUE", "ATTRIBUTE_NOT_FOUND"),
        (400, "INVALID_PARAMETER_VALUE", "ATTRIBUTE_NOT_FOUND"),
        (400, "INVALID_PARAMETER_VALUE", "INVALID_PARAMETER_VALUE"),
        (400, "BAD_REQUEST", "INVALID_PARAMETER_VALUE"),
        (404, "RESOURCE_DOES_NOT_EXIST", "RESOURCE_NOT_FOUND"),
    ]
    assert ours[-1] == (404, "RESOURCE_DOES_NOT_EXIST")
