"""The stock MLflow client pointed at this server's API (``JOB_SERVER_URL``) for the run of one job.

MLflow's job functions reach the server through the client's process-wide tracking and registry URIs. A Lambda
runs one job per process, so pointing them is enough there; the local runtime runs its worker in the same process
as whatever else it hosts (the test session's own client, a second runtime's tests), so the URIs are put back
when the job ends. Only values the job itself set are put back: a URI someone else set meanwhile stays theirs.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_ENV = ("MLFLOW_TRACKING_URI", "MLFLOW_REGISTRY_URI")
# Jobs running at once (the local runtime's worker threads) share the pointing: the first one in saves what was
# there, the last one out puts it back.
_lock = threading.Lock()
_running = 0
_saved: tuple[str | None, str | None, dict[str, str | None]] | None = None


def server_url() -> str:
    return os.environ["JOB_SERVER_URL"]


@contextmanager
def pointed_at_server() -> Iterator[str]:
    """The client's URIs are this server's while the job runs; yields the server's URL."""
    global _running, _saved
    import mlflow
    from mlflow.tracking._model_registry import utils as registry_utils
    from mlflow.tracking._tracking_service import utils as tracking_utils

    url = server_url()
    with _lock:
        if _running == 0:
            _saved = (tracking_utils._tracking_uri, registry_utils._registry_uri, {name: os.environ.get(name) for name in _ENV})
        _running += 1
        mlflow.set_tracking_uri(url)
        mlflow.set_registry_uri(url)
    try:
        yield url
    finally:
        with _lock:
            _running -= 1
            if _running == 0 and _saved is not None:
                _put_back(url, *_saved)


def _put_back(url: str, tracking: str | None, registry: str | None, environment: dict[str, str | None]) -> None:
    from mlflow.tracking._model_registry import utils as registry_utils
    from mlflow.tracking._tracking_service import utils as tracking_utils

    ours = [name for name in _ENV if os.environ.get(name) == url]
    if tracking_utils._tracking_uri == url:
        tracking_utils.set_tracking_uri(tracking)  # also resets the tracer provider, as MLflow's setter does
    if registry_utils._registry_uri == url:
        registry_utils._registry_uri = registry
    for name in ours:
        if environment[name] is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = environment[name]  # type: ignore[assignment]
