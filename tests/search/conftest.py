"""Fixtures for the search differential tests."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture(scope="module")
def scratch_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A scratch dir on tmpfs when available (MLflow's sqlite store fsyncs every commit, which dominates setup)."""
    shm = Path("/dev/shm")
    if not shm.is_dir():
        yield tmp_path_factory.mktemp("search")
        return
    path = Path(tempfile.mkdtemp(prefix="mlflow-search-diff-", dir=shm))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)
