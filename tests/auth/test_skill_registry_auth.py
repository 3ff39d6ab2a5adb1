"""The skill registry under basic auth: every signed-in user reads it, only admins change it (MLflow's per-skill
``skill`` grants are not served; ``auth/rules/platform.py``), the registering admin is recorded, and no route answers
without credentials. Driven over REST: the project's pinned client (3.17.2) has no skill methods."""

from __future__ import annotations

import pytest
import requests
from mlflow.server import get_app_client

from tests.auth.conftest import ADMIN, ADMIN_PASSWORD
from tests.auth.test_client import PASSWORD, as_user
from tests.conftest import unique

pytestmark = pytest.mark.e2e

SKILLS = "/api/3.0/mlflow/skills"


def test_users_read_and_admins_write(basic_server: str) -> None:
    user = unique("skill-user")
    name, org = unique("auth"), unique("org")
    admin = (ADMIN, ADMIN_PASSWORD)

    def call(method: str, path: str, auth: tuple[str, str] | None, body: dict | None = None) -> requests.Response:
        return requests.request(method, f"{basic_server}{SKILLS}{path}", json=body, auth=auth, timeout=30)

    with as_user(ADMIN, ADMIN_PASSWORD):
        get_app_client("basic-auth", tracking_uri=basic_server).create_user(user, PASSWORD)
    assert call("POST", "", admin, {"name": name, "description": "by the admin"}).status_code == 200
    created = call("POST", f"/@{org}/{name}/versions", admin, {"source": "https://example.com/s.zip"})
    assert created.status_code == 200 and created.json()["created_by"] == ADMIN
    assert call("GET", f"/@{org}/{name}", admin).json()["created_by"] == ADMIN

    reader = (user, PASSWORD)
    got = call("GET", f"/{name}", reader)
    assert (got.status_code, got.json()["description"], got.json()["created_by"]) == (200, "by the admin", ADMIN)
    assert call("GET", f"/@{org}/{name}/versions/1", reader).status_code == 200
    assert call("GET", f"/@{org}/{name}/aliases/latest", reader).status_code == 200
    listed = call("GET", f"?include_skill_identities={name}", reader).json()["skills"]
    assert [skill["name"] for skill in listed] == [name]
    for method, path, body in (
        ("POST", "", {"name": unique("mine")}),
        ("PATCH", f"/{name}", {"description": "mine now"}),
        ("POST", f"/{name}/tags", {"key": "k", "value": "v"}),
        ("POST", f"/{name}/versions", {"source": "https://example.com/mine.zip"}),
        ("POST", "/bulk-register", {"skills": [{"name": name, "source": "https://x/a.git", "digest": "ab" * 32}]}),
        ("POST", f"/@{org}/{name}/aliases", {"alias": "prod", "version": 1}),
        ("DELETE", f"/@{org}/{name}/versions/1", None),
        ("DELETE", f"/{name}", None),
    ):
        refused = call(method, path, reader, body)
        assert (refused.status_code, refused.text) == (403, "Permission denied"), (method, path)
    assert call("GET", f"/{name}", None).status_code == 401
    assert call("GET", f"/{name}", (user, "wrong-password")).status_code == 401
    assert call("GET", f"/{name}", admin).json()["description"] == "by the admin"
    assert call("DELETE", f"/{name}", admin).status_code == 200
    assert call("DELETE", f"/@{org}/{name}", admin).status_code == 200
