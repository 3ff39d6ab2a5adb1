"""Wires a feature's operations into a Powertools HTTP API resolver with MLflow's wire conventions.

A feature module writes plain functions ``op(req: Request) -> dict | Response`` and calls
``build_app(feature, {"op_name": op, ...})``; the routes come from ``routes.ROUTES``. This module owns
what every feature shares at the HTTP edge: GET query parsing as the MLflow client sends it,
JSON bodies (also on DELETE), MLflow's error shape, ENDPOINT_NOT_FOUND for unknown routes, and
500 INTERNAL_ERROR without a stack trace (logged with the correlation id).
"""

from __future__ import annotations

import base64
import json
import math
import re
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Response
from aws_lambda_powertools.event_handler.exceptions import NotFoundError
from aws_lambda_powertools.logging import correlation_paths

from serverless_mlflow import auth
from serverless_mlflow import request as request_parsing
from serverless_mlflow.auth import enforce
from serverless_mlflow.errors import MlflowError, Unavailable, endpoint_not_found, invalid
from serverless_mlflow.routes import AJAX_PREFIX, match, operation_path, routes_for

logger = Logger(service="mlflow-serverless")
tracer = Tracer(service="mlflow-serverless")
metrics = Metrics(namespace="MlflowServerless", service="mlflow-serverless")

JSON_CONTENT_TYPE = "application/json"

# Most requests publish no custom metric; Powertools would warn on every one of them.
warnings.filterwarnings("ignore", message="No application metrics to publish")


@dataclass
class Request:
    method: str
    path: str
    path_params: dict[str, str]
    query: dict[str, list[str]]
    headers: dict[str, str]
    raw_body: bytes
    # Basic auth: who is calling (serverless_mlflow.auth.checks.Identity), from the authorizer's context.
    identity: Any = None
    _json: Any = field(default=None, init=False)

    @property
    def json(self) -> dict[str, Any]:
        """The JSON body; malformed JSON reads as ``{}`` as in MLflow (``get_json(silent=True)``)."""
        if self._json is None:
            try:
                parsed = json.loads(self.raw_body or b"{}")
            except ValueError:
                parsed = {}
            # Old clients double-encode the body as a JSON string.
            if isinstance(parsed, str):
                try:
                    parsed = json.loads(parsed)
                except ValueError:
                    parsed = {}
            self._json = parsed if isinstance(parsed, dict) else {}
        return self._json

    def params(self, repeated: tuple[str, ...] = (), booleans: tuple[str, ...] = ()) -> dict[str, Any]:
        """The request message as a dict: query parameters for GET, the JSON body otherwise."""
        if self.method != "GET":
            self._check_content_type()
            return self.json
        out: dict[str, Any] = {}
        for key, values in self.query.items():
            if key in repeated:
                out[key] = values
            else:
                value = values[0]
                if key in booleans:
                    if value.lower() not in ("true", "false"):
                        raise invalid(f"Invalid boolean value: {value}, must be 'true' or 'false'.")
                    out[key] = value.lower() == "true"
                else:
                    out[key] = value
        return out

    def message(self, spec: request_parsing.Message) -> dict[str, Any]:
        """The request parsed and checked as MLflow's handler does (``serverless_mlflow.request``)."""
        return request_parsing.parse_message(self.params(spec.repeated, spec.booleans), spec)

    def _check_content_type(self) -> None:
        if self.method not in ("POST", "PUT"):
            return
        content_type = self.headers.get("content-type")
        if content_type is None:
            raise invalid("Bad Request. Content-Type header is missing.")
        if content_type.split(";")[0].strip() != JSON_CONTENT_TYPE:
            raise invalid(f"Bad Request. Content-Type must be one of ['{JSON_CONTENT_TYPE}'].")


def json_response(body: Any, status: int = 200) -> Response:
    return Response(status_code=status, content_type=JSON_CONTENT_TYPE, body=dumps(body))


def dumps(body: Any) -> str:
    return json.dumps(body, separators=(",", ":"), default=_json_default, allow_nan=False)


def _json_default(value: Any) -> Any:
    if isinstance(value, set):
        return sorted(value)
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


def float_json(value: float) -> float | str:
    """Protobuf JSON for a double: NaN and infinities travel as strings."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    return value


def error_response(error: MlflowError) -> Response:
    return json_response(error.to_json(), error.http_status)


def _request_from(app: APIGatewayHttpResolver) -> Request:
    event = app.current_event
    raw_body = event.get("body") or ""
    body = base64.b64decode(raw_body) if event.get("isBase64Encoded") else raw_body.encode("utf-8")
    raw_query = event.get("rawQueryString") or ""
    return Request(
        method=event.request_context.http.method.upper(),
        path=event.get("rawPath") or event.path,
        path_params=dict(event.get("pathParameters") or {}),
        query=parse_qs(raw_query, keep_blank_values=True),
        headers={k.lower(): v for k, v in (event.get("headers") or {}).items()},
        raw_body=body,
    )


Operation = Callable[[Request], Any]


def build_app(feature: str, operations: dict[str, Operation]) -> APIGatewayHttpResolver:
    app = APIGatewayHttpResolver(strip_prefixes=None)
    for route in routes_for(feature):
        if route.operation not in operations:
            raise RuntimeError(f"{feature}: no operation {route.operation} for {route.route_key}")
        app.route(route.powertools_rule, route.method)(_adapt(app, route.operation, operations[route.operation]))

    @app.not_found
    def _not_found(_: NotFoundError) -> Response:
        event = app.current_event
        if auth.basic_enabled() and enforce.identity_of(event.raw_event) is None:
            return enforce.unauthenticated()  # MLflow authenticates before it routes
        method, path = event.request_context.http.method, event.get("rawPath") or event.path
        merged = re.sub(r"/{2,}", "/", path)
        if merged != path and match(method.upper(), merged) is not None:
            # Werkzeug's merge_slashes: MLflow's server redirects ``//x`` to the route ``/x`` (308 keeps the method).
            query = event.get("rawQueryString") or ""
            return Response(
                status_code=308, content_type="text/plain", body="", headers={"Location": merged + (f"?{query}" if query else "")}
            )
        return error_response(endpoint_not_found(method, path))

    @app.exception_handler(MlflowError)
    def _mlflow_error(error: MlflowError) -> Response:
        if error.http_status >= 500:
            logger.exception("request failed")
        return error_response(error)

    @app.exception_handler(Exception)
    def _unexpected(error: Exception) -> Response:
        if is_capacity_failure(error):
            logger.warning("DynamoDB refused the request for capacity after retries", exc_info=True)
            return error_response(MlflowError("The tracking store is busy; retry the request.", "TEMPORARILY_UNAVAILABLE"))
        logger.exception("unexpected failure")
        return error_response(MlflowError("An internal error occurred. See the server logs for the correlation id.", "INTERNAL_ERROR"))

    return app


# DynamoDB's answers to "too much at once", once botocore's own retries are spent: nothing was written.
_CAPACITY_CODES = frozenset({"ProvisionedThroughputExceededException", "ThrottlingException", "RequestLimitExceeded"})


def is_capacity_failure(error: Exception) -> bool:
    code = getattr(error, "response", {}).get("Error", {}).get("Code")
    return isinstance(error, Unavailable) or code in _CAPACITY_CODES


def _adapt(app: APIGatewayHttpResolver, name: str, operation: Operation) -> Callable[..., Response]:
    def endpoint(**_: Any) -> Response:
        req = _request_from(app)
        if auth.basic_enabled():
            # Basic auth: MLflow's validators before the operation, its after-request hooks after it.
            req.identity = enforce.identity_of(app.current_event.raw_event)
            result = enforce.guarded(name, operation, req, req.identity)
        else:
            result = operation(req)
        if isinstance(result, Response):
            return result
        return json_response(result if result is not None else {})

    endpoint.__name__ = operation.__name__
    return endpoint


def lambda_entry(app: APIGatewayHttpResolver) -> Callable[[dict[str, Any], Any], dict[str, Any]]:
    """The Lambda handler for a feature: structured logs with correlation id, traces, metrics."""

    @logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_HTTP, clear_state=True)
    @tracer.capture_lambda_handler(capture_response=False)
    @metrics.log_metrics
    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        return app.resolve(ajax_to_api(event), context)

    return handler


def ajax_to_api(event: dict[str, Any]) -> dict[str, Any]:
    """The event of an ``/ajax-api/...`` request (the UI's paths, reaching the function through a greedy
    group route) as if it had come in on the ``/api/...`` route: path mapped, path parameters of that route."""
    raw_path = event.get("rawPath") or ""
    stage = (event.get("requestContext") or {}).get("stage", "$default")
    stage_prefix = f"/{stage}" if stage != "$default" and raw_path.startswith(f"/{stage}/") else ""
    path = raw_path[len(stage_prefix) :]
    if not path.startswith(AJAX_PREFIX):
        return event
    method = str((event.get("requestContext") or {}).get("http", {}).get("method", "GET")).upper()
    mapped = operation_path(method, path)
    found = match(method, path)
    context = dict(event.get("requestContext") or {})
    context["http"] = {**context.get("http", {}), "path": stage_prefix + mapped}
    return {**event, "rawPath": stage_prefix + mapped, "requestContext": context, "pathParameters": found[1] if found else {}}
