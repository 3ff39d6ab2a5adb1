"""The gateway runtime behind the HTTP API (``/gateway/...``): MLflow's invocation routes, answered whole.

A streamed answer (``"stream": true``) is sent as one complete ``text/event-stream`` body here, because an
HTTP API integration cannot stream; clients that want the chunks as they come call the same routes on the
runtime's function URL (``stream_server.py``), which streams.
"""

from __future__ import annotations

import base64
from typing import Any

from serverless_mlflow.http.server_info import GATEWAY_DISABLED, gateway_enabled
from serverless_mlflow.storage.table import deadline

from . import calls
from .answers import Answer, Call, detail


def serve(call: Call) -> Answer:
    return calls.answer(call) if gateway_enabled() else detail(501, GATEWAY_DISABLED)


def call_from_event(event: dict[str, Any]) -> Call:
    body = event.get("body") or ""
    raw = base64.b64decode(body) if event.get("isBase64Encoded") else body.encode("utf-8")
    path = event.get("rawPath") or "/"
    context = ((event.get("requestContext") or {}).get("authorizer") or {}).get("lambda")
    return Call(
        method=event["requestContext"]["http"]["method"],
        path=path[len(calls.GATEWAY_PREFIX) :] if path.startswith(calls.GATEWAY_PREFIX) else path,
        query=event.get("rawQueryString") or "",
        headers={k.lower(): v for k, v in (event.get("headers") or {}).items()},
        body=raw,
        auth_context=context,
    )


def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    with deadline.bound(context):
        answer = serve(call_from_event(event))
        body = answer.body if answer.stream is None else b"".join(answer.stream)
    return {"statusCode": answer.status, "headers": answer.headers, "body": body.decode("utf-8"), "isBase64Encoded": False}
