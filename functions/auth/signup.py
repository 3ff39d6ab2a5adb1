"""MLflow's server-rendered sign-up form (``GET /signup``) and its POST (``users/create-ui``), as the basic-auth
app serves them (mlflow/server/auth/__init__.py's ``signup`` and ``create_user_ui``).

MLflow protects the POST with Flask-WTF's CSRF token, kept in a signed session cookie. This server keeps no
session: the token is an HMAC over the caller and the time, keyed by the caller's password hash, so only the
page served to that user makes a token the POST accepts, for an hour (Flask-WTF's default), and a password
change voids it. Who may open the form (admins and workspace admins) and post it (admins: MLflow's fail-closed
default gives the route no validator) is MLflow's.
"""

from __future__ import annotations

import hashlib
import hmac
import time
from pathlib import Path
from string import Template
from typing import Any
from urllib.parse import parse_qs

from aws_lambda_powertools.event_handler import Response

from serverless_mlflow.auth import browser, enforce, store
from serverless_mlflow.auth.authorizer import authorize_cached
from serverless_mlflow.auth.checks import Identity, create_user
from serverless_mlflow.http.api import Request
from serverless_mlflow.request.routes import M2

CREATE_USER_UI = f"{M2}/users/create-ui"
TOKEN_SECONDS = 3600
_PAGE = Template((Path(__file__).parent / "signup.html").read_text())
_HTML = "text/html; charset=utf-8"


def _html(status: int, body: str) -> Response:
    return Response(status_code=status, content_type=_HTML, body=body)


def _bad_request(reason: str) -> Response:
    """Werkzeug's 400 page, which MLflow answers for a CSRF failure or a form field missing."""
    return _html(400, f"<!doctype html>\n<html lang=en>\n<title>400 Bad Request</title>\n<h1>Bad Request</h1>\n<p>{reason}</p>\n")


def _escape(text: str) -> str:
    # Jinja's autoescape (markupsafe), as MLflow renders the flashed message.
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&#34;").replace("'", "&#39;")


def _alert(message: str, href: str) -> Response:
    """MLflow's ``alert``: a flashed message shown by the browser, then on to ``href``."""
    return _html(
        200,
        '\n<script type = "text/javascript">\n\n  \n    \n'
        f'      alert("{_escape(message)}");\n'
        f'    \n  \n\n      window.location.href = "{href}";\n</script>',
    )


def _signature(user: store.User, issued: int) -> str:
    return hmac.new(user.password_hash.encode(), f"signup|{user.username}|{issued}".encode(), hashlib.sha256).hexdigest()


def csrf_token(user: store.User, now: float | None = None) -> str:
    issued = int(time.time() if now is None else now)
    return f"{issued}.{_signature(user, issued)}"


def csrf_refusal(user: store.User, token: str | None, now: float | None = None) -> str | None:
    """Flask-WTF's reason to refuse a token, or None when it is this user's and fresh."""
    if not token:
        return "The CSRF token is missing."
    issued, _, signature = token.partition(".")
    if not issued.isdigit() or not hmac.compare_digest(signature, _signature(user, int(issued))):
        return "The CSRF token is invalid."
    if (time.time() if now is None else now) - int(issued) > TOKEN_SECONDS:
        return "The CSRF token has expired."
    return None


def signup(req: Request) -> Response:
    """The form. A public route: a browser opening it gets the login prompt first (API Gateway's own 401 for a
    request without credentials does not make a browser ask for them)."""
    refused = browser.challenge(req)
    if refused is not None:
        return refused
    context = authorize_cached(req.headers.get("authorization"))["context"]
    identity = Identity(username=str(context["username"]), is_admin=bool(context.get("is_admin")))
    if not create_user(req, identity):
        return enforce.forbidden()
    user = store.get_user(identity.username)
    return _html(200, _PAGE.substitute(action=CREATE_USER_UI, csrf_token=csrf_token(user)))


def create_user_ui(req: Request, caller: str) -> Any:
    """The form's POST: MLflow's order of checks (CSRF, content type, fields, an existing user)."""
    content_type = (req.headers.get("content-type") or "").split(";")[0].strip()
    form = {key: values[0] for key, values in parse_qs(req.raw_body.decode("utf-8", "replace"), keep_blank_values=True).items()}
    token = form.get("csrf_token") if content_type in ("application/x-www-form-urlencoded", "multipart/form-data") else None
    refusal = csrf_refusal(store.get_user(caller), token or req.headers.get("x-csrftoken") or req.headers.get("x-csrf-token"))
    if refusal is not None:
        return _bad_request(refusal)
    if content_type != "application/x-www-form-urlencoded":
        return _html(400, "Invalid content type. Must be application/x-www-form-urlencoded")
    if "username" not in form or "password" not in form:
        return _bad_request("The browser (or proxy) sent a request that this server could not understand.")
    username, password = form["username"], form["password"]
    if not username or not password:
        return _html(400, "Username and password cannot be empty.")
    if store.get_user_or_none(username) is not None:
        return _alert(f"Username has already been taken: {username}", "/signup")
    store.create_user(username, password)
    return _alert(f"Successfully signed up user: {username}", "/")
