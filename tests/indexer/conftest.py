"""A moto endpoint for the indexer tests: the session runtime's if one is up, else a private server."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest


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
