"""Every route of the route table (routes added later included) refuses a request without valid credentials."""

from __future__ import annotations

import re

import pytest
import requests

from serverless_mlflow.auth.rules import RULES
from serverless_mlflow.auth.rules.genai import GENAI_RULES
from serverless_mlflow.auth.rules.platform import PLATFORM_RULES
from serverless_mlflow.auth.rules.tracking import TRACKING_RULES
from serverless_mlflow.request.routes import ROUTES, Route
from tests.auth.conftest import ADMIN, ADMIN_PASSWORD

PROTECTED = [route for route in ROUTES if not route.public]
PUBLIC = [route for route in ROUTES if route.public]


def _concrete(path: str) -> str:
    return re.sub(r"\{\w+\+\}", "0/some/file.txt", re.sub(r"\{\w+\}", "x", path))


def _call(base: str, route: Route, auth: tuple[str, str] | None) -> requests.Response:
    return requests.request(
        route.method, base + _concrete(route.path), json={} if route.method not in ("GET", "HEAD") else None, auth=auth, timeout=60
    )


@pytest.mark.parametrize("route", PROTECTED, ids=[r.route_key for r in PROTECTED])
def test_no_credentials_is_401(basic_server: str, route: Route) -> None:
    # API Gateway itself answers a request without the identity source (the Authorization header).
    response = _call(basic_server, route, None)
    assert response.status_code == 401


@pytest.mark.parametrize("route", PROTECTED, ids=[r.route_key for r in PROTECTED])
def test_wrong_password_is_401_with_a_challenge(basic_server: str, route: Route) -> None:
    response = _call(basic_server, route, ("admin", "not-the-password"))
    assert response.status_code == 401
    # What makes a browser show its login prompt (MLflow's make_basic_auth_response).
    assert response.headers["WWW-Authenticate"] == 'Basic realm="mlflow"'
    assert "You are not authenticated" in response.text


def test_unknown_user_and_malformed_headers_are_401(basic_server: str) -> None:
    url = f"{basic_server}/api/2.0/mlflow/experiments/get?experiment_id=0"
    assert requests.get(url, auth=("nobody", "whatever-password"), timeout=30).status_code == 401
    for header in ("Bearer abc", "Basic !!!notbase64", "Basic " + "bm9jb2xvbg==", "Basic"):
        response = requests.get(url, headers={"Authorization": header}, timeout=30)
        assert response.status_code == 401, header


def test_unknown_routes_need_credentials_too(basic_server: str) -> None:
    assert requests.get(f"{basic_server}/api/2.0/mlflow/nothing-here", timeout=30).status_code == 401
    response = requests.get(f"{basic_server}/api/2.0/mlflow/nothing-here", auth=("admin", "bad-password-1"), timeout=30)
    assert response.status_code == 401 and "WWW-Authenticate" in response.headers


@pytest.mark.parametrize("route", PUBLIC, ids=[r.route_key for r in PUBLIC])
def test_public_routes_answer_without_credentials(basic_server: str, route: Route) -> None:
    if route.operation == "static_file":
        # The UI bundle's files are public, as MLflow's /static-files are.
        response = requests.get(f"{basic_server}/static-files/favicon.ico", timeout=60)
        assert response.status_code == 200 and response.content
        return
    response = (
        _call(basic_server, route, None)
        if route.operation != "index"
        else requests.get(basic_server + "/", allow_redirects=False, timeout=60)
    )
    if route.operation in ("login", "signup", "index"):
        # The browser's entry points and MLflow's sign-up form challenge (instead of API Gateway's bare 401), as
        # MLflow's own "/" does.
        assert response.status_code == 401 and response.headers["WWW-Authenticate"] == 'Basic realm="mlflow"'
    else:
        assert response.status_code == 200


@pytest.mark.parametrize("route", PUBLIC, ids=[r.route_key for r in PUBLIC])
@pytest.mark.parametrize(
    "credentials", [("admin", "not-the-password"), ("nobody", "some-password-1")], ids=["wrong password", "unknown user"]
)
def test_public_routes_never_accept_wrong_credentials(basic_server: str, route: Route, credentials: tuple[str, str]) -> None:
    # Public routes need no credentials, but credentials that are sent are checked (MLflow's "/" answers so).
    path = "/static-files/favicon.ico" if route.operation == "static_file" else _concrete(route.path)
    response = requests.request(route.method, basic_server + path, auth=credentials, allow_redirects=False, timeout=60)
    assert response.status_code == 401
    assert response.headers["WWW-Authenticate"] == 'Basic realm="mlflow"'


def test_public_routes_accept_right_credentials(basic_server: str) -> None:
    for path in ("/", "/health", "/static-files/favicon.ico", "/api/3.0/mlflow/server-info"):
        assert requests.get(basic_server + path, auth=(ADMIN, ADMIN_PASSWORD), timeout=60).status_code == 200, path


def test_every_protected_operation_has_a_rule() -> None:
    # An operation without a row is admin-only (fail closed); the shipped routes all have a deliberate row.
    assert {route.operation for route in PROTECTED} <= set(RULES)


def test_the_rule_sections_name_disjoint_operations() -> None:
    # RULES merges the sections; an operation in two of them would silently keep only the later row.
    sections = [set(TRACKING_RULES), set(GENAI_RULES), set(PLATFORM_RULES)]
    assert sum(len(s) for s in sections) == len(RULES)
