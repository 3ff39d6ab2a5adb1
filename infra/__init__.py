"""The AWS CDK stack of mlflow-serverless.

The stack is built from the same data the Lambda code uses (``serverless_mlflow.storage.schema`` for the table,
``serverless_mlflow.request.routes`` for the API), so this package puts the shared layer on ``sys.path`` before
anything imports it. Only synth-time code lives here; nothing in this package is deployed except
``infra/handlers/`` (deploy-time custom-resource code).
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LAYER_DIR = ROOT / "layers" / "shared"
LAYER_PYTHON_DIR = LAYER_DIR / "python"
FUNCTIONS_DIR = ROOT / "functions"
HANDLERS_DIR = Path(__file__).resolve().parent / "handlers"
REQUIREMENTS_FILE = ROOT / "requirements.txt"

if str(LAYER_PYTHON_DIR) not in sys.path:
    sys.path.insert(0, str(LAYER_PYTHON_DIR))


def cdk_json_context() -> dict[str, object]:
    """The ``context`` of cdk.json (feature flags included), so tests build the app the CLI builds."""
    import json

    return dict(json.loads((ROOT / "cdk.json").read_text())["context"])
