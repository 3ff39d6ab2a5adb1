"""Credentials checked by a route itself, for what a browser opens directly (no authorizer on the route).

API Gateway answers a request without ``Authorization`` on an authorizer route with a bare 401 that does
not make a browser prompt. A public route (``routes.PUBLIC_OPERATIONS``) that a person opens in a browser
(``/login``; the UI's index page can do the same) calls ``challenge`` and gets MLflow's 401 +
``WWW-Authenticate`` until the browser sends valid credentials, which it then keeps sending to the origin.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from aws_lambda_powertools.event_handler import Response

from serverless_mlflow import auth
from serverless_mlflow.auth.authorizer import authorize_cached
from serverless_mlflow.core.deferred import deferred

# MLflow's permission rules load only when basic auth is on (the UI's cold start without it stays lean).
enforce = deferred("serverless_mlflow.auth.enforce")

if TYPE_CHECKING:
    from serverless_mlflow.http.api import Request


def challenge(req: Request) -> Response | None:
    """None when basic auth is off or the request carries valid credentials; else the 401 challenge."""
    if not auth.basic_enabled():
        return None
    if authorize_cached(req.headers.get("authorization"))["context"]["authenticated"]:
        return None
    return enforce.unauthenticated()
