"""The request's workspace: MLflow's ``X-MLFLOW-WORKSPACE`` header, resolved once per request and held in a
context variable, so stores ask ``current()`` instead of every function taking a workspace parameter.

Workspaces are served only when the operator enables them (``MLFLOW_ENABLE_WORKSPACES``, the name ``mlflow
server --enable-workspaces`` sets; the stack's ``enable_workspaces`` context value). Disabled, every request is
in ``default`` and the header is ignored, as this server always did.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

ENABLE_SETTING = "MLFLOW_ENABLE_WORKSPACES"
HEADER = "x-mlflow-workspace"  # headers are read lower-cased (serverless_mlflow.http.api.Request)
DEFAULT_WORKSPACE = "default"

_current: ContextVar[str] = ContextVar("mlflow_workspace", default=DEFAULT_WORKSPACE)


def enabled() -> bool:
    """MLflow's boolean environment variable rule: ``true`` or ``1``, any case."""
    return os.environ.get(ENABLE_SETTING, "false").strip().lower() in ("true", "1")


def current() -> str:
    """The workspace of the request being served (``default`` outside a request or with workspaces disabled)."""
    return _current.get()


def normalize(header_value: str | None) -> str | None:
    """utils.workspace_utils._normalize_workspace: trimmed, None when empty."""
    value = (header_value or "").strip()
    return value or None


@contextmanager
def bound(workspace: str) -> Iterator[None]:
    """Serve the code inside as a request of ``workspace``."""
    token = _current.set(workspace)
    try:
        yield
    finally:
        _current.reset(token)
