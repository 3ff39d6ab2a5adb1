"""Applies the rule table around a feature operation: 401, 403, or run it (then its after-hook)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools.event_handler import Response

from serverless_mlflow.auth.authorizer import authorize_cached
from serverless_mlflow.auth.checks import Identity, Unauthenticated, is_admin
from serverless_mlflow.auth.rules import PUBLIC, rule_for
from serverless_mlflow.core.errors import MlflowError

if TYPE_CHECKING:
    from serverless_mlflow.http.api import Request

REALM = 'Basic realm="mlflow"'
# MLflow's own texts (make_basic_auth_response / make_forbidden_response).
UNAUTHENTICATED_TEXT = (
    "You are not authenticated. Please see https://www.mlflow.org/docs/latest/auth/index.html#authenticating-to-mlflow "
    "on how to authenticate."
)


def unauthenticated() -> Response:
    """401 with the challenge a browser needs to show its login prompt."""
    return Response(
        status_code=401, content_type="text/html; charset=utf-8", body=UNAUTHENTICATED_TEXT, headers={"WWW-Authenticate": REALM}
    )


def forbidden() -> Response:
    return Response(status_code=403, content_type="text/html; charset=utf-8", body="Permission denied")


def identity_of(event: dict[str, Any]) -> Identity | None:
    """The identity the authorizer put in the request context; None when it found no valid credentials."""
    context = ((event.get("requestContext") or {}).get("authorizer") or {}).get("lambda") or {}
    if context.get("authenticated") not in (True, "true"):
        return None
    service = context.get("service")
    return Identity(
        username=str(context["username"]),
        is_admin=context.get("is_admin") in (True, "true"),
        service=service if isinstance(service, str) else None,
    )


def guarded(operation_name: str, run: Callable[[Request], Any], req: Request, identity: Identity | None) -> Any:
    if operation_name in PUBLIC:
        # No credentials needed, but credentials that are sent must be right: a wrong password is never
        # accepted, not even for a page anyone may see (MLflow answers its protected "/" so).
        if req.headers.get("authorization") and not authorize_cached(req.headers["authorization"])["context"]["authenticated"]:
            return unauthenticated()
        return run(req)
    if identity is None:
        return unauthenticated()
    rule = rule_for(operation_name)
    try:
        if not _allowed(rule.check, req, identity):
            return forbidden()
        if rule.prepare is not None:
            prepared = rule.prepare(req, identity)
            if isinstance(prepared, dict):
                return prepared
            req = prepared
        result = run(req)
        if rule.after is not None and not isinstance(result, Response):
            result = rule.after(req, identity, result, run)
        return result
    except Unauthenticated:
        return unauthenticated()


def _allowed(check: Callable[[Request, Identity], bool], req: Request, identity: Identity) -> bool:
    try:
        return check(req, identity)
    except MlflowError:
        # Admins skip MLflow's validators altogether, so a validator's own 400/404 never reaches them.
        if is_admin(identity):
            return True
        raise
