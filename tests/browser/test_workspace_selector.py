"""The web UI's workspace selector in a real browser (issue #27): with workspaces on the UI reads
``workspaces_enabled`` from server-info, lists the workspaces in its selector and sends the chosen one as the
``X-MLFLOW-WORKSPACE`` header. Two workspaces with an experiment each: the experiments page of each shows its
own experiment only, and no request fails; a user holding a role in one of them is offered that one only.

Its own runtime (basic auth and workspaces on) and browser: about 50 s on a quiet 2-core machine, minutes on a
loaded one (the bundle's first load in a fresh Chromium), so it is marked long: ``make test-ui`` (which takes
every browser test) and ``make test-long`` run it, ``make test`` does not.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from tests.browser.test_ui_pages import CHROMIUM, CHROMIUM_ARGS, CHROMIUM_UNSAFE_PORTS, TIMEOUT_MS, credentials, screenshot_dir

pytestmark = [pytest.mark.xdist_group("browser"), pytest.mark.long]

HEADER = "X-MLFLOW-WORKSPACE"
VIEWER, VIEWER_PASSWORD = "ws-viewer", "a-long-viewer-password"


@pytest.fixture(scope="module")
def workspaces_ui(server: str) -> Iterator[tuple[str, dict[str, str]]]:
    """A basic-auth runtime with workspaces on, holding two workspaces with one experiment each."""
    import requests

    from tests.auth.conftest import ADMIN, ADMIN_PASSWORD, basic_env, basic_runtime

    with basic_runtime(avoid_ports=frozenset(CHROMIUM_UNSAFE_PORTS), env={**basic_env(), "MLFLOW_ENABLE_WORKSPACES": "true"}) as url:
        suffix = uuid.uuid4().hex[:6]
        experiments = {}
        for team in ("alpha", "beta"):
            workspace = f"team-{team}-{suffix}"
            auth = (ADMIN, ADMIN_PASSWORD)
            created = requests.post(f"{url}/api/3.0/mlflow/workspaces", json={"name": workspace}, auth=auth, timeout=60)
            assert created.status_code == 201, created.text
            made = requests.post(
                f"{url}/api/2.0/mlflow/experiments/create",
                json={"name": f"{team}-experiment-{suffix}"},
                headers={HEADER: workspace},
                auth=auth,
                timeout=60,
            )
            assert made.status_code == 200, made.text
            experiments[workspace] = f"{team}-experiment-{suffix}"
        # A user holding the ``user`` role of the first workspace only.
        first = next(iter(experiments))
        roles = requests.get(f"{url}/api/3.0/mlflow/roles/list", params={"workspace": first}, auth=auth, timeout=60).json()["roles"]
        made = requests.post(
            f"{url}/api/2.0/mlflow/users/create", json={"username": VIEWER, "password": VIEWER_PASSWORD}, auth=auth, timeout=60
        )
        assert made.status_code == 200, made.text
        role_id = next(role["id"] for role in roles if role["name"] == "user")
        assigned = requests.post(f"{url}/api/3.0/mlflow/roles/assign", json={"username": VIEWER, "role_id": role_id}, auth=auth, timeout=60)
        assert assigned.status_code == 200, assigned.text
        yield url, experiments


def test_switching_workspaces_shows_each_ones_experiments(workspaces_ui: tuple[str, dict[str, str]]) -> None:
    from playwright.sync_api import sync_playwright

    url, experiments = workspaces_ui
    (first, first_experiment), (second, second_experiment) = experiments.items()
    failures: list[str] = []
    sent: list[tuple[str, str | None]] = []

    def check(response: Any) -> None:
        if not response.url.startswith(url):
            return
        path = response.url[len(url) :].split("?")[0]
        if "/ajax-api/" in path:
            sent.append((path, response.request.headers.get(HEADER.lower())))
        # users/current answers 404 on MLflow without auth only; here it must answer, as every other route.
        if response.status >= 400 and path != "/login":
            failures.append(f"{response.request.method} {path} -> {response.status}")

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        context = browser.new_context(base_url=url, http_credentials=credentials(), viewport={"width": 1400, "height": 900})
        page = context.new_page()
        page.set_default_timeout(TIMEOUT_MS)
        page.on("response", check)
        try:
            # With no workspace chosen yet, the UI opens its home page with the selector in the sidebar.
            page.goto("/#/experiments")
            page.get_by_role("combobox", name="Workspace").wait_for(state="visible")
            page.screenshot(path=str(screenshot_dir() / "workspaces-0-start.png"), full_page=True)
            for workspace, shown, hidden, name in (
                (first, first_experiment, second_experiment, "workspaces-1-first"),
                (second, second_experiment, first_experiment, "workspaces-2-second"),
            ):
                page.get_by_role("combobox", name="Workspace").click()
                page.get_by_text(workspace, exact=True).last.click()
                page.get_by_text(shown).first.wait_for(state="visible")  # the home page's recent experiments
                page.get_by_role("link", name="Experiments").first.click()
                page.get_by_text(shown).first.wait_for(state="visible")
                page.wait_for_timeout(2000)  # late requests of the page (it polls)
                page.screenshot(path=str(screenshot_dir() / f"{name}.png"), full_page=True)
                assert f"workspace={workspace}" in page.url, page.url
                assert page.get_by_text(hidden).count() == 0, f"{hidden} shown in {workspace}"
                searched = [header for path, header in sent if path.endswith("/experiments/search")]
                assert searched and searched[-1] == workspace, sent[-10:]
            # A user's selector offers the workspaces it holds a role in, and nothing else.
            user_context = browser.new_context(
                base_url=url, http_credentials={"username": VIEWER, "password": VIEWER_PASSWORD}, viewport={"width": 1400, "height": 900}
            )
            user_page = user_context.new_page()
            user_page.set_default_timeout(TIMEOUT_MS)
            user_page.on("response", check)
            user_page.goto("/")
            user_page.get_by_role("combobox", name="Workspace").click()
            user_page.get_by_text(first, exact=True).last.wait_for(state="visible")
            user_page.wait_for_timeout(1000)
            user_page.screenshot(path=str(screenshot_dir() / "workspaces-3-user.png"), full_page=True)
            assert user_page.get_by_text(second, exact=True).count() == 0
            user_context.close()
        finally:
            context.close()
            browser.close()
    assert not failures, failures
