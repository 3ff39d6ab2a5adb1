"""The web UI on this stack beside stock ``mlflow server`` 3.18.0 (issue 42's measured differences), in a real browser.

Both servers run basic auth: ours (a local runtime process) and MLflow 3.18.0's basic-auth app on sqlite, from the
``tools.client_venvs`` venv of 3.18.0 (its wheel over 3.17.2; the UI bundle served here is the same release's). The
same data is logged into both with the real client, then each page is opened on both sides: no request may fail,
no error notification may show, and the page's key content must be the same.

Its own two servers and browser (minutes on a loaded 2-core machine): marked long, as the workspace selector's test;
``make test-ui`` runs it.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
import requests

from tests.auth.conftest import ADMIN, ADMIN_PASSWORD, basic_runtime, mlflow_basic_auth_server
from tests.browser.test_ui_pages import CHROMIUM, CHROMIUM_ARGS, CHROMIUM_UNSAFE_PORTS, TIMEOUT_MS, screenshot_dir
from tools.client_venvs import by_version, ensure

pytestmark = [pytest.mark.xdist_group("browser"), pytest.mark.long]

STOCK_VERSION = "3.18.0"
AUTH = (ADMIN, ADMIN_PASSWORD)
AVOID = frozenset(CHROMIUM_UNSAFE_PORTS)
USER, USER_PASSWORD = "parity-ann", "ann-password-123"
# A model's signature as mlflow writes it into MLmodel: two inputs, one output.
MLMODEL = """artifact_path: model
flavors:
  python_function:
    loader_module: mlflow.pyfunc.model
signature:
  inputs: '[{"type": "double", "name": "sepal_length", "required": true}, {"type": "string", "name": "species", "required": true}]'
  outputs: '[{"type": "long", "required": true}]'
  params: null
"""
# Logged out of alphabetical order, as a training script logs them: MLflow answers them in logging order.
PARAMS = (("zeta", "1"), ("alpha", "2"), ("mid", "3"))
METRICS = ("val_loss", "accuracy", "loss")
TAGS = (("team", "ui"), ("owner", "ann"), ("area", "parity"))
ISSUE = "Answers ignore the question"
# What stock answers on its local artifact store: presigned=true is NOT_IMPLEMENTED there (S3 signs), and the UI then
# reads the file from the server itself.
STOCK_EXPECTED = {("stock", "/model-versions/get-artifact", 501)}


@dataclass
class Side:
    name: str
    url: str
    seeded: dict[str, Any] = field(default_factory=dict)

    def call(self, method: str, path: str, **kwargs: Any) -> requests.Response:
        return requests.request(method, f"{self.url}{path}", auth=AUTH, timeout=120, **kwargs)


def _seed(side: Side, tmp: Any) -> dict[str, Any]:
    """The same data on either server, through the real client and the REST API as the admin."""
    import mlflow
    from mlflow.genai.judges import make_judge

    with pytest.MonkeyPatch.context() as env:
        env.setenv("MLFLOW_TRACKING_USERNAME", ADMIN)
        env.setenv("MLFLOW_TRACKING_PASSWORD", ADMIN_PASSWORD)
        client = mlflow.MlflowClient(side.url, registry_uri=side.url)
        suffix = uuid.uuid4().hex[:6]
        experiment_id = client.create_experiment(f"parity-{suffix}")
        run = client.create_run(experiment_id, run_name=f"parity-run-{suffix}", tags=dict(TAGS))
        run_id = run.info.run_id
        for key, value in PARAMS:
            client.log_param(run_id, key, value)
        for step in range(3):
            for number, key in enumerate(METRICS):
                client.log_metric(run_id, key, 1.0 / (step + number + 1), step=step)
        (tmp / "MLmodel").write_text(MLMODEL)
        client.log_artifact(run_id, str(tmp / "MLmodel"), "model")
        client.set_terminated(run_id)
        model = f"parity-model-{suffix}"
        client.create_registered_model(model)
        client.create_model_version(model, f"{run.info.artifact_uri}/model", run_id=run_id)
        genai_id = client.create_experiment(f"parity-genai-{suffix}", tags={"mlflow.experimentKind": "genai_development"})
        # A user with a grant of its own (no role): MLflow lists it as a "Direct" permission.
        made = side.call("POST", "/api/2.0/mlflow/users/create", json={"username": USER, "password": USER_PASSWORD})
        assert made.status_code == 200, made.text
        granted = side.call(
            "POST",
            "/api/3.0/mlflow/users/permissions/grant",
            json={"username": USER, "resource_type": "experiment", "resource_id": experiment_id, "permission": "EDIT"},
        )
        assert granted.status_code == 200, granted.text
        issue = side.call(
            "POST",
            "/api/3.0/mlflow/issues",
            json={"experiment_id": genai_id, "name": ISSUE, "description": "The agent answers another question.", "severity": "high"},
        )
        assert issue.status_code == 200, issue.text
        endpoint = _endpoint(side, f"parity-endpoint-{suffix}")
        judge = f"parity_judge_{suffix}"
        mlflow.set_tracking_uri(side.url)
        make_judge(name=judge, instructions="Is {{ outputs }} polite?", model=f"gateway:/{endpoint}", feedback_value_type=bool).register(
            experiment_id=genai_id
        )
        return {
            "experiment_id": experiment_id,
            "genai_id": genai_id,
            "run_id": run_id,
            "run_name": f"parity-run-{suffix}",
            "model": model,
            "endpoint": endpoint,
            "judge": judge,
        }


def _endpoint(side: Side, name: str) -> str:
    """A gateway endpoint (nothing calls its provider here)."""

    def post(path: str, body: dict[str, Any]) -> dict[str, Any]:
        answer = side.call("POST", f"/api/3.0/mlflow/gateway/{path}", json=body)
        assert answer.status_code == 200, (path, answer.text)
        return answer.json()

    secret = post("secrets/create", {"secret_name": name, "secret_value": {"api_key": "sk-test-0123456789"}, "provider": "openai"})
    definition = post(
        "model-definitions/create",
        {"name": name, "secret_id": secret["secret"]["secret_id"], "provider": "openai", "model_name": "gpt-4o-mini"},
    )
    config = {"model_definition_id": definition["model_definition"]["model_definition_id"], "linkage_type": "PRIMARY", "weight": 1.0}
    post("endpoints/create", {"name": name, "model_configs": [config]})
    return name


@pytest.fixture(scope="module")
def sides(server: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Side]]:
    python = str(by_version(STOCK_VERSION).python)
    ensure(by_version(STOCK_VERSION))
    stock_env = {"MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}
    with basic_runtime(avoid_ports=AVOID) as ours, mlflow_basic_auth_server(stock_env, python=python, avoid_ports=AVOID) as stock:
        found = {"stock": Side("stock", stock), "ours": Side("ours", ours)}
        for side in found.values():
            side.seeded = _seed(side, tmp_path_factory.mktemp(side.name))
        yield found


@dataclass
class Visit:
    """One page as a person saw it on one side: its text, and what went wrong."""

    text: str
    failures: list[str]


@pytest.fixture(scope="module")
def browser(sides: dict[str, Side]) -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield chromium
        finally:
            chromium.close()


def _visit(browser: Any, side: Side, name: str, path: str, *expected: str, then: Any = None) -> Visit:
    """Open ``path`` on ``side`` logged in as the admin; wait for every expected text; ``then(page)`` acts further."""
    context = browser.new_context(base_url=side.url, http_credentials={"username": ADMIN, "password": ADMIN_PASSWORD})
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    failures: list[str] = []

    def check(response: Any) -> None:
        if not response.url.startswith(side.url):
            return
        path = response.url[len(side.url) :].split("?")[0]
        # The index's challenge is how the browser logs in; the assistant is localhost-only on MLflow's side.
        expected = (path == "/" and response.status == 401) or "/assistant/" in path or (side.name, path, response.status) in STOCK_EXPECTED
        if response.status >= 400 and not expected:
            failures.append(f"{response.request.method} {path} -> {response.status}")

    page.on("response", check)
    try:
        page.goto(path)
        for text in expected:
            page.get_by_text(text, exact=False).first.wait_for(state="visible")
        # A first-visit tour popover ("Detect Issues in Your Traces") covers the page: a person clicks its "Got it".
        got_it = page.get_by_role("button", name="Got it")
        if got_it.count() and got_it.first.is_visible():
            got_it.first.click()
        if then is not None:
            then(page)
        page.wait_for_timeout(2500)  # late requests of the page (polling) get their answers too
        page.screenshot(path=str(screenshot_dir() / f"parity-{name}-{side.name}.png"), full_page=True)
        # An error notification (the bundle's toasts) or an error page.
        toasts = page.locator('[class*="notification-notice"], [role="alert"][class*="error"]').all_inner_texts()
        failures += [f"toast: {text}" for text in toasts]
        if page.get_by_text(re.compile(r"^(Request error|Internal Server Error|Page not found|Something went wrong)")).count():
            failures.append("error page")
        return Visit(page.inner_text("body"), failures)
    except Exception:
        page.screenshot(path=str(screenshot_dir() / f"parity-{name}-{side.name}-FAILED.png"), full_page=True)
        raise AssertionError(f"{side.name} {name}: {expected} never showed; failed requests {failures}") from None
    finally:
        context.close()


def _both(browser: Any, sides: dict[str, Side], name: str, path: Any, *expected: Any, then: Any = None) -> dict[str, Visit]:
    """The page on both sides (``path``/``expected`` are callables of the side's seeded data when they need ids)."""
    visits = {}
    for side in sides.values():
        resolve = lambda value, s=side: value(s.seeded) if callable(value) else value  # noqa: E731
        visits[side.name] = _visit(browser, side, name, resolve(path), *(resolve(text) for text in expected), then=then)
    for side, visit in visits.items():
        assert not visit.failures, (side, visit.failures)
    return visits


# --- 2. the Issues tab -----------------------------------------------------------------------------------------------


def test_issues_tab_shows_as_on_stock(browser: Any, sides: dict[str, Side]) -> None:
    """The Issues tab of a GenAI experiment: shown (server-info says a SQL store), its page loads its issues."""
    evidence = "No affected traces are recorded for this issue."  # its traces, searched by issue.id
    visits = _both(browser, sides, "issues", lambda s: f"/#/experiments/{s['genai_id']}/issues", "Issues", ISSUE, evidence)
    for visit in visits.values():
        assert "requires an MLflow server with SQL storage" not in visit.text
        assert "Unable to load server information" not in visit.text
    assert _issues_page_words(visits["ours"].text) == _issues_page_words(visits["stock"].text)


def _issues_page_words(text: str) -> list[str]:
    """The issue page's own content (the side navigation and experiment header are the same page chrome), its URLs
    and ids blanked; the assistant panel's welcome ("1. Debug Issues") shows where no assistant provider is set up."""
    lines = [re.sub(r"iss-[0-9a-f]+", "<issue>", re.sub(r"https?://\S+", "<url>", line)) for line in text.splitlines()]
    return [line for line in lines if re.search(r"issue|detect", line, re.IGNORECASE) and line != "1. Debug Issues"]


# --- 3. a model version's signature ----------------------------------------------------------------------------------


def test_model_version_signature_as_on_stock(browser: Any, sides: dict[str, Side]) -> None:
    def expand_inputs(page: Any) -> None:
        page.get_by_text("Inputs (2)").first.click()
        page.get_by_text("sepal_length").first.wait_for(state="visible")

    path = lambda s: f"/#/models/{s['model']}/versions/1"  # noqa: E731
    visits = _both(browser, sides, "model-version", path, "Version 1", "Inputs (2)", then=expand_inputs)
    for visit in visits.values():
        assert "Outputs (1)" in visit.text and "sepal_length" in visit.text, visit.text[-2000:]


def test_model_version_artifact_presigned_answers_a_url(sides: dict[str, Side]) -> None:
    """``presigned=true`` answers MLflow's JSON (``url``, ``headers``, ``file_size``) whose URL reads the file; MLflow's
    server does so on an S3 store (the stock server here stores locally and answers the file itself)."""
    ours = sides["ours"]
    query = {"name": ours.seeded["model"], "version": "1", "path": "MLmodel", "presigned": "true"}
    answer = ours.call("GET", "/model-versions/get-artifact", params=query, allow_redirects=False)
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert set(body) == {"url", "headers", "file_size"} and body["file_size"] == len(MLMODEL)
    assert requests.get(body["url"], headers=body["headers"], timeout=60).text == MLMODEL
    plain = {key: value for key, value in query.items() if key != "presigned"}
    stock = sides["stock"].call("GET", "/model-versions/get-artifact", params={**plain, "name": sides["stock"].seeded["model"]})
    assert stock.text == MLMODEL


# --- 4. a user's direct permissions ----------------------------------------------------------------------------------


def _roles(side: Side) -> list[dict[str, Any]]:
    answer = side.call("GET", "/api/3.0/mlflow/users/roles/list", params={"username": USER})
    assert answer.status_code == 200, answer.text
    experiment_id = side.seeded["experiment_id"]
    return [
        {
            "name": re.sub(r"\d+", "<id>", role["name"]),
            "workspace": role["workspace"],
            "description": role["description"],
            "permissions": [
                (p["resource_type"], "EXPERIMENT" if p["resource_pattern"] == experiment_id else p["resource_pattern"], p["permission"])
                for p in role["permissions"]
            ],
        }
        for role in answer.json()["roles"]
    ]


def test_direct_grants_listed_as_stock(sides: dict[str, Side]) -> None:
    assert _roles(sides["ours"]) == _roles(sides["stock"])
    assert _roles(sides["ours"]) == [
        {"name": "__user_<id>__", "workspace": "default", "description": None, "permissions": [("experiment", "EXPERIMENT", "EDIT")]}
    ]


def test_admin_user_permissions_as_on_stock(browser: Any, sides: dict[str, Side]) -> None:
    def open_permissions(page: Any) -> None:
        page.get_by_role("tab", name=re.compile("Permissions")).first.click()
        page.get_by_text("Direct").first.wait_for(state="visible")

    visits = _both(browser, sides, "admin-user", f"/#/admin/users/{USER}", USER, then=open_permissions)
    for side, visit in visits.items():
        experiment_id = sides[side].seeded["experiment_id"]
        assert "Direct" in visit.text and "EDIT" in visit.text and experiment_id in visit.text, (side, visit.text[-1500:])


# --- 5. a gateway endpoint's "Used by" -------------------------------------------------------------------------------


def _endpoint_row(page: Any, name: str) -> str:
    return page.get_by_role("row").filter(has_text=name).first.inner_text()


def test_endpoint_used_by_as_on_stock(browser: Any, sides: dict[str, Side]) -> None:
    rows = {}
    for side in sides.values():
        endpoint = side.seeded["endpoint"]
        holder: dict[str, str] = {}
        _visit(
            browser, side, "gateway", "/#/gateway", endpoint, then=lambda page, e=endpoint, h=holder: h.update(row=_endpoint_row(page, e))
        )
        rows[side.name] = holder["row"]
    shown = {side: re.sub(r"\s+", " ", row.replace(sides[side].seeded["endpoint"], "ENDPOINT")) for side, row in rows.items()}
    used_by = {side: re.sub(r"(\d+ (seconds?|minutes?|hours?) ago|just now|\w{3} \d+, \d{4}.*)", "", text) for side, text in shown.items()}
    assert used_by["ours"] == used_by["stock"], shown
    bindings = sides["ours"].call("GET", "/api/3.0/mlflow/gateway/endpoints/bindings/list", params={"resource_type": "scorer"})
    assert [b["display_name"] for b in bindings.json()["bindings"]] == [sides["ours"].seeded["judge"]], bindings.text


# --- 6. params, metrics and tags in logging order --------------------------------------------------------------------


def _run_data(side: Side) -> dict[str, list[str]]:
    answer = side.call("GET", "/api/2.0/mlflow/runs/get", params={"run_id": side.seeded["run_id"]})
    assert answer.status_code == 200, answer.text
    data = answer.json()["run"]["data"]
    return {
        "params": [p["key"] for p in data["params"]],
        "metrics": [m["key"] for m in data["metrics"]],
        "tags": [t["key"] for t in data["tags"] if not t["key"].startswith("mlflow.")],
    }


def test_run_data_in_logging_order_as_stock(sides: dict[str, Side]) -> None:
    assert _run_data(sides["ours"]) == _run_data(sides["stock"])


def test_run_page_params_in_stock_order(browser: Any, sides: dict[str, Side]) -> None:
    def keys_in(text: str, keys: list[str]) -> list[str]:
        return sorted(keys, key=lambda key: text.find(key))

    visits = _both(
        browser,
        sides,
        "run",
        lambda s: f"/#/experiments/{s['experiment_id']}/runs/{s['run_id']}",
        lambda s: s["run_name"],
        "zeta",
        "val_loss",
    )
    keys = [key for key, _ in PARAMS]
    assert keys_in(visits["ours"].text, keys) == keys_in(visits["stock"].text, keys)


# --- 7. the index under basic auth -----------------------------------------------------------------------------------


def test_index_challenges_as_stock(sides: dict[str, Side]) -> None:
    answers = {name: requests.get(f"{side.url}/", allow_redirects=False, timeout=60) for name, side in sides.items()}
    seen = {name: (a.status_code, a.headers.get("WWW-Authenticate"), a.headers.get("Location")) for name, a in answers.items()}
    assert seen["ours"] == seen["stock"] == (401, 'Basic realm="mlflow"', None)
