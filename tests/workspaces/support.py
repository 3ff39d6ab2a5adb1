"""What the workspace tests compare: a call's value or error code, raw wire answers, two transcripts."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import requests
from mlflow.exceptions import MlflowException

HEADER = "X-MLFLOW-WORKSPACE"


def outcome(call: Callable[[], Any]) -> Any:
    """A call's value, or the error code it raised (what the two servers must agree on)."""
    try:
        return call()
    except MlflowException as error:
        return error.error_code


def assert_same(got: list[Any], expected: list[Any]) -> None:
    for step, (mine, theirs) in enumerate(zip(got, expected, strict=True)):
        assert mine == theirs, f"step {step}: ours {mine!r}, MLflow's {theirs!r}"
    assert len(got) == len(expected)


def raw(url: str, method: str, path: str, workspace: str | None = None, **kwargs: Any) -> tuple[int, Any]:
    headers = {HEADER: workspace} if workspace is not None else {}
    response = requests.request(method, f"{url}{path}", headers=headers, timeout=60, **kwargs)
    try:
        body: Any = response.json()
    except ValueError:
        body = response.text
    return response.status_code, body
