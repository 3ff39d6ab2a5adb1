"""Calling another of the stack's functions with the event API Gateway would send it.

The gateway runtime records its usage traces through the ``traces`` function (the owner of the trace layout),
exactly as an MLflow client would: an OTLP export and a ``start_trace``. Deployed, that is a Lambda ``Invoke``
of the function named by ``<FEATURE>_FUNCTION_NAME`` (``InvocationType=Event`` when nobody waits for the
answer); the local runtime installs a dispatcher that calls the same handler in-process (``local/siblings.py``).
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable
from typing import Any

Dispatcher = Callable[[str, dict[str, Any], bool], dict[str, Any] | None]
_local: Dispatcher | None = None
_lock = threading.Lock()
_client: Any = None


def install_local(dispatcher: Dispatcher | None) -> None:
    global _local
    _local = dispatcher


def function_name(feature: str) -> str:
    name = os.environ.get(f"{feature.upper()}_FUNCTION_NAME")
    if not name:
        raise RuntimeError(f"{feature.upper()}_FUNCTION_NAME is not set: this function may not call the {feature} function")
    return name


def invoke(feature: str, event: dict[str, Any], wait: bool) -> dict[str, Any] | None:
    """The function's response when ``wait``; otherwise queued (Lambda's asynchronous invocation, retried
    by Lambda twice on failure) and None."""
    if _local is not None:
        return _local(feature, event, wait)
    global _client
    with _lock:
        if _client is None:
            import boto3

            _client = boto3.client("lambda")
    answer = _client.invoke(
        FunctionName=function_name(feature),
        InvocationType="RequestResponse" if wait else "Event",
        Payload=json.dumps(event).encode("utf-8"),
    )
    return json.loads(answer["Payload"].read() or b"null") if wait else None


def api_event(method: str, path: str, body: Any, headers: dict[str, str] | None = None, route_key: str | None = None) -> dict[str, Any]:
    """A minimal API Gateway HTTP API (payload 2.0) event for a JSON request."""
    return {
        "version": "2.0",
        "routeKey": route_key or f"{method} {path}",
        "rawPath": path,
        "rawQueryString": "",
        "headers": {"content-type": "application/json", **(headers or {})},
        "requestContext": {
            "http": {"method": method, "path": path, "protocol": "HTTP/1.1", "sourceIp": "127.0.0.1", "userAgent": "mlflow-serverless"},
            "routeKey": route_key or f"{method} {path}",
            "stage": "$default",
            "requestId": "sibling",
        },
        "body": json.dumps(body),
        "isBase64Encoded": False,
    }
