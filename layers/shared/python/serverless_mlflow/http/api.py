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
import re
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Response
from aws_lambda_powertools.event_handler.exceptions import NotFoundError
from aws_lambda_powertools.logging import correlation_paths

from serverless_mlflow import auth
from serverless_mlflow import request as request_parsing
from serverless_mlflow.core.deferred import deferred
from serverless_mlflow.core.errors import MlflowError, Unavailable, endpoint_not_found, invalid, method_not_allowed
from serverless_mlflow.core.validation.json_values import protobuf_json_floats
from serverless_mlflow.http.observability import Observed
from serverless_mlflow.http.resolver import ThreadLocalHttpResolver
from serverless_mlflow.request import json_text
from serverless_mlflow.request import workspace as request_workspace
from serverless_mlflow.request.route_match import allowed_methods, match, operation_path
from serverless_mlflow.request.routes import AJAX_PREFIX, family_of, routes_for
from serverless_mlflow.storage import table
from serverless_mlflow.storage.table import deadline

observed = Observed("mlflow-serverless")
# MLflow's permission rules run only in basic-auth mode: a function of an IAM-authorized stack never imports them.
enforce = deferred("serverless_mlflow.auth.enforce")
logger = observed.logger

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
    # What parsers keep of this request so it is parsed once (the OTLP export read by auth and the feature).
    memo: dict[str, Any] = field(default_factory=dict, init=False, repr=False)

    @property
    def json(self) -> dict[str, Any]:
        """The JSON body; malformed JSON reads as ``{}`` as in MLflow (``get_json(silent=True)``), JSON nested
        past protobuf's limit is refused (MLflow's server fails on it)."""
        if self._json is None:
            parsed = _body_json(self.raw_body or b"{}")
            # Old clients double-encode the body as a JSON string.
            if isinstance(parsed, str):
                parsed = _body_json(parsed)
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


def _body_json(text: str | bytes) -> Any:
    try:
        return json_text.loads(text)
    except json_text.TooDeep:
        raise invalid(f"The request body is not valid: its JSON is nested more than {json_text.MAX_DEPTH} levels deep.") from None
    except ValueError:
        return {}


def json_response(body: Any, status: int = 200) -> Response:
    return Response(status_code=status, content_type=JSON_CONTENT_TYPE, body=dumps(body))


def dumps(body: Any) -> str:
    try:
        return json.dumps(body, separators=(",", ":"), default=_json_default, allow_nan=False)
    except ValueError:
        # A NaN or an infinity stored before requests were checked for them (validation.json_values): answered in
        # protobuf's JSON for a double rather than failing every later read of that item.
        logger.warning("an answer held a NaN or an infinity; written as protobuf's JSON strings")
        return json.dumps(protobuf_json_floats(body), separators=(",", ":"), default=_json_default, allow_nan=False)


def _json_default(value: Any) -> Any:
    if isinstance(value, set):
        return sorted(value)
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


def unrouted(method: str, path: str, query: str = "") -> Response:
    """What MLflow's server answers a request the route table has no operation for: ENDPOINT_NOT_FOUND for an
    unknown path; for a known one 405 with its methods (204 to OPTIONS, which lists them)."""
    merged = re.sub(r"/{2,}", "/", path)
    if merged != path and match(method, merged) is not None:
        # Werkzeug's merge_slashes: MLflow's server redirects ``//x`` to the route ``/x`` (308 keeps the method).
        location = merged + (f"?{query}" if query else "")
        return Response(status_code=308, content_type="text/plain", body="", headers={"Location": location})
    allowed = allowed_methods(path)
    if not allowed:
        return error_response(endpoint_not_found(method, path))
    headers = {"Allow": ", ".join(allowed)}
    if method == "OPTIONS":
        return Response(status_code=204, content_type=None, body="", headers=headers)
    response = error_response(method_not_allowed(method, path, allowed))
    response.headers.update(headers)
    return response


# An error's message echoes the request's values; the answer must stay far below Lambda's 6 MB response cap.
MAX_ERROR_MESSAGE_CHARS = 100_000


def error_response(error: MlflowError) -> Response:
    body = error.to_json()
    if len(body["message"]) > MAX_ERROR_MESSAGE_CHARS:
        body["message"] = body["message"][:MAX_ERROR_MESSAGE_CHARS] + " ... (truncated)"
    return json_response(body, error.http_status)


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
    app = ThreadLocalHttpResolver(strip_prefixes=None)
    for route in routes_for(feature):
        if route.operation not in operations:
            raise RuntimeError(f"{feature}: no operation {route.operation} for {route.route_key}")
        app.route(route.powertools_rule, route.method)(_adapt(app, route.operation, operations[route.operation]))

    @app.not_found
    def _not_found(_: NotFoundError) -> Response:
        event = app.current_event
        if auth.basic_enabled() and enforce.identity_of(event.raw_event) is None:
            return enforce.unauthenticated()  # MLflow authenticates before it routes
        return unrouted(event.request_context.http.method.upper(), event.get("rawPath") or event.path, event.get("rawQueryString") or "")

    @app.exception_handler(MlflowError)
    def _mlflow_error(error: MlflowError) -> Response:
        if error.http_status >= 500:
            logger.exception("request failed")
        return error_response(error)

    @app.exception_handler(Exception)
    def _unexpected(error: Exception) -> Response:
        if is_capacity_failure(error):
            # 429 (not 503): MLflow's client retries a POST on 408 and 429 only, and nothing was written.
            logger.warning("DynamoDB refused the request for capacity after retries", exc_info=True)
            return error_response(MlflowError(REQUEST_LIMIT_MESSAGE, "REQUEST_LIMIT_EXCEEDED"))
        if table.is_timeout(error):
            # Answered in the function's time, where a hung call would have ended in API Gateway's bare 503.
            logger.warning("DynamoDB did not answer in time after retries", exc_info=True)
            return error_response(MlflowError(TIMEOUT_MESSAGE, "TEMPORARILY_UNAVAILABLE"))
        logger.exception("unexpected failure")
        return error_response(MlflowError("An internal error occurred. See the server logs for the correlation id.", "INTERNAL_ERROR"))

    return app


TIMEOUT_MESSAGE = "The tracking store did not answer in time; retry the request (a write may or may not have been applied)."
REQUEST_LIMIT_MESSAGE = "The tracking store is busy (its request rate limit was reached); retry the request."
# DynamoDB's answers to "too much at once", once botocore's own retries are spent: nothing was written.
_CAPACITY_CODES = frozenset({"ProvisionedThroughputExceededException", "ThrottlingException", "RequestLimitExceeded"})


def is_capacity_failure(error: Exception) -> bool:
    code = (getattr(error, "response", None) or {}).get("Error", {}).get("Code")
    return isinstance(error, Unavailable) or code in _CAPACITY_CODES


def _adapt(app: APIGatewayHttpResolver, name: str, operation: Operation) -> Callable[..., Response]:
    def endpoint(**_: Any) -> Response:
        req = _request_from(app)
        with request_workspace.bound(_workspace_of(name, req)):
            return _answer(app, operation, name, req)

    endpoint.__name__ = operation.__name__
    return endpoint


# Operations that hold no workspace data and answer whatever the header says: server-info (as MLflow: the UI asks
# it before choosing a workspace) and the UI's static pages (whose function may read user items only).
_WORKSPACE_FREE = frozenset({"server_info", "index", "static_file"})


def _workspace_of(operation: str, req: Request) -> str:
    """workspace_helpers.resolve_workspace_for_request_if_enabled: the header's workspace (or ``default``) when
    workspaces are enabled."""
    if not request_workspace.enabled() or operation in _WORKSPACE_FREE:
        return request_workspace.DEFAULT_WORKSPACE
    from serverless_mlflow.store import workspaces  # only with workspaces enabled: not at every cold start

    return workspaces.resolve(req.headers.get(request_workspace.HEADER))


def _answer(app: APIGatewayHttpResolver, operation: Operation, name: str, req: Request) -> Response:
    if auth.basic_enabled():
        # Basic auth: MLflow's validators before the operation, its after-request hooks after it.
        req.identity = enforce.identity_of(app.current_event.raw_event)
        result = enforce.guarded(name, operation, req, req.identity)
    else:
        result = operation(req)
    if isinstance(result, Response):
        return result
    return json_response(result if result is not None else {})


def lambda_entry(app: APIGatewayHttpResolver) -> Callable[[dict[str, Any], Any], dict[str, Any]]:
    """The Lambda handler for a feature: structured logs with correlation id, traces, metrics."""

    @observed.handler(correlation_id_path=correlation_paths.API_GATEWAY_HTTP, capture_response=False)
    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        # DynamoDB retries stop in time to answer 429 before the function (and API Gateway) gives up.
        with deadline.bound(context):
            return within_response_limit(app.resolve(ajax_to_api(event), context))

    return handler


# Lambda refuses a response over 6 MB (6,291,456 bytes of JSON), and API Gateway then answers a bare
# {"message": "Internal Server Error"}: the function answers MLflow's error instead.
MAX_RESPONSE_BYTES = 6 * 1024 * 1024
RESPONSE_TOO_LARGE = "The answer is larger than the 6 MB an AWS Lambda function can return; ask for less (a smaller page, fewer runs)."


def within_response_limit(response: dict[str, Any]) -> dict[str, Any]:
    if len(json.dumps(response)) <= MAX_RESPONSE_BYTES:
        return response
    logger.error("the response exceeds Lambda's 6 MB payload limit")
    error = MlflowError(RESPONSE_TOO_LARGE, "INTERNAL_ERROR")
    return {
        "statusCode": error.http_status,
        "headers": {"Content-Type": JSON_CONTENT_TYPE},
        "body": dumps(error.to_json()),
        "isBase64Encoded": False,
    }


def ajax_to_api(event: dict[str, Any]) -> dict[str, Any]:
    """The event of a request that reached the function through a greedy route (an ``/ajax-api/...`` group,
    the UI's paths, an ``/api/...`` group or a ``GREEDY_FAMILIES`` prefix: its route key is ``ANY ...``) as if it
    had come in on the table's own route: an ajax path mapped to ``/api/...``, and the path parameters of the table
    route (not API Gateway's ``proxy``)."""
    raw_path = event.get("rawPath") or ""
    stage = (event.get("requestContext") or {}).get("stage", "$default")
    stage_prefix = f"/{stage}" if stage != "$default" and raw_path.startswith(f"/{stage}/") else ""
    path = raw_path[len(stage_prefix) :]
    greedy = str(event.get("routeKey") or "").startswith("ANY ")
    if not greedy and not path.startswith(AJAX_PREFIX) and family_of(path) is None:
        return event
    method = str((event.get("requestContext") or {}).get("http", {}).get("method", "GET")).upper()
    mapped = operation_path(method, path)
    found = match(method, path)
    context = dict(event.get("requestContext") or {})
    context["http"] = {**context.get("http", {}), "path": stage_prefix + mapped}
    return {**event, "rawPath": stage_prefix + mapped, "requestContext": context, "pathParameters": found[1] if found else {}}
