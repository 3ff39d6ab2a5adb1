"""Indexer test fixtures: a moto endpoint (the session runtime's if one is up, else a private server) and a
local runtime whose stream indexer is paused."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest

from serverless_mlflow import table


@pytest.fixture(scope="session")
def moto_endpoint() -> Iterator[str]:
    existing = os.environ.get("DYNAMODB_ENDPOINT_URL")
    if existing:
        yield existing
        return
    from moto.server import ThreadedMotoServer

    from local.runtime import free_port

    port = free_port()
    import logging

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.stop()


@pytest.fixture
def paused_runtime(moto_endpoint: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[object]:
    from local.runtime import LocalRuntime

    monkeypatch.setenv("TABLE_NAME", f"paused-{uuid.uuid4().hex[:10]}")
    monkeypatch.setenv("DYNAMODB_ENDPOINT_URL", moto_endpoint)
    monkeypatch.setenv("S3_ENDPOINT_URL", os.environ.get("S3_ENDPOINT_URL") or moto_endpoint)
    runtime = LocalRuntime(port=0, indexer_mode="paused").start()
    try:
        yield runtime
    finally:
        runtime.stop()
        table.reset_client()
