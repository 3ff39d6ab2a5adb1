"""A job's calls to this server's API run as the job's creator: under basic auth, the creator's user name and the
job's token (``auth.job_tokens``) as the stock client's credentials while the job runs.

The client reads them from the process environment (MLflow's own threads, e.g. its evaluation harness's pool,
read them there too), so jobs that carry credentials take turns in one process: a Lambda invocation runs one job
anyway; the local runtime's worker threads wait for each other here. Nothing here logs the token.

A judge whose model is a gateway endpoint (``gateway:/<name>``) calls this server's gateway itself, with plain
``requests.post`` (MLflow's ``send_chat_request`` and ``_send_request``), not through the client's REST layer:
under basic auth it sends the same environment credentials (MLflow's ``_build_auth_headers``); under IAM
(``MLFLOW_TRACKING_AWS_SIGV4``), where the client signs its own calls, ``signed_gateway_calls`` signs those too.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import requests

from serverless_mlflow.auth import job_tokens

from .runner import JobRun

VARIABLES = ("MLFLOW_TRACKING_USERNAME", "MLFLOW_TRACKING_PASSWORD", "MLFLOW_TRACKING_TOKEN")
_lock = threading.Lock()


@contextmanager
def as_creator(run: JobRun) -> Iterator[None]:
    if run.token is None:
        # No basic auth (or a job with no creator): the worker's own credentials (IAM: SigV4), if any.
        with signed_gateway_calls():
            yield
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


# MLflow's modules whose judge calls go out with ``requests.post``: the gateway adapter's tool-calling loop and
# the string-prompt path (``score_model_on_payload``).
_JUDGE_HTTP_MODULES = ("mlflow.genai.judges.adapters.utils", "mlflow.metrics.genai.model_utils")
_signing_lock = threading.Lock()


class _SigV4(requests.auth.AuthBase):
    """SigV4 for the API (service ``execute-api``) with the worker's role, as the client's own signing does."""

    def __call__(self, request: requests.PreparedRequest) -> requests.PreparedRequest:
        import botocore.session
        from botocore.auth import SigV4Auth
        from botocore.awsrequest import AWSRequest

        session = botocore.session.get_session()
        region = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or session.get_config_variable("region")
        signed = AWSRequest(
            method=request.method, url=request.url, data=request.body, headers={"content-type": request.headers.get("content-type", "")}
        )
        SigV4Auth(session.get_credentials(), "execute-api", region).add_auth(signed)
        request.headers.update(dict(signed.headers))
        return request


class _Requests:
    """``requests`` as those modules use it, with a signing ``post``."""

    def __init__(self, post: Any) -> None:
        self.post = post

    def __getattr__(self, name: str) -> Any:
        return getattr(requests, name)


def _signing_post(server_url: str) -> Any:
    def post(url: str, **kwargs: Any) -> requests.Response:
        if url.startswith(server_url) and kwargs.get("auth") is None:
            kwargs["auth"] = _SigV4()
        return requests.post(url, **kwargs)

    return post


@contextmanager
def signed_gateway_calls() -> Iterator[None]:
    """Under IAM, a judge's calls to this server's gateway are signed while the job runs (other hosts, e.g. a
    provider a judge names directly, are not); without IAM, nothing changes."""
    if os.environ.get("MLFLOW_TRACKING_AWS_SIGV4", "").lower() not in ("true", "1"):
        yield
        return
    import importlib

    modules = [importlib.import_module(name) for name in _JUDGE_HTTP_MODULES]
    shim = _Requests(_signing_post(os.environ["JOB_SERVER_URL"].rstrip("/")))
    with _signing_lock:
        for module in modules:
            module.requests = shim
        try:
            yield
        finally:
            for module in modules:
                module.requests = requests
