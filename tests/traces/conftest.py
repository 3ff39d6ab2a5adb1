"""Fixtures for the trace tests: MLflow's own SqlAlchemyStore (sqlite) as the reference for the same client calls.

``both`` yields (ours, reference) tracking URIs; a test runs one scenario with the real client against each
(``mlflow.set_tracking_uri`` resets the tracer provider, so spans go to the store of the current URI) and
compares what the client reads back.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator

import pytest

from tests.sqlite_template import migrated_sqlite


@pytest.fixture(scope="session")
def reference_uri() -> Iterator[str]:
    with tempfile.TemporaryDirectory(prefix="mlflow-ref-traces-") as directory:
        yield migrated_sqlite(os.path.join(directory, "mlflow.db"))


@pytest.fixture
def tracing(server: str) -> Iterator[None]:
    """Synchronous trace export, so a traced call has been sent when it returns; restores the tracking URI."""
    import mlflow

    previous = os.environ.get("MLFLOW_ENABLE_ASYNC_TRACE_LOGGING")
    os.environ["MLFLOW_ENABLE_ASYNC_TRACE_LOGGING"] = "false"
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop("MLFLOW_ENABLE_ASYNC_TRACE_LOGGING", None)
        else:
            os.environ["MLFLOW_ENABLE_ASYNC_TRACE_LOGGING"] = previous
        mlflow.set_tracking_uri(server)
