"""MLflow's basic-auth app routes: users, per-user permissions, the current user, and the browser's login.

Who may call each route is declared in ``serverless_mlflow.auth.rules`` (checked before these run); these
handlers do what mlflow/server/auth/__init__.py's handlers do. Without basic auth the routes do not exist,
as on an MLflow server started without ``--app-name basic-auth``.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.event_handler import Response

from auth import roles, signup, users
from serverless_mlflow import auth as auth_mode
from serverless_mlflow.auth import browser
from serverless_mlflow.core.errors import endpoint_not_found
from serverless_mlflow.http.api import Request, build_app, lambda_entry


def _basic_only(operation: Any) -> Any:
    def run(req: Request) -> Any:
        if not auth_mode.basic_enabled():
            raise endpoint_not_found(req.method, req.path)
        return operation(req, _caller(req))

    run.__name__ = operation.__name__
    return run


def _basic_page(page: Any) -> Any:
    def run(req: Request) -> Any:
        if not auth_mode.basic_enabled():
            raise endpoint_not_found(req.method, req.path)
        return page(req)

    run.__name__ = page.__name__
    return run


def _caller(req: Request) -> str:
    # Only reached through enforce.guarded, which has already required a valid identity.
    return req.identity.username if req.identity else ""


def login(req: Request) -> Response:
    """The browser's entry point: challenge until the browser sends valid credentials, then go to the UI.

    A browser keeps the credentials it typed for the realm and sends them with every later request to this
    origin, so every other route (which API Gateway guards with the authorizer) just works afterwards.
    """
    refused = browser.challenge(req)
    if refused is not None:
        return refused
    return Response(status_code=302, content_type="text/plain", body="", headers={"Location": "/", "Cache-Control": "no-store"})


app = build_app(
    "auth",
    {
        "login": login,
        "signup": _basic_page(signup.signup),
        "create_user_ui": _basic_only(signup.create_user_ui),
        "create_user": _basic_only(users.create_user),
        "get_user": _basic_only(users.get_user),
        "get_current_user": _basic_only(users.get_current_user),
        "list_users": _basic_only(users.list_users),
        "update_user_password": _basic_only(users.update_user_password),
        "update_user_admin": _basic_only(users.update_user_admin),
        "delete_user": _basic_only(users.delete_user),
        "grant_user_permission": _basic_only(users.grant_user_permission),
        "revoke_user_permission": _basic_only(users.revoke_user_permission),
        "get_user_permission": _basic_only(users.get_user_permission),
        "list_current_user_permissions": _basic_only(users.list_current_user_permissions),
        "list_user_permissions": _basic_only(users.list_user_permissions),
        **{
            name: _basic_only(getattr(roles, name))
            for name in (
                "create_role",
                "get_role",
                "list_roles",
                "update_role",
                "delete_role",
                "add_role_permission",
                "remove_role_permission",
                "list_role_permissions",
                "update_role_permission",
                "assign_role",
                "unassign_role",
                "list_user_roles",
                "list_role_users",
            )
        },
    },
)
lambda_handler = lambda_entry(app)
