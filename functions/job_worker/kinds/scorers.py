"""MLflow's own job functions behind the UI's invoke routes, run unchanged against this server's API
(``JOB_SERVER_URL``) as the job's creator:

* ``invoke_scorer``: ``mlflow.genai.scorers.job.invoke_scorer_job`` (``POST /ajax-api/3.0/mlflow/scorer/invoke``),
  a judge on a batch of traces, its assessments logged on them;
* ``invoke_genai_evaluate``: ``mlflow.genai.evaluation.job.invoke_genai_evaluate_job``
  (``POST /ajax-api/3.0/mlflow/genai/evaluate/invoke``), ``mlflow.genai.evaluate`` into the run the route created.

MLflow runs them in its server's job runner, where ``_get_tracking_store()`` is the server's own store; here the
store is a REST store for this server's API, so every read and write is an API call with the creator's rights.
The params are MLflow's, passed through as its runner passes them.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ..client_uri import pointed_at_server
from ..credentials import as_creator
from ..runner import JobRun

# The store function is swapped on MLflow's job module for the run of one job: one job at a time in a process.
_store_lock = threading.Lock()


@contextmanager
def _server_store(module: Any) -> Iterator[None]:
    """MLflow's job module sees this server's API as its tracking store (and as the client's tracking URI)."""
    from mlflow.tracking._tracking_service.utils import _tracking_store_registry

    with pointed_at_server() as url, _store_lock:
        store = _tracking_store_registry.get_store(url)
        original = getattr(module, "_get_tracking_store", None)
        module._get_tracking_store = lambda *args, **kwargs: store
        try:
            yield
        finally:
            if original is None:
                del module._get_tracking_store
            else:
                module._get_tracking_store = original


def invoke_scorer(params: dict[str, Any], run: JobRun) -> Any:
    from mlflow.genai.scorers import job as scorer_job

    with as_creator(run), _server_store(scorer_job):
        run.check()
        return scorer_job.invoke_scorer_job(**params)


def invoke_genai_evaluate(params: dict[str, Any], run: JobRun) -> Any:
    from mlflow.genai.evaluation import job as evaluate_job

    with as_creator(run), _server_store(evaluate_job):
        run.check()
        return evaluate_job.invoke_genai_evaluate_job(**params)
