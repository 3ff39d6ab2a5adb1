"""Indexer test fixtures: the session runtime's DynamoDB Local endpoint and a local runtime (own table, same
engines) whose stream indexer is paused."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest

from serverless_mlflow.storage import table


@pytest.fixture(scope="session")
def dynamodb_endpoint(server: str) -> str:
    """The session runtime's DynamoDB Local (tests make private tables on it)."""
    return os.environ["DYNAMODB_ENDPOINT_URL"]


@pytest.fixture
def paused_runtime(dynamodb_endpoint: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[object]:
    from local.runtime import LocalRuntime

    monkeypatch.setenv("TABLE_NAME", f"paused-{uuid.uuid4().hex[:10]}")
    monkeypatch.setenv("DYNAMODB_ENDPOINT_URL", dynamodb_endpoint)
    runtime = LocalRuntime(port=0, indexer_mode="paused", monitor_schedule=False).start()
    try:
        yield runtime
    finally:
        runtime.stop()
        table.reset_client()
