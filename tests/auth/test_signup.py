"""MLflow's sign-up form (``GET /signup``) and its POST (``/api/2.0/mlflow/users/create-ui``), ours against
MLflow's basic-auth app: who may open and post it, its CSRF token, and every answer of the POST."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest
import requests

from tests.auth.conftest import ADMIN, ADMIN_PASSWORD, WITH_MLFLOW, basic_runtime
from tests.conftest import unique

pytestmark = WITH_MLFLOW

M2, M3 = "/api/2.0/mlflow", "/api/3.0/mlflow"
CREATE_UI = f"{M2}/users/create-ui"
PASSWORD = "signup-password-1"
_TOKEN = re.compile(r'name="csrf_token" value="([^"]+)"')
FORM = "application/x-www-form-urlencoded"


@pytest.fixture(scope="module")
def ours(server: str) -> Iterator[str]:
    with basic_runtime() as url:
        yield url


def _admin(url: str) -> requests.Session:
    """A browser signed in as the admin (MLflow's CSRF token lives in its session cookie)."""
    session = requests.Session()
    session.auth = (ADMIN, ADMIN_PASSWORD)
    return session


def _token(session: requests.Session, url: str) -> str:
    page = session.get(f"{url}/signup", timeout=30)
    assert page.status_code == 200, page.text
    return _TOKEN.search(page.text).group(1)


def _answer(response: requests.Response) -> tuple[int, str, Any]:
    try:
        body: Any = response.json()
        body = body.get("error_code", body)
    except ValueError:
        body = response.text
    return response.status_code, response.headers.get("content-type", ""), body


def _play(url: str, names: dict[str, str]) -> dict[str, Any]:
    """The same requests on one server; ``names`` are the users it creates (unique per server)."""
    out: dict[str, Any] = {}
    admin = _admin(url)
    member, workspace_admin = names["member"], names["workspace_admin"]
    for name in (member, workspace_admin):
        assert admin.post(f"{url}{M2}/users/create", json={"username": name, "password": PASSWORD}, timeout=30).status_code == 200
    role = admin.post(f"{url}{M3}/roles/create", json={"name": names["role"], "workspace": "default"}, timeout=30).json()["role"]["id"]
    admin.post(
        f"{url}{M3}/roles/permissions/add",
        json={"role_id": role, "resource_type": "workspace", "resource_pattern": "*", "permission": "MANAGE"},
        timeout=30,
    )
    admin.post(f"{url}{M3}/roles/assign", json={"username": workspace_admin, "role_id": role}, timeout=30)

    anonymous = requests.get(f"{url}/signup", timeout=30)
    out["anonymous"] = (*_answer(anonymous), anonymous.headers.get("www-authenticate"))
    out["wrong password"] = _answer(requests.get(f"{url}/signup", auth=(ADMIN, "not-the-password"), timeout=30))
    out["member"] = _answer(requests.get(f"{url}/signup", auth=(member, PASSWORD), timeout=30))
    page = admin.get(f"{url}/signup", timeout=30)
    out["admin's form"] = (page.status_code, page.headers.get("content-type"), _TOKEN.sub("TOKEN", page.text))
    workspace_admin_page = requests.get(f"{url}/signup", auth=(workspace_admin, PASSWORD), timeout=30)
    out["workspace admin's form"] = (workspace_admin_page.status_code, _TOKEN.sub("TOKEN", workspace_admin_page.text))

    token = _TOKEN.search(page.text).group(1)
    new = names["new"]

    def post(label: str, session: requests.Session | None = None, **kwargs: Any) -> None:
        out[label] = _answer((session or admin).post(f"{url}{CREATE_UI}", timeout=30, **kwargs))

    post("no token", data={"username": new, "password": PASSWORD})
    post("a forged token", data={"csrf_token": "1.abc", "username": new, "password": PASSWORD})
    member_session = requests.Session()
    member_session.auth = (member, PASSWORD)
    post("a member", member_session, data={"csrf_token": token, "username": new, "password": PASSWORD})
    ws_session = requests.Session()
    ws_session.auth = (workspace_admin, PASSWORD)
    ws_session.cookies.update(admin.cookies)
    post("a workspace admin", ws_session, data={"csrf_token": token, "username": new, "password": PASSWORD})
    post("JSON", json={"username": new, "password": PASSWORD}, headers={"X-CSRFToken": token})
    post("an empty username", data={"csrf_token": token, "username": "", "password": PASSWORD})
    post("no password field", data={"csrf_token": token, "username": new})
    post("a short password", data={"csrf_token": token, "username": new, "password": "short"})
    post("signs up", data={"csrf_token": token, "username": new, "password": PASSWORD})
    out["the new user signs in"] = (
        requests.get(f"{url}{M2}/users/current", auth=(new, PASSWORD), timeout=30).json()["user"]["username"] == new
    )
    post("signs up again", data={"csrf_token": token, "username": new, "password": PASSWORD})
    quoted = names["quoted"]
    post("a name to escape", data={"csrf_token": token, "username": quoted, "password": PASSWORD})
    out["ajax path"] = admin.post(f"{url}/ajax-api/2.0/mlflow/users/create-ui", data={"csrf_token": token}, timeout=30).status_code
    out["GET of the POST"] = admin.get(f"{url}{CREATE_UI}", timeout=30).status_code
    return out


def _names(prefix: str) -> dict[str, str]:
    return {
        "member": unique(f"{prefix}-m"),
        "workspace_admin": unique(f"{prefix}-w"),
        "role": unique(f"{prefix}-role"),
        "new": "SIGNUP-NEW",
        "quoted": "SIGNUP-Q\"<'&>",
    }


def _neutral(answers: dict[str, Any], names: dict[str, str]) -> dict[str, Any]:
    """Each server's unique names replaced by placeholders."""
    text = json.dumps(answers)
    for key in ("member", "workspace_admin", "role"):
        text = text.replace(names[key], key.upper())
    return json.loads(text)


def test_signup_same_as_mlflow(ours: str, mlflow_server: str) -> None:
    mine, theirs = _names("ours"), _names("theirs")
    # The new users' names must differ between the servers' runs only if they share a table: they do not.
    mine_answers = _neutral(_play(ours, {**mine, "new": unique("su"), "quoted": unique("su") + "\"<'&>"}), mine)
    theirs_answers = _neutral(_play(mlflow_server, {**theirs, "new": unique("su"), "quoted": unique("su") + "\"<'&>"}), theirs)
    for key in ("signs up", "signs up again", "a name to escape"):
        mine_answers[key] = [*mine_answers[key][:2], re.sub(r"su-?[0-9a-f]+", "NAME", mine_answers[key][2])]
        theirs_answers[key] = [*theirs_answers[key][:2], re.sub(r"su-?[0-9a-f]+", "NAME", theirs_answers[key][2])]
    # MLflow serves the POST under /api/ alone (404 on /ajax-api/); here the ajax path reaches the same
    # operation, CSRF check included (the web UI's ajax routes are one greedy route per group).
    assert (mine_answers.pop("ajax path"), theirs_answers.pop("ajax path")) == (400, 404)
    assert mine_answers == theirs_answers
    assert mine_answers["signs up"][0] == 200 and "Successfully signed up user" in mine_answers["signs up"][2]
    assert mine_answers["the new user signs in"] is True
    assert mine_answers["a member"][0] == 403 and mine_answers["a workspace admin"][0] == 403
    assert "&#34;&lt;&#39;&amp;&gt;" in mine_answers["a name to escape"][2]


def test_a_token_is_bound_to_its_user(ours: str) -> None:
    """A token of another user's form is refused (MLflow binds it to the browser's session cookie)."""
    admin = _admin(ours)
    other = unique("su-admin")
    admin.post(f"{ours}{M2}/users/create", json={"username": other, "password": PASSWORD}, timeout=30)
    admin.patch(f"{ours}{M2}/users/update-admin", json={"username": other, "is_admin": True}, timeout=30)
    session = requests.Session()
    session.auth = (other, PASSWORD)
    token = _token(session, ours)
    refused = admin.post(f"{ours}{CREATE_UI}", data={"csrf_token": token, "username": unique("su"), "password": PASSWORD}, timeout=30)
    assert (refused.status_code, "The CSRF token is invalid." in refused.text) == (400, True)
    # A password change voids the tokens of the old one.
    admin.patch(f"{ours}{M2}/users/update-password", json={"username": other, "password": "another-password-2"}, timeout=30)
    session.auth = (other, "another-password-2")
    stale = session.post(f"{ours}{CREATE_UI}", data={"csrf_token": token, "username": unique("su"), "password": PASSWORD}, timeout=30)
    assert (stale.status_code, "The CSRF token is invalid." in stale.text) == (400, True)
    fresh = session.post(
        f"{ours}{CREATE_UI}", data={"csrf_token": _token(session, ours), "username": unique("su"), "password": PASSWORD}, timeout=30
    )
    assert fresh.status_code == 200 and "Successfully signed up user" in fresh.text
