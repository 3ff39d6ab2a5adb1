"""The skill registry (MLflow 3.18, ``/api/3.0/mlflow/skills``): every route compared with MLflow 3.18's own server
(its FastAPI app on sqlite, run by the 3.18.0 client venv: the project's pinned mlflow has no skill registry)
request by request, status and body, with times masked; and the 3.18.0 client's skill methods run against both.

The 3.18.0 venv comes from ``tools.client_venvs`` (the ``make test-clients`` venvs): mlflow 3.18.0's wheel over
3.17.2's dependencies, since its ``mlflow-skinny`` 3.18.0 is not on the package index."""

from __future__ import annotations

import json
import re
import subprocess
import uuid
from pathlib import Path
from typing import Any

import pytest
import requests

from tests.mlflow_reference import asgi_reference_server_of
from tools.client_venvs import by_version, ensure

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("skill_registry")]

SKILLS = "/api/3.0/mlflow/skills"
AJAX_SKILLS = "/ajax-api/3.0/mlflow/skills"
DIGEST = "ab" * 32
ICON = "https://93.184.216.34/icon.png"  # a public address: MLflow resolves icon hosts, and tests have no DNS


def _client_python() -> str:
    client = by_version("3.18.0")
    ensure(client)
    return str(client.python)


def _unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def _masked(body: Any) -> Any:
    """Times as 0; alias lists (MLflow answers them in its relationship's order) sorted."""
    text = json.dumps(body, sort_keys=True)
    text = re.sub(r'"(creation|last_updated)_timestamp": \d+', r'"\1_timestamp": 0', text)
    masked = json.loads(text)
    if isinstance(masked, dict) and "error_code" in masked:
        # Python sets in messages ("Valid keys are '{...}'") print in each process's hash order.
        masked["message"] = re.sub(r"\{('[^{}]*')\}", lambda m: "{" + ", ".join(sorted(m.group(1).split(", "))) + "}", masked["message"])
    return masked


def _send(
    url: str, method: str, path: str, body: Any = None, query: Any = None, raw: str | None = None, content_type: str | None = None
) -> tuple[int, Any]:
    if raw is not None:
        headers = {"Content-Type": content_type or "application/json"}
        response = requests.request(method, url + path, data=raw, params=query, headers=headers, timeout=60)
    else:
        response = requests.request(method, url + path, json=body, params=query, timeout=60)
    return response.status_code, response.json() if response.content else None


@pytest.fixture(scope="module")
def reference_url() -> str:
    return asgi_reference_server_of(_client_python()).url


def test_every_route_answers_as_mlflow(server: str, reference_url: str) -> None:
    """Skills, versions (remote sources, status transitions, latest resolution), tags and aliases, each with good
    and bad input, unprefixed and ``@organization``, on both prefixes: answered as MLflow 3.18's server answers."""
    org = _unique("acme")
    name = _unique("reviewer")
    other = _unique("writer")
    skill, org_skill = f"{SKILLS}/{name}", f"{SKILLS}/@{org}/{name}"

    def same(method: str, path: str, body: Any = None, query: Any = None, raw: str | None = None, content_type: str | None = None) -> Any:
        ours = _send(server, method, path, body, query, raw, content_type)
        theirs = _send(reference_url, method, path, body, query, raw, content_type)
        assert (ours[0], _masked(ours[1])) == (theirs[0], _masked(theirs[1])), (method, path, body, query, raw)
        return ours[1]

    # skills: create, its errors, get, update
    same("POST", SKILLS, {"name": name, "description": "Reviews   code", "icons": [{"src": ICON, "mimeType": "IMAGE/PNG", "z": 1}]})
    same("POST", SKILLS, {"name": name})
    same("POST", SKILLS, {"name": name, "organization": org})
    for bad in ({}, {"name": 3}, {"name": "Bad"}, {"name": "a--b"}, {"name": "-a"}, {"name": "x" * 65}, {"name": ""}, {"x": 1, "name": 5}):
        same("POST", SKILLS, bad)
    same("POST", SKILLS, {"name": other, "organization": "Acme"})
    same("POST", SKILLS, {"name": other, "organization": "a..b"})
    same("POST", SKILLS, {"name": other, "icons": [{"src": "http://93.184.216.34/i.png"}]})
    same("POST", SKILLS, {"name": other, "icons": [{"src": ICON, "mimeType": "text/plain"}]})
    same("POST", SKILLS, {"name": other, "description": None, "icons": None})
    same("POST", SKILLS, None, None, "[1, 2]")
    same("POST", SKILLS, None, None, "nope")
    same("GET", skill)
    same("GET", org_skill)
    same("GET", f"{SKILLS}/{_unique('missing')}")
    same("GET", f"{SKILLS}/Bad")
    same("GET", f"{SKILLS}/@{org}")
    same("GET", f"{AJAX_SKILLS}/{name}")
    same("GET", f"{AJAX_SKILLS}/@{org}/{name}")
    same("POST", f"{AJAX_SKILLS}/@{org}/{name}/tags", {"key": "via", "value": "ajax"})
    same("PATCH", skill, {"description": "Reviews pull requests"})
    same("PATCH", org_skill, {"icons": [{"src": ICON, "sizes": ["48x48"]}]})
    same("PATCH", skill, {"icons": None})
    same("PATCH", skill, {"latest_version": 3})
    same("PATCH", f"{SKILLS}/{_unique('missing')}", {"description": "x"})

    # versions: remote sources (git, zip, oci), statuses, digests, and what registration refuses
    versions, org_versions = f"{skill}/versions", f"{org_skill}/versions"
    same("POST", versions, {"source": "https://github.com/acme/skills.git", "ref": "main", "subpath": " skills/rev/ ", "digest": DIGEST})
    same("POST", versions, {"source": "https://example.com/skill.zip", "status": "draft"})
    same("POST", versions, {"source": "oci://ghcr.io/acme/skills:v1"})
    same("POST", versions, {"source": "ghcr.io/acme/skills@sha256:" + "0" * 64, "source_type": "oci", "subpath": "a/b"})
    same("POST", versions, {"source": "git@github.com:acme/skills.git", "source_type": "git", "ref": "v1"})
    same("POST", org_versions, {"source": "https://example.com/org.zip", "name": name, "organization": org})
    same("POST", f"{SKILLS}/{other}/versions", {"source": "https://example.com/new.zip"})  # creates the skill
    same("GET", f"{SKILLS}/{other}")
    for bad in (
        {},
        {"source": "https://github.com/acme/skills"},
        {"source": "/tmp/skill"},
        {"source": "mlflow-artifacts:/skills/x"},
        {"source": "https://x/a.git", "x": 1},
        {"source": "https://x/a.git", "name": "other"},
        {"source": "https://x/a.git", "organization": org},
        {"source": "https://x/a.git", "status": "deprecated"},
        {"source": "https://x/a.git", "digest": "abc"},
        {"source": "https://x/a.git", "digest": DIGEST.upper()},
        {"source": "https://x/a.git", "subpath": "./a"},
        {"source": "https://x/a.git", "subpath": "a\\b"},
        {"source": "https://x/a.git", "subpath": "/abs"},
        {"source": "https://x/a.git", "source_type": "mlflow"},
        {"source": "https://x/a.git", "source_type": "svn"},
        {"source": "oci://ghcr.io/a/b", "source_type": "git"},
        {"source": "https://x/a.zip", "ref": "main"},
        {"source": "https://x/a.zip", "source_type": "zip", "ref": "main"},
        {"source": "https://user:pw@x/a.git"},
        {"source": "https://x/a.zip?X-Amz-Signature=1"},
        {"source": "ftp://x/a.zip"},
        {"source": "https://x/a.git", "ref": "-bad"},
        {"source": "https://x/a.git", "ref": "has space"},
        {"source": "oci://"},
        {"source": "oci://ghcr.io/a/b@sha256:zz"},
        {"source": "https://x/a.git", "status": None},
        {"source": 5},
    ):
        same("POST", versions, bad)
    same("POST", versions, None, None, "[1]")
    same("POST", versions, None, None, "x", "text/plain")
    same("GET", skill)  # the newest active version is latest: its status and source type
    same("GET", f"{versions}/1")
    same("GET", f"{org_versions}/1")
    same("GET", f"{versions}/99")
    same("GET", f"{versions}/0")
    same("GET", f"{versions}/abc")
    same("GET", f"{SKILLS}/{_unique('missing')}/versions/1")

    # status transitions, deletes, and how latest moves
    same("PATCH", f"{versions}/2", {"status": "deprecated"})
    same("PATCH", f"{versions}/2", {"status": None})
    same("PATCH", f"{versions}/2", {})
    same("PATCH", f"{versions}/2", {"status": "bogus"})
    same("PATCH", f"{versions}/2", {"status": "active"})
    same("PATCH", f"{versions}/3", {"status": "deprecated"})
    same("PATCH", f"{versions}/3", {"status": "draft"})
    same("PATCH", f"{versions}/99", {"status": "active"})
    same("GET", skill)

    # aliases
    same("POST", f"{skill}/aliases", {"alias": "prod", "version": 1})
    same("POST", f"{skill}/aliases", {"alias": "beta", "version": "3"})
    same("POST", f"{skill}/aliases", {"alias": "canary", "version": 3})
    same("POST", f"{org_skill}/aliases", {"alias": "prod", "version": 1})
    for bad in (
        {"alias": "latest", "version": 1},
        {"alias": "v2", "version": 1},
        {"alias": "a b", "version": 1},
        {"alias": "x", "version": 99},
    ):
        same("POST", f"{skill}/aliases", bad)
    same("POST", f"{skill}/aliases", {"alias": "x", "version": "one"})
    same("POST", f"{skill}/aliases", {"alias": "x"})
    same("GET", f"{skill}/aliases/prod")
    same("GET", f"{skill}/aliases/latest")
    same("GET", f"{skill}/aliases/LATEST")
    same("GET", f"{org_skill}/aliases/prod")
    same("GET", f"{skill}/aliases/nope")
    same("GET", f"{skill}/aliases/v1")
    same("GET", f"{SKILLS}/{_unique('missing')}/aliases/latest")
    same("GET", f"{versions}/3")
    same("GET", skill)
    same("DELETE", f"{skill}/aliases/canary")
    same("DELETE", f"{skill}/aliases/canary")
    same("DELETE", f"{skill}/aliases/latest")
    same("DELETE", f"{versions}/3")  # deprecated -> deleted: its aliases go with it
    same("DELETE", f"{versions}/3")
    same("GET", f"{versions}/3")
    same("GET", f"{skill}/aliases/beta")
    same("DELETE", f"{versions}/1")  # active cannot be deleted
    same("GET", skill)

    # tags
    same("POST", f"{skill}/tags", {"key": "team", "value": "review"})
    same("POST", f"{org_skill}/tags", {"key": "team", "value": "org"})
    same("POST", f"{skill}/tags", {"key": "team"})
    same("POST", f"{skill}/tags", {"key": "../x", "value": "v"})
    same("POST", f"{SKILLS}/{_unique('missing')}/tags", {"key": "a", "value": "b"})
    same("DELETE", f"{skill}/tags/nope")
    same("POST", f"{versions}/1/tags", {"key": "a/b", "value": "c"})
    same("POST", f"{versions}/99/tags", {"key": "a", "value": "b"})
    same("GET", f"{versions}/1")
    same("DELETE", f"{versions}/1/tags/a/b")
    same("DELETE", f"{versions}/1/tags/a/b")
    same("GET", skill)
    same("DELETE", f"{org_skill}/tags/team")

    # searches (scoped to this test's skills): filters, order, pages, identities
    scoped = f"name LIKE '%{name[-10:]}' OR name = 'x'"
    mine = f"organization = '{org}'"
    same("GET", SKILLS, None, {"include_skill_identities": [name, f"@{org}/{name}", other]})
    same("GET", SKILLS, None, {"include_skill_identities": [name, other], "order_by": "name DESC"})
    same("GET", SKILLS, None, {"include_skill_identities": [name, other], "filter_string": "status = 'active'"})
    same("GET", SKILLS, None, {"include_skill_identities": [name, other], "filter_string": "tags.team = 'review'"})
    same("GET", SKILLS, None, {"include_skill_identities": [name, other], "filter_string": "search_text ILIKE '%pull%'"})
    same("GET", SKILLS, None, {"include_skill_identities": [name, other], "filter_string": "source_type IN ('zip')"})
    same(
        "GET",
        SKILLS,
        None,
        {"include_skill_identities": [name, other], "filter_string": "created_at > 0", "order_by": ["source_type", "created_at DESC"]},
    )
    same("GET", SKILLS, None, {"include_skill_identities": [""]})
    same("GET", SKILLS, None, {"include_skill_identities": ["@x"]})
    same("GET", SKILLS, None, {"filter_string": mine})
    page = same("GET", SKILLS, None, {"include_skill_identities": [name, other], "max_results": 1})
    same("GET", SKILLS, None, {"include_skill_identities": [name, other], "max_results": 1, "page_token": page["next_page_token"]})
    same("GET", SKILLS, None, {"max_results": 1, "page_token": page["next_page_token"], "filter_string": mine})
    for query in (
        {"filter_string": scoped},
        {"filter_string": "bogus = 'x'"},
        {"filter_string": "tags.team > 'a'"},
        {"filter_string": "name IN ('a')"},
        {"filter_string": "status = ('active')"},
        {"order_by": "bogus"},
        {"order_by": ["name", "name DESC"]},
        {"max_results": "0"},
        {"max_results": "1001"},
        {"max_results": "x"},
        {"page_token": "!!"},
        {"page_token": "e30="},
    ):
        same("GET", SKILLS, None, query)
    same("GET", versions)
    same("GET", versions, None, {"order_by": "version DESC"})
    same("GET", versions, None, {"filter_string": "version >= 2 AND status != 'draft'"})
    same("GET", versions, None, {"filter_string": "tags.a = 'b' OR x"})
    same("GET", versions, None, {"filter_string": "digest = '" + DIGEST + "'"})
    same("GET", org_versions, None, {"filter_string": "organization = '" + org + "'"})
    page = same("GET", versions, None, {"max_results": 2})
    same("GET", versions, None, {"max_results": 2, "page_token": page["next_page_token"]})
    same("GET", f"{SKILLS}/{other}/versions", None, {"max_results": 2, "page_token": page["next_page_token"]})
    same("GET", f"{SKILLS}/{_unique('missing')}/versions")

    # bulk registration: one repository, a digest each; exact matches answered as they are
    bulk = {"organization": org, "skills": [{"name": name, "source": "https://github.com/acme/all.git", "subpath": "a", "digest": DIGEST}]}
    same("POST", f"{SKILLS}/bulk-register", bulk)
    same("POST", f"{SKILLS}/bulk-register", bulk)
    second = {"name": other, "source": "https://github.com/acme/all.git", "subpath": "b", "digest": DIGEST}
    same("POST", f"{SKILLS}/bulk-register", {**bulk, "skills": [*bulk["skills"], second]})
    for bad in (
        {"skills": []},
        {"organization": org},
        {"organization": org, "skills": [{"name": name}]},
        {"organization": org, "skills": [{**second, "source": "https://x/a.zip"}]},
        {"organization": org, "skills": [second, second]},
        {"organization": org, "skills": [second, {**second, "name": name, "source": "https://github.com/acme/other.git"}]},
    ):
        same("POST", f"{SKILLS}/bulk-register", bad)

    # deletes
    same("DELETE", org_skill)
    same("DELETE", org_skill)
    same("GET", f"{org_versions}/1")
    same("DELETE", f"{SKILLS}/{other}")
    same("POST", f"{SKILLS}/{other}/versions", {"source": "https://example.com/again.zip"})  # numbering restarts


_CLIENT_SCRIPT = r"""
import json, sys
from mlflow import MlflowClient
from mlflow.entities.skill_source import GitSource, ZipSource
from mlflow.exceptions import MlflowException

client = MlflowClient(sys.argv[1])
name, org = sys.argv[2], sys.argv[3]
out = []

def record(value):
    out.append(json.loads(json.dumps(value, default=lambda o: getattr(o, "__dict__", str(o)))))

skill = client.create_skill(name=name, description="Reviews code")
record(vars(skill))
v1 = client.create_skill_version(name=name, source=GitSource(url="https://github.com/acme/s.git", ref="main", subpath="rev"), digest="ab" * 32)
record(vars(v1))
v2 = client.create_skill_version(name=name, source="https://example.com/s.zip", status="draft")
record(vars(v2))
client.create_skill_version(name=name, organization=org, source=ZipSource(url="https://example.com/o.zip"))
client.set_skill_alias(name=name, alias="prod", version=1)
client.set_skill_tag(name=name, key="team", value="review")
client.set_skill_version_tag(name=name, version=1, key="k", value="v")
record(vars(client.get_skill_version_by_alias(name=name, alias="prod")))
record(vars(client.get_latest_skill_version(name=name)))
record(vars(client.update_skill_version(name=name, version=2, status="active")))
record(vars(client.get_skill(name=name)))
record(vars(client.get_skill(name=name, organization=org)))
record([vars(v) for v in client.search_skill_versions(name=name)])
record(sorted(s.name for s in client.search_skills(filter_string=f"organization = '{org}'")))
client.delete_skill_alias(name=name, alias="prod")
client.delete_skill_version_tag(name=name, version=1, key="k")
client.delete_skill_tag(name=name, key="team")
try:
    client.get_skill(name=name + "-x")
except MlflowException as e:
    record([e.error_code, e.message])
client.delete_skill(name=name)
client.delete_skill(name=name, organization=org)
record([s.name for s in client.search_skills(include_skill_identities=[name, f"@{org}/{name}"])])
print(json.dumps(out))
"""


def _client_run(python: str, url: str, name: str, org: str) -> Any:
    done = subprocess.run([python, "-c", _CLIENT_SCRIPT, url, name, org], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return _masked(json.loads(done.stdout.strip().splitlines()[-1]))


def test_the_client_registers_skills_as_against_mlflow(server: str, reference_url: str) -> None:
    """MLflow 3.18's ``MlflowClient`` skill methods, run under the 3.18.0 client, give the same entities against
    the local runtime as against MLflow's own server."""
    python = _client_python()
    name, org = _unique("client"), _unique("org")
    ours = _client_run(python, server, name, org)
    theirs = _client_run(python, reference_url, name, org)
    assert ours == theirs
    assert ours[0]["name"] == name and ours[1]["source_type"] == "git" and ours[-1] == []


_REGISTER_SCRIPT = r"""
import json, sys
import mlflow

mlflow.set_tracking_uri(sys.argv[1])
source = sys.argv[2]
from mlflow.entities.skill_source import GitSource
version = mlflow.genai.register_skill(source=GitSource(url=source, subpath="skill"))
mlflow.MlflowClient().set_skill_alias(name=version.name, alias="prod", version=version.version)
by_alias = mlflow.MlflowClient().get_skill_version_by_alias(name=version.name, alias="prod")
found = [skill.name for skill in mlflow.genai.search_skills(filter_string=f"name = '{version.name}'")]
print(json.dumps({"version": vars(version), "by_alias": vars(by_alias), "found": found}, default=str))
"""


def _git_repository(root: Path, name: str) -> str:
    """A git repository (a file:// URL ending in .git) holding one skill folder with its SKILL.md."""
    repository = root / "skills.git"
    (repository / "skill").mkdir(parents=True)
    (repository / "skill" / "SKILL.md").write_text(f"---\nname: {name}\ndescription: Reviews code.\n---\nReview the diff.\n")
    (repository / "skill" / "notes.md").write_text("notes\n")
    for command in (["init", "-q"], ["add", "."], ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "skill"]):
        subprocess.run(["git", "-C", str(repository), *command], check=True, capture_output=True)
    return repository.as_uri()


def test_register_skill_from_git_as_against_mlflow(server: str, reference_url: str, tmp_path: Path) -> None:
    """``mlflow.genai.register_skill`` of a git source (the client clones it, reads SKILL.md, digests the tree and
    registers the pointer), an alias and ``search_skills``: the same against the local runtime as against MLflow
    3.18's server. (``pull`` refuses a ``file://`` repository client-side, and tests have no network.)"""
    python = _client_python()
    answers = []
    name = _unique("registered")  # one name (the SKILL.md, and so the digest, are the same) on each server
    for label, url in (("ours", server), ("theirs", reference_url)):
        source = _git_repository(tmp_path / label, name)
        done = subprocess.run([python, "-c", _REGISTER_SCRIPT, url, source], capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-3000:]
        answer = json.loads(done.stdout.strip().splitlines()[-1])
        version = answer["version"]
        assert (answer["found"], version["name"], version["source_type"], version["status"]) == ([name], name, "git", "active")
        assert len(version["digest"]) == 64 and answer["by_alias"]["aliases"] == ["prod"]
        answers.append(_masked(json.loads(json.dumps(answer).replace(name, "<name>").replace(source, "<source>"))))
    assert answers[0] == answers[1]
