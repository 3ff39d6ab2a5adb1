"""``artifacts/presigned-upload-url`` / ``presigned-download-url`` answer as MLflow's server does for the proxied
(``mlflow-artifacts:``) locations every experiment here has: checked in MLflow's order, then refused."""

from __future__ import annotations

from typing import Any

import mlflow
import pytest
import requests

from tests.conftest import unique
from tests.mlflow_reference import reference_server

pytestmark = pytest.mark.e2e


def _answers(base: str) -> list[tuple[int, str, str]]:
    client = mlflow.MlflowClient(base)
    experiment_id = client.create_experiment(unique("presigned"))
    run_id = client.create_run(experiment_id).info.run_id
    model_id = client.create_logged_model(experiment_id).model_id
    cases: list[tuple[str, dict[str, Any]]] = [
        ("upload", {"run_id": run_id, "path": "model/file.bin"}),
        ("upload", {"model_id": model_id, "path": "weights.bin"}),
        ("upload", {"run_id": run_id, "model_id": model_id, "path": "x"}),
        ("upload", {"path": "x"}),
        ("upload", {"run_id": run_id, "path": "../x"}),
        ("upload", {"run_id": run_id}),
        ("upload", {"run_id": "no-such-run", "path": "x"}),
        ("upload", {"run_id": run_id, "path": "x", "expiration": "soon"}),
        ("download", {"run_id": run_id, "path": "x"}),
        ("download", {"run_id": run_id, "path": "x", "expiration": 0}),
        ("download", {"run_id": run_id, "path": "/etc/passwd"}),
        ("download", {"path": "x"}),
        ("download", {"run_id": "no-such-run", "path": "x"}),
    ]
    out = []
    # The REST path (SageMaker's plugin) and the web UI's (3.18's presigned-only upload calls the ajax one).
    for prefix in ("api", "ajax-api"):
        for direction, body in cases:
            response = requests.post(f"{base}/{prefix}/2.0/mlflow/artifacts/presigned-{direction}-url", json=body, timeout=30)
            answer = response.json()
            out.append((response.status_code, answer.get("error_code", ""), answer.get("message", "")))
    return out


def test_presigned_urls_answer_as_mlflow_for_proxied_artifacts(server: str) -> None:
    ours = _answers(server)
    assert ours == _answers(reference_server().url)
    assert ours[: len(ours) // 2] == ours[len(ours) // 2 :]
    assert ours[0][0] == 400 and "proxied artifact storage (artifact URI scheme: mlflow-artifacts)" in ours[0][2]
