"""A job's calls to this server's API run as the job's creator: under basic auth, the creator's user name and the
job's token (``auth.job_tokens``) as the stock client's credentials while the job runs.

The client reads them from the process environment (MLflow's own threads, e.g. its evaluation harness's pool,
read them there too), so jobs that carry credentials take turns in one process: a Lambda invocation runs one job
anyway; the local runtime's worker threads wait for each other here. Nothing here logs the token.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from serverless_mlflow.auth import job_tokens

from .runner import JobRun

VARIABLES = ("MLFLOW_TRACKING_USERNAME", "MLFLOW_TRACKING_PASSWORD", "MLFLOW_TRACKING_TOKEN")
_lock = threading.Lock()


@contextmanager
def as_creator(run: JobRun) -> Iterator[None]:
    if run.token is None:
        yield  # no basic auth (or a job with no creator): the worker's own credentials (IAM: SigV4), if any
        return
    with _lock:
        saved = {name: os.environ.pop(name, None) for name in VARIABLES}
        os.environ["MLFLOW_TRACKING_USERNAME"] = job_tokens.username_of(run.token) or ""
        os.environ["MLFLOW_TRACKING_PASSWORD"] = run.token
        try:
            yield
        finally:
            for name, value in saved.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value
