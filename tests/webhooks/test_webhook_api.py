"""The webhook API against MLflow's own server: the same requests, the same answers (ids and timestamps aside),
including every refusal; and the traffic-split extension of aliases."""

from __future__ import annotations

import base64
import json
from typing import Any

import mlflow
import pytest
import requests

from tests.conftest import unique
from tests.mlflow_reference import reference_server

pytestmark = pytest.mark.e2e

HOOKS = "/api/2.0/mlflow/webhooks"
# A public address literal: both servers accept it without resolving a name (nothing is sent to it here).
TARGET = "https://8.8.8.8/hook"
REGISTERED = {"entity": "REGISTERED_MODEL", "action": "CREATED"}


def _call(base: str, method: str, path: str, body: Any = None, query: dict[str, Any] | None = None) -> tuple[int, Any]:
    answer = requests.request(method, base + path, json=body, params=query, timeout=60)
    return answer.status_code, answer.json() if answer.content else {}


def _stable(value: Any) -> Any:
    """Ids and timestamps differ between servers; everything else must not."""
    if isinstance(value, dict):
        return {
            key: (
                "<id>"
                if key == "webhook_id"
                else "<ts>"
                if key.endswith("timestamp")
                else "<token>"
                if key == "next_page_token"
                else _stable(item)
            )
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [_stable(item) for item in value]
    return value


def _same(ours: tuple[int, Any], theirs: tuple[int, Any], ids: tuple[str, str]) -> None:
    assert ours[0] == theirs[0], (ours, theirs)
    if theirs[0] == 200:
        assert _stable(ours[1]) == _stable(theirs[1])
    else:
        assert ours[1]["error_code"] == theirs[1]["error_code"]
        assert ours[1]["message"].replace(ids[0], "<id>") == theirs[1]["message"].replace(ids[1], "<id>")


# (name, method, path under /webhooks or "", body) played in order; "{id}" is the first webhook created.
STEPS: list[tuple[str, str, str, Any]] = [
    ("create", "POST", "", {"name": "first.hook-1", "url": TARGET, "events": [REGISTERED], "description": "d", "secret": "s"}),
    ("create second", "POST", "", {"name": "second", "url": TARGET, "events": [{"entity": "MODEL_VERSION_TAG", "action": "SET"}]}),
    ("create disabled", "POST", "", {"name": "third", "url": TARGET, "events": [REGISTERED], "status": "DISABLED"}),
    ("name taken is fine", "POST", "", {"name": "second", "url": TARGET, "events": [REGISTERED]}),
    ("bad name", "POST", "", {"name": "bad name!", "url": TARGET, "events": [REGISTERED]}),
    ("name too long", "POST", "", {"name": "a" * 64, "url": TARGET, "events": [REGISTERED]}),
    ("http refused", "POST", "", {"name": "plain", "url": "http://8.8.8.8/hook", "events": [REGISTERED]}),
    ("ftp refused", "POST", "", {"name": "ftp", "url": "ftp://8.8.8.8/x", "events": [REGISTERED]}),
    ("no host", "POST", "", {"name": "nohost", "url": "https:///x", "events": [REGISTERED]}),
    ("private target refused", "POST", "", {"name": "private", "url": "https://127.0.0.1/x", "events": [REGISTERED]}),
    ("metadata address refused", "POST", "", {"name": "meta", "url": "https://169.254.169.254/latest", "events": [REGISTERED]}),
    ("legacy numeric host", "POST", "", {"name": "legacy", "url": "https://127.1/x", "events": [REGISTERED]}),
    ("no events", "POST", "", {"name": "none", "url": TARGET, "events": []}),
    ("events missing", "POST", "", {"name": "none", "url": TARGET}),
    ("invalid pair", "POST", "", {"name": "pair", "url": TARGET, "events": [{"entity": "REGISTERED_MODEL", "action": "DELETED"}]}),
    ("name missing", "POST", "", {"url": TARGET, "events": [REGISTERED]}),
    ("url missing", "POST", "", {"name": "nourl", "events": [REGISTERED]}),
    ("list", "GET", "", None),
    ("list page of 2", "GET", "?max_results=2", None),
    ("list 1001", "GET", "?max_results=1001", None),
    ("get", "GET", "/{id}", None),
    ("get missing", "GET", "/no-such-hook", None),
    ("update", "PATCH", "/{id}", {"status": "DISABLED", "description": "", "events": [{"entity": "PROMPT", "action": "CREATED"}]}),
    ("update name", "PATCH", "/{id}", {"name": "renamed"}),
    ("update bad name", "PATCH", "/{id}", {"name": "bad name!"}),
    ("update bad url", "PATCH", "/{id}", {"url": "ftp://8.8.8.8/x"}),
    ("update missing", "PATCH", "/no-such-hook", {"name": "x"}),
    ("get updated", "GET", "/{id}", None),
    ("test missing", "POST", "/no-such-hook/test", {}),
    ("delete", "DELETE", "/{id}", None),
    ("delete again", "DELETE", "/{id}", None),
    ("get deleted", "GET", "/{id}", None),
]


@pytest.fixture(scope="module")
def both_answers(server: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """Each server gets the steps on a fresh set of webhooks (ours: its session table, so list only its own)."""
    out = []
    for base in (server, reference_server().url):
        # Start from no webhooks on either side: earlier tests of the session may have made some.
        for hook in _call(base, "GET", HOOKS, query={"max_results": 1000})[1].get("webhooks", []):
            _call(base, "DELETE", f"{HOOKS}/{hook['webhook_id']}")
        answers: dict[str, Any] = {}
        first = None
        for name, method, path, body in STEPS:
            answer = _call(base, method, HOOKS + path.replace("{id}", first or "none"), body)
            if name == "create":
                first = answer[1]["webhook"]["webhook_id"]
            answers[name] = answer
        answers["<id>"] = first
        out.append(answers)
    return out[0], out[1]


@pytest.mark.parametrize("step", [name for name, *_ in STEPS])
def test_same_answer_as_mlflow(both_answers: tuple[dict[str, Any], dict[str, Any]], step: str) -> None:
    ours, theirs = both_answers
    _same(ours[step], theirs[step], (ours["<id>"], theirs["<id>"]))


def test_list_pages_cover_every_webhook_once_newest_first(server: str) -> None:
    names = [unique("page") for _ in range(5)]
    for name in names:
        assert _call(server, "POST", HOOKS, {"name": name, "url": TARGET, "events": [REGISTERED]})[0] == 200
    seen: list[str] = []
    ids: list[str] = []
    token = None
    while True:
        status, body = _call(server, "GET", HOOKS, query={"max_results": 2, **({"page_token": token} if token else {})})
        assert status == 200
        seen += [hook["name"] for hook in body.get("webhooks", [])]
        ids += [hook["webhook_id"] for hook in body.get("webhooks", [])]
        token = body.get("next_page_token")
        if not token:
            break
    mine = [name for name in seen if name in names]
    assert mine == list(reversed(names))
    assert len(ids) == len(set(ids))
    bad = base64.b64encode(json.dumps({"v": 99}).encode()).decode()
    status, body = _call(server, "GET", HOOKS, query={"page_token": bad})
    assert status == 400 and body["error_code"] == "INVALID_PARAMETER_VALUE"


def test_webhook_secret_is_never_answered(server: str) -> None:
    status, body = _call(server, "POST", HOOKS, {"name": unique("secret"), "url": TARGET, "events": [REGISTERED], "secret": "hunter2"})
    assert status == 200
    listed = _call(server, "GET", HOOKS, query={"max_results": 1000})[1]
    fetched = _call(server, "GET", f"{HOOKS}/{body['webhook']['webhook_id']}")[1]
    assert "hunter2" not in json.dumps([body, listed, fetched])


def test_alias_traffic_split_is_an_extension_stock_clients_never_see(server: str) -> None:
    client = mlflow.MlflowClient(server, registry_uri=server)
    name = unique("split")
    client.create_registered_model(name)
    run = client.create_run(client.create_experiment(unique("split")))
    for _ in range(3):
        client.create_model_version(name, f"runs:/{run.info.run_id}/model", run_id=run.info.run_id)
    alias = f"{server}/api/2.0/mlflow/registered-models/alias"

    def set_alias(**extra: Any) -> requests.Response:
        return requests.post(alias, json={"name": name, "alias": "champion", "version": "2", **extra}, timeout=30)

    assert set_alias(secondary_version="3", secondary_version_weight=25).status_code == 200
    # The stock client resolves the alias to its primary version only.
    assert client.get_model_version_by_alias(name, "champion").version == "2"
    model = requests.get(f"{server}/api/2.0/mlflow/registered-models/get", params={"name": name}, timeout=30).json()["registered_model"]
    assert model["aliases"] == [{"alias": "champion", "version": "2", "secondary_version": "3", "secondary_version_weight": 25}]
    assert client.get_registered_model(name).aliases == {"champion": "2"}
    refusals = [
        {"secondary_version": "3"},
        {"secondary_version": "2", "secondary_version_weight": 10},
        {"secondary_version": "3", "secondary_version_weight": 100},
        {"secondary_version": "3", "secondary_version_weight": -1},
        {"secondary_version": "9", "secondary_version_weight": 10},
    ]
    for extra in refusals:
        answer = set_alias(**extra)
        assert answer.status_code in (400, 404), (extra, answer.text)
    # A refused request changed nothing.
    model = requests.get(f"{server}/api/2.0/mlflow/registered-models/get", params={"name": name}, timeout=30).json()["registered_model"]
    assert model["aliases"][0]["secondary_version"] == "3"
    # Deleting the secondary version keeps the alias on its primary version and drops the split.
    client.delete_model_version(name, "3")
    model = requests.get(f"{server}/api/2.0/mlflow/registered-models/get", params={"name": name}, timeout=30).json()["registered_model"]
    assert model["aliases"] == [{"alias": "champion", "version": "2"}]
    # A plain set clears a split too, and a rename keeps one.
    assert set_alias(secondary_version="1", secondary_version_weight=5).status_code == 200
    client.rename_registered_model(name, name + "-renamed")
    renamed = requests.get(f"{server}/api/2.0/mlflow/registered-models/get", params={"name": name + "-renamed"}, timeout=30).json()
    assert renamed["registered_model"]["aliases"] == [
        {"alias": "champion", "version": "2", "secondary_version": "1", "secondary_version_weight": 5}
    ]
