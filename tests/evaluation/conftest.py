"""Differential fixtures: the same client calls against the local runtime and against MLflow's own SqlAlchemyStore."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.sqlite_template import migrated_sqlite


@pytest.fixture
def reference_uri(tmp_path: Path) -> str:
    """A sqlite tracking URI: the client then talks to MLflow's SqlAlchemyStore in process."""
    return migrated_sqlite(tmp_path / "reference.db")


@pytest.fixture
def against(server: str, reference_uri: str) -> Iterator[Callable[[Callable[[], Any]], tuple[Any, Any]]]:
    """``against(scenario)`` runs ``scenario()`` with the tracking URI set to our server, then to MLflow's store."""
    import mlflow

    def run(scenario: Callable[[], Any]) -> tuple[Any, Any]:
        results = []
        for uri in (server, reference_uri):
            mlflow.set_tracking_uri(uri)
            results.append(scenario())
        mlflow.set_tracking_uri(server)
        return results[0], results[1]

    yield run
    mlflow.set_tracking_uri(server)
