"""MLflow's own tracking server (its Flask app, in process) on sqlite: the reference for differential tests.

``reference_server()`` answers requests through ``mlflow.server.app``'s test client, with a sqlite backend,
``mlflow-artifacts:/`` as the default artifact root (served from a local directory) and a KEK passphrase
for the gateway's secret encryption. One instance per test process: MLflow's handlers cache their stores
in module globals, so the environment is set once, before the first request.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any


@dataclass
class Reference:
    directory: Path
    client: Any  # flask.testing.FlaskClient

    @property
    def artifacts(self) -> Path:
        """The local directory behind ``mlflow-artifacts:/``."""
        return self.directory / "artifacts"

    def call(
        self, method: str, path: str, body: dict[str, Any] | None = None, query: dict[str, Any] | None = None
    ) -> tuple[int, dict[str, Any]]:
        response = self.client.open(path, method=method, json=body, query_string=query)
        return response.status_code, json.loads(response.data or b"{}")


@cache
def reference_server() -> Reference:
    directory = Path(tempfile.mkdtemp(prefix="mlflow-reference-"))
    uri = f"sqlite:///{directory / 'mlflow.db'}"
    os.environ["_MLFLOW_SERVER_FILE_STORE"] = uri
    os.environ["_MLFLOW_SERVER_REGISTRY_STORE"] = uri
    os.environ["_MLFLOW_SERVER_ARTIFACT_ROOT"] = "mlflow-artifacts:/"
    os.environ["_MLFLOW_SERVER_ARTIFACT_DESTINATION"] = str(directory / "artifacts")
    os.environ["_MLFLOW_SERVER_SERVE_ARTIFACTS"] = "true"
    os.environ.setdefault("MLFLOW_CRYPTO_KEK_PASSPHRASE", "reference-only-passphrase")
    from mlflow.server import app

    return Reference(directory, app.test_client())
