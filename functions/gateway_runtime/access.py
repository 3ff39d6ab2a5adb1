"""Who may call the gateway (``authorization=basic``): MLflow's FastAPI permission middleware for ``/gateway/``
(``mlflow/server/auth/__init__.py``: ``_authenticate_fastapi_request``, ``_get_gateway_validator``).

Credentials come from ``X-MLflow-Authorization`` (on gateway routes a coding agent's own provider key holds
the ``Authorization`` header) or ``Authorization``. Behind the HTTP API the authorizer has already checked the
``Authorization`` header; anything else (the other header, or the function URL, which has no authorizer) is
checked here, with the authorizer's own code and a per-container cache. A non-admin needs USE on the endpoint
(a ``gateway_endpoint`` grant, else the default permission): an unknown endpoint is refused like one without
USE. The models list answers only the endpoints the caller may use.
"""

from __future__ import annotations

import os
from typing import Any

from serverless_mlflow.auth import authorizer
from serverless_mlflow.auth.checks import Identity, Unauthenticated, permissions_on
from serverless_mlflow.auth.permissions import GATEWAY_ENDPOINT, USE_ACTION
from serverless_mlflow.core.errors import MlflowError
from serverless_mlflow.llm_gateway import config as endpoint_config

from . import payloads
from .answers import GEMINI, INVOCATIONS, PROXY, Answer, Call, text

GATEWAY_AUTH_HEADER = "x-mlflow-authorization"
# MLflow reads these routes' bodies for the endpoint name ("model").
_ROUTES_NEEDING_BODY = frozenset(
    {
        "/mlflow/v1/chat/completions",
        "/openai/v1/chat/completions",
        "/openai/v1/embeddings",
        "/openai/v1/responses",
        "/anthropic/v1/messages",
        "/typesafe/v1/systemone",
    }
)


def basic_auth() -> bool:
    return os.environ.get("AUTHORIZATION") == "basic"


def identify(headers: dict[str, str], context: dict[str, Any] | None) -> tuple[str | None, bool]:
    """(username, is_admin) of the caller in basic mode; (None, False) when the credentials are missing or wrong."""
    header = headers.get(GATEWAY_AUTH_HEADER) or headers.get("authorization")
    if not header:
        return None, False
    if context is not None and not headers.get(GATEWAY_AUTH_HEADER):
        checked = context  # the HTTP API's authorizer checked this very header
    else:
        checked = authorizer.authorize_cached(header).get("context") or {}
    if checked.get("authenticated") not in (True, "true"):
        return None, False
    return str(checked["username"]), checked.get("is_admin") in (True, "true")


def _unauthenticated() -> Answer:
    from serverless_mlflow.auth.enforce import UNAUTHENTICATED_TEXT  # basic mode only: not at cold start

    return text(401, UNAUTHENTICATED_TEXT, {"WWW-Authenticate": 'Basic realm="mlflow"'})


def _endpoint_name(call: Call) -> str | None:
    """MLflow's ``_extract_gateway_endpoint_name``."""
    if match := INVOCATIONS.match(call.path):
        return match["endpoint"]
    if call.path in _ROUTES_NEEDING_BODY:
        return payloads.body(call.body).get("model")
    if match := GEMINI.match(call.path):
        return match["endpoint"]
    if match := PROXY.match(call.path):
        return match["endpoint"]
    return None


def may_use(identity: Identity, endpoint_name: str) -> bool:
    """MLflow's ``_validate_gateway_use_permission``: USE on the endpoint; an unknown one is refused."""
    try:
        endpoint_id = endpoint_config.endpoint_id_of(endpoint_name)
    except MlflowError:
        return False
    return permissions_on(identity, [(GATEWAY_ENDPOINT, endpoint_id)])[0].allows(USE_ACTION)


def refusal(call: Call) -> Answer | None:
    """The middleware's answer when the call may not proceed; None when it may (``call`` then names the user)."""
    if not basic_auth():
        return None
    username, is_admin = identify(call.headers, call.auth_context)
    if username is None:
        return _unauthenticated()
    call.username, call.is_admin = username, is_admin
    if is_admin or (call.method == "GET" and call.path == "/mlflow/v1/models"):
        return None
    try:
        name = _endpoint_name(call)
    except Exception as error:  # MLflow answers the body's JSON error as plain text, before any route runs
        return text(400, getattr(error, "detail", str(error)))
    if name is None:
        return text(400, "No endpoint name found")
    try:
        allowed = may_use(Identity(username, is_admin), str(name))
    except Unauthenticated:
        return _unauthenticated()
    return None if allowed else text(403, "Permission denied")


def usable_endpoints(call: Call) -> list[tuple[str, int]]:
    """The models list: every endpoint with a model, for a non-admin only those it may use."""
    names = endpoint_config.list_endpoint_names()
    if not basic_auth() or call.is_admin or call.username is None:
        return names
    identity = Identity(call.username, False)
    return [(name, created) for name, created in names if may_use(identity, name)]
