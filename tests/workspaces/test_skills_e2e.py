"""The skill registry (MLflow 3.18, ``/api/3.0/mlflow/skills``) in workspaces (issue 27), over HTTP against the local
runtime: scoped like registered models, as MLflow 3.18's workspace-aware store scopes its skill tables. The same
name in two workspaces is two skills (each answered with its workspace); a skill of another workspace is missing
for a request (get, update, versions, tags, aliases, delete; searches skip it); a workspace holding only a skill is
not deleted (RESTRICT counts MLflow 3.18's ``skills`` table).

MLflow's pinned client (3.17) has no skill registry and the 3.18 server it would be compared with runs from a
separate venv (tests/gateway/test_skill_registry.py compares every route with it, workspaces off); here another
workspace's skill is checked to answer exactly as a skill that never existed."""

from __future__ import annotations

from typing import Any

import mlflow
import pytest

from tests.conftest import unique
from tests.workspaces.support import raw

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("workspaces")]

SKILLS = "/api/3.0/mlflow/skills"


def _as_missing(answer: tuple[int, Any], name: str, never: str) -> tuple[int, Any]:
    """An answer about ``name`` with it replaced by a name that never existed (to compare with that one's answer)."""
    status, body = answer
    return status, {k: v.replace(name, never) if isinstance(v, str) else v for k, v in body.items()} if isinstance(body, dict) else body


def test_skills_stay_in_their_workspace(ours: str) -> None:
    suffix = unique("s")[-6:]
    team_a, team_b, only_skill = f"skills-a-{suffix}", f"skills-b-{suffix}", f"skills-c-{suffix}"
    mlflow.set_tracking_uri(ours)
    mlflow.set_workspace(None)
    for name in (team_a, team_b, only_skill):
        mlflow.create_workspace(name)
    shared, only_a, never = f"shared-{suffix}", f"only-a-{suffix}", f"never-{suffix}"

    for team, description in ((team_a, "team a"), (team_b, "team b")):
        status, created = raw(ours, "POST", SKILLS, team, json={"name": shared, "description": description})
        assert (status, created["workspace"], created["description"]) == (200, team, description), created
        status, version = raw(ours, "POST", f"{SKILLS}/{shared}/versions", team, json={"source": f"https://example.com/{team}.zip"})
        assert (status, version["version"], version["workspace"]) == (200, 1, team), version
    status, body = raw(ours, "POST", SKILLS, team_a, json={"name": shared})  # unique within a workspace
    assert (status, body["error_code"]) == (400, "RESOURCE_ALREADY_EXISTS"), body
    assert raw(ours, "POST", SKILLS, team_a, json={"name": only_a})[0] == 200
    assert raw(ours, "POST", f"{SKILLS}/{only_a}/versions", team_a, json={"source": "https://example.com/a.zip"})[0] == 200
    assert raw(ours, "POST", f"{SKILLS}/{only_a}/aliases", team_a, json={"alias": "prod", "version": 1})[0] == 200
    assert raw(ours, "POST", f"{SKILLS}/{only_a}/tags", team_a, json={"key": "team", "value": "a"})[0] == 200

    for other in (team_b, "default"):
        for method, path, body in (
            ("GET", f"{SKILLS}/{{}}", None),
            ("PATCH", f"{SKILLS}/{{}}", {"description": "stolen"}),
            ("GET", f"{SKILLS}/{{}}/versions/1", None),
            ("PATCH", f"{SKILLS}/{{}}/versions/1", {"status": "deprecated"}),
            ("GET", f"{SKILLS}/{{}}/aliases/prod", None),
            ("DELETE", f"{SKILLS}/{{}}/aliases/prod", None),
            ("POST", f"{SKILLS}/{{}}/tags", {"key": "team", "value": "b"}),
            ("DELETE", f"{SKILLS}/{{}}/tags/team", None),
            ("DELETE", f"{SKILLS}/{{}}/versions/1", None),
            ("DELETE", f"{SKILLS}/{{}}", None),
        ):
            answer = raw(ours, method, path.format(only_a), other, json=body)
            assert answer[0] == 404, (other, method, path, answer)
            assert _as_missing(answer, only_a, never) == raw(ours, method, path.format(never), other, json=body)
        status, found = raw(ours, "GET", SKILLS, other, params={"filter_string": f"name LIKE '%-{suffix}'"})
        assert status == 200, found
        assert [(s["name"], s["workspace"]) for s in found.get("skills", [])] == ([(shared, team_b)] if other == team_b else [])
        status, versions = raw(ours, "GET", f"{SKILLS}/{shared}/versions", other)
        if other == team_b:
            assert [(v["source"], v["workspace"]) for v in versions["skill_versions"]] == [(f"https://example.com/{team_b}.zip", team_b)]
        else:
            assert _as_missing((status, versions), shared, never) == raw(ours, "GET", f"{SKILLS}/{never}/versions", other)
    assert raw(ours, "DELETE", f"{SKILLS}/{shared}", team_b)[0] == 200  # B's skill, not A's

    status, skill = raw(ours, "GET", f"{SKILLS}/{only_a}", team_a)  # A's skills are untouched
    assert (status, skill["tags"], skill["aliases"], skill["latest_version"]) == (200, {"team": "a"}, [{"alias": "prod", "version": 1}], 1)
    status, found = raw(ours, "GET", SKILLS, team_a, params={"filter_string": f"name LIKE '%-{suffix}'"})
    assert sorted((s["name"], s["description"]) for s in found["skills"]) == [(only_a, None), (shared, "team a")]

    # RESTRICT: a workspace holding only a skill is not deleted (MLflow 3.18 counts its skills table last).
    assert raw(ours, "POST", SKILLS, only_skill, json={"name": shared})[0] == 200
    status, body = raw(ours, "DELETE", f"/api/3.0/mlflow/workspaces/{only_skill}")
    assert (status, body["error_code"]) == (400, "INVALID_STATE"), body
    assert "table 'skills' still contains 1 resource(s)" in body["message"]
    assert raw(ours, "DELETE", f"/api/3.0/mlflow/workspaces/{team_b}")[0] == 204
