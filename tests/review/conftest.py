"""Fixtures for the review tests: MLflow's own SqlAlchemyStore (sqlite) as the in-process reference."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator

import pytest

from tests.sqlite_template import migrated_sqlite


@pytest.fixture(scope="session")
def reference_uri() -> Iterator[str]:
    with tempfile.TemporaryDirectory(prefix="mlflow-ref-review-") as directory:
        yield migrated_sqlite(os.path.join(directory, "mlflow.db"))


@pytest.fixture
def tracing(server: str) -> Iterator[None]:
    """Synchronous trace export (a traced call has been sent when it returns); restores the tracking URI."""
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
