"""Issue 24's "Start Demo opening the demo experiment", in a real browser, by a user who is not an admin: the Home
page's Start Demo button asks for the demo data, lands on the demo experiment, and its traces appear once the demo
job (running as that user, ``serverless_mlflow.auth.job_tokens``) has made them. No request of the UI fails.

Marked ``long``: the demo job makes MLflow's whole demo (about 800 requests; 2-3 minutes here), so ``make test``
leaves it to ``make test-ui`` (which runs every test of tests/browser) and ``make test-long``."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from typing import Any

import pytest
import requests

from tests.auth.conftest import ADMIN, ADMIN_PASSWORD, basic_runtime
from tests.browser.test_ui_pages import CHROMIUM, CHROMIUM_ARGS, CHROMIUM_UNSAFE_PORTS, EXPECTED_404, TIMEOUT_MS, screenshot_dir
from tests.conftest import unique

pytestmark = [pytest.mark.xdist_group("browser"), pytest.mark.long, pytest.mark.e2e]

# The first demo trace's question (mlflow.demo.data), shown in the experiment's traces list.
DEMO_TRACE_TEXT = "What is MLflow Tracing and how does it help with LLM observability?"
JOB_SECONDS = 900


@pytest.fixture(scope="module")
def demo_server(server: str) -> Iterator[str]:
    """A basic-auth runtime of its own: its table has no demo data yet."""
    with basic_runtime(avoid_ports=frozenset(CHROMIUM_UNSAFE_PORTS)) as url:
        yield url


def test_start_demo_opens_the_demo_experiment_with_its_data(demo_server: str) -> None:
    from playwright.sync_api import sync_playwright

    user = (unique("carol"), "carol-password-1")
    created = requests.post(
        f"{demo_server}/api/2.0/mlflow/users/create",
        json={"username": user[0], "password": user[1]},
        auth=(ADMIN, ADMIN_PASSWORD),
        timeout=60,
    )
    assert created.status_code == 200, created.text
    failures: list[str] = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        context = browser.new_context(
            base_url=demo_server, http_credentials={"username": user[0], "password": user[1]}, viewport={"width": 1400, "height": 900}
        )
        page = context.new_page()
        page.set_default_timeout(TIMEOUT_MS)

        def check(response: Any) -> None:
            if not response.url.startswith(demo_server):
                return
            path = response.url[len(demo_server) :].split("?")[0]
            quiet = response.status == 404 and path.startswith(EXPECTED_404) and "users/current" not in path
            if not quiet and (response.status >= 500 or (response.status == 404 and ("/ajax-api/" in path or "/graphql" in path))):
                failures.append(f"{response.request.method} {path} -> {response.status}")

        page.on("response", check)
        # The UI's own errors (a page that crashes shows "Something went wrong" and logs why).
        page_errors: list[str] = []
        page.on("pageerror", lambda error: page_errors.append(str(error)[:2000]))
        try:
            page.goto("/#/")
            # The assistant panel opens itself on the first visit; closed, it stays out of the way.
            page.get_by_text("MLflow Assistant").first.wait_for(state="visible")
            page.locator('button[aria-label="Close"]').first.click()
            started = time.monotonic()
            page.get_by_role("button", name="Start Demo").click()
            page.wait_for_url(re.compile(r".*#/experiments/\d+.*"))
            experiment_id = re.search(r"#/experiments/(\d+)", page.url).group(1)  # type: ignore[union-attr]
            page.get_by_text("MLflow Demo").first.wait_for(state="visible")
            page.screenshot(path=str(screenshot_dir() / "20-start-demo-landing.png"), full_page=True)

            # The demo job runs as carol; she sees it (a job is its creator's) until it is done.
            jobs = requests.post(
                f"{demo_server}/ajax-api/3.0/jobs/search", json={"job_name": "demo_generate"}, auth=user, timeout=60
            ).json()["jobs"]
            assert [job["creator"] for job in jobs] == [user[0]]
            job = jobs[0]
            while job["status"] in ("PENDING", "RUNNING"):
                assert time.monotonic() - started < JOB_SECONDS, job
                time.sleep(3)
                job = requests.get(f"{demo_server}/ajax-api/3.0/jobs/{job['job_id']}", auth=user, timeout=60).json()
            assert job["status"] == "SUCCEEDED", job
            print(f"Start Demo: the demo job took {time.monotonic() - started:.0f} s")

            page.goto(f"/#/experiments/{experiment_id}/traces")
            page.get_by_text(DEMO_TRACE_TEXT).first.wait_for(state="visible")
            page.wait_for_timeout(2000)
            page.screenshot(path=str(screenshot_dir() / "21-start-demo-traces.png"), full_page=True)
        except Exception as error:
            page.screenshot(path=str(screenshot_dir() / "21-start-demo-FAILED.png"), full_page=True)
            raise AssertionError(f"{error}; page errors: {page_errors}; failed requests: {failures}") from error
        finally:
            context.close()
            browser.close()
    assert not failures, failures
    assert not page_errors, page_errors
