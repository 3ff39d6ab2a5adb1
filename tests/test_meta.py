"""Protocol basics, matching `mlflow server`."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest


def _get(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def test_health_and_version(server: str) -> None:
    assert _get(f"{server}/health") == (200, b"OK")
    status, body = _get(f"{server}/version")
    assert status == 200 and body.decode().count(".") == 2


def test_server_info_reports_presigned_artifacts(server: str) -> None:
    status, body = _get(f"{server}/api/3.0/mlflow/server-info")
    info = json.loads(body)
    assert status == 200
    assert info["artifacts_presigned_only"] is True
    assert info["multipart_uploads_enabled"] is True
    # The AI gateway, its runtime and judges are served: the UI shows its Judges tab, Playground and gateway page.
    assert info["features_enabled"] == {"gateway": True, "scheduled_issue_detection": True}
    # The 3.18 UI shows its Issues tab only to a "SqlStore" (MLflow's name for a store with every feature).
    assert info["store_type"] == "SqlStore"


@pytest.mark.parametrize("path", ["/api/2.0/mlflow/nope", "/api/2.0/mlflow/runs/get/extra", "/no-such-page", "/api/9.0/x"])
def test_unknown_route_answers_endpoint_not_found(server: str, path: str) -> None:
    status, body = _get(f"{server}{path}")
    assert status == 404
    assert json.loads(body)["error_code"] == "ENDPOINT_NOT_FOUND"


def test_default_experiment_exists(client) -> None:
    experiment = client.get_experiment("0")
    assert experiment.name == "Default"
    assert experiment.lifecycle_stage == "active"
