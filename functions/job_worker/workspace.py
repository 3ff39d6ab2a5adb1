"""A job runs in the workspace it was submitted in (MLflow's job runner enters ``job.workspace`` when workspaces are
enabled): the store calls the worker makes itself (``JobRun.check``) are bound to it, and every call its stock
client makes to this server's API carries it (``X-MLFLOW-WORKSPACE``), so what the job writes (experiments, runs,
registered models, assessments, issues) lands there and what it reads is that workspace's.

The client takes the workspace from a context variable and from ``MLFLOW_WORKSPACE`` in the process environment,
which MLflow's own worker threads (thread pools that do not copy the context) read. The environment is the
process's, so jobs take turns here while workspaces are on: a Lambda invocation runs one job anyway; the local
runtime's worker threads wait for each other. With workspaces off nothing is set, as before.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from serverless_mlflow.request import workspace as request_workspace
from serverless_mlflow.store import jobs as store

_lock = threading.Lock()


@contextmanager
def of_job(item: dict[str, Any]) -> Iterator[None]:
    if not request_workspace.enabled():
        yield
        return
    from mlflow.utils.workspace_context import WorkspaceContext

    workspace = store.workspace_of(item)
    with _lock, request_workspace.bound(workspace), WorkspaceContext(workspace):
        yield
