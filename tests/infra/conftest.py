"""Infra tests synthesize the app once per module; group them on one xdist worker."""

from __future__ import annotations

import pytest


def pytest_configure(config: pytest.Config) -> None:
    # Registered by pytest-xdist when it is active; registered here too so `-p no:xdist` runs stay quiet.
    config.addinivalue_line("markers", "xdist_group(name): run the marked tests on the same xdist worker")
