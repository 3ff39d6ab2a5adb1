"""Fixtures for the artifact tests: which Lambda routes a client call used, and how many bytes they carried."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tools.artifact_bench import LambdaMeter


@pytest.fixture
def meter(server: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[LambdaMeter]:
    """Records every invocation of the session runtime during one test (wraps ``LocalRuntime.invoke``)."""
    from local.runtime import LocalRuntime

    recorder = LambdaMeter()
    monkeypatch.setattr(LocalRuntime, "invoke", recorder.wrap(LocalRuntime.invoke))
    yield recorder
