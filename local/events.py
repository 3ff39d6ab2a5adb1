"""What API Gateway and Lambda hand a function (the HTTP API payload 2.0 event and the context object), and
what they answer themselves when a request or response is over Lambda's payload limit."""

from __future__ import annotations

import base64
import json
import logging
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any
from urllib.parse import parse_qs

from serverless_mlflow.core.errors import MlflowError

log = logging.getLogger("serverless_mlflow.local")

REGION = "us-east-1"
# API Gateway HTTP APIs accept 10 MB bodies, but a Lambda invocation's request and response are each capped at
# 6 MB (6,291,456 bytes of JSON, after API Gateway base64-encodes a binary body).
MAX_LAMBDA_PAYLOAD = 6 * 1024 * 1024


class LambdaContext:
    """The fields Powertools reads from a Lambda context."""

    def __init__(self, feature: str, timeout_seconds: float = 29) -> None:
        self.function_name = f"mlflow-serverless-{feature}"
        self.function_version = "$LATEST"
        self.memory_limit_in_mb = 512
        self.invoked_function_arn = f"arn:aws:lambda:{REGION}:000000000000:function:{self.function_name}"
        self.aws_request_id = str(uuid.uuid4())
        self._deadline = time.monotonic() + timeout_seconds

    def get_remaining_time_in_millis(self) -> int:
        return int((self._deadline - time.monotonic()) * 1000)


def api_gateway_event(
    method: str,
    raw_path: str,
    query: str,
    headers: dict[str, str],
    body: bytes,
    route_key: str,
    path_params: dict[str, str],
    host: str,
) -> dict[str, Any]:
    lowered = {k.lower(): v for k, v in headers.items()}
    query_params = {k: ",".join(v) for k, v in parse_qs(query, keep_blank_values=True).items()}
    text_body, is_base64 = _encode_body(body, lowered.get("content-type", ""))
    now = datetime.now(UTC)
    event: dict[str, Any] = {
        "version": "2.0",
        "routeKey": route_key,
        "rawPath": raw_path,
        "rawQueryString": query,
        "headers": lowered,
        "requestContext": {
            "accountId": "000000000000",
            "apiId": "local",
            "domainName": host,
            "domainPrefix": "local",
            "http": {
                "method": method,
                "path": raw_path,
                "protocol": "HTTP/1.1",
                "sourceIp": "127.0.0.1",
                "userAgent": lowered.get("user-agent", ""),
            },
            "requestId": str(uuid.uuid4()),
            "routeKey": route_key,
            "stage": "$default",
            "time": now.strftime("%d/%b/%Y:%H:%M:%S +0000"),
            "timeEpoch": int(now.timestamp() * 1000),
        },
        "isBase64Encoded": is_base64,
    }
    if query_params:
        event["queryStringParameters"] = query_params
    if path_params:
        event["pathParameters"] = path_params
    if body:
        event["body"] = text_body
    return event


_TEXT_TYPES = ("text/", "application/json", "application/xml", "application/javascript", "application/x-www-form-urlencoded")


def _encode_body(body: bytes, content_type: str) -> tuple[str, bool]:
    """Text bodies travel as text; anything else base64-encoded (4/3 larger against the 6 MB payload cap)."""
    if content_type.lower().startswith(_TEXT_TYPES) or "+json" in content_type.lower():
        try:
            return body.decode("utf-8"), False
        except UnicodeDecodeError:
            pass
    return base64.b64encode(body).decode("ascii"), True


def json_response(status: int, body: str) -> dict[str, Any]:
    return {"statusCode": status, "headers": {"content-type": "application/json"}, "body": body}


# MLflow's error codes for what the HTTP front refuses before any function runs (the status stays the HTTP one).
_FRONT_ERROR_CODES = {404: "ENDPOINT_NOT_FOUND", 405: "ENDPOINT_NOT_FOUND", 500: "INTERNAL_ERROR", 501: "ENDPOINT_NOT_FOUND"}


def mlflow_error(status: int, message: str) -> dict[str, Any]:
    """An answer in MLflow's JSON error shape (``error_code``, ``message`` and the classification fields), whoever
    gives it: the functions' own errors.MlflowError, so the front's refusals read as the functions' answers."""
    code = _FRONT_ERROR_CODES.get(status, "BAD_REQUEST")
    return json_response(status, json.dumps(MlflowError(message, code, status).to_json()))


# When the Lambda invocation fails (the function never answers). API Gateway's own bodies carry only a
# "message"; the local front answers in MLflow's shape, as every other error.
REQUEST_TOO_LARGE = mlflow_error(413, f"Request Entity Too Large: a request body is limited to {MAX_LAMBDA_PAYLOAD} bytes.")
INTEGRATION_FAILURE = mlflow_error(500, "Internal Server Error: the function's answer exceeds Lambda's 6 MB response limit.")


def invoke_api_function(handler: Callable[[dict[str, Any], Any], dict[str, Any]], feature: str, event: dict[str, Any]) -> dict[str, Any]:
    """One API Gateway -> Lambda invocation, with the 6 MB caps both ways as AWS applies them."""
    if len(json.dumps(event)) > MAX_LAMBDA_PAYLOAD:
        return REQUEST_TOO_LARGE
    # Concurrent requests run side by side in threads, as in separate Lambda environments
    # (serverless_mlflow.http.resolver keeps each thread's request apart).
    response = handler(event, LambdaContext(feature))
    if len(json.dumps(response)) > MAX_LAMBDA_PAYLOAD:
        # Lambda refuses a response over 6 MB; API Gateway then answers 500 on its own.
        log.error(
            "%s %s: the %s function's response exceeds Lambda's 6 MB payload limit",
            event["requestContext"]["http"]["method"],
            event["rawPath"],
            feature,
        )
        return INTEGRATION_FAILURE
    return response
