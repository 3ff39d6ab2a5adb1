"""The gateway runtime tests share one ``mlflow server`` reference per module: group them on one xdist worker."""

from __future__ import annotations

import pytest


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "xdist_group(name): run the marked tests on the same xdist worker")
