"""What a function's cold start imports: only what every route needs (docs/performance.md measures the time).

Each handler is imported in a fresh interpreter with the Lambda environment a deployed function has. With
tracing off no function may load the X-Ray SDK; protobuf (OTLP, span data), the search grammar with sqlparse
and the basic-auth rules are loaded by the routes that use them, not by the import. With tracing on, the
handler is traced (the SDK is loaded), as Powertools would do.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from serverless_mlflow.request import routes

ROOT = Path(__file__).resolve().parents[2]
FUNCTIONS = [*routes.features(), "indexer", "authorizer"]
DEFERRED = ("aws_xray_sdk", "google.protobuf", "sqlparse", "serverless_mlflow.search", "serverless_mlflow.auth.enforce")
# The evaluation datasets' search grammar is its own module of sqlparse walks, imported with the handler; the
# auth function (users and grants) exists for basic auth and uses its rules on every route.
ALLOWED = {"evaluation": {"sqlparse", "serverless_mlflow.search"}, "auth": {"serverless_mlflow.auth.enforce"}}


def _imported(feature: str, tracing: bool) -> set[str]:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT / "functions"), str(ROOT / "layers" / "shared" / "python")]),
        "LAMBDA_TASK_ROOT": "/var/task",
        "AWS_LAMBDA_FUNCTION_NAME": f"mlflow-serverless-{feature}",
        "POWERTOOLS_TRACE_DISABLED": "false" if tracing else "true",
        "TABLE_NAME": "cold-imports",
    }
    code = f"import sys, json; import {feature}.handler; print(json.dumps(sorted(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120, check=True)
    return set(json.loads(done.stdout.splitlines()[-1]))


@pytest.mark.parametrize("feature", FUNCTIONS)
def test_a_cold_start_with_tracing_off_imports_only_what_every_route_needs(feature: str) -> None:
    modules = _imported(feature, tracing=False)
    loaded = {name for name in DEFERRED if name in modules} - ALLOWED.get(feature, set())
    assert not loaded, f"{feature}.handler imports {sorted(loaded)} at cold start"


def test_with_tracing_on_the_handler_is_traced() -> None:
    assert "aws_xray_sdk.core" in _imported("meta", tracing=True)
