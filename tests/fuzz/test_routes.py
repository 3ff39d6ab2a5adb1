"""Property-based fuzzing of every route of the route table (issue 22): hostile values in every field, whole
bodies that are not JSON objects, repeated query keys, odd path parameters, methods a path does not take.
Every answer is below 500, every 4xx is MLflow's JSON error (``error_code``, ``message``) and leaves the table
and the bucket as they were. Plain mode gets ``FUZZ_EXAMPLES`` examples per route, basic-auth mode (the admin's
credentials) ``FUZZ_BASIC_EXAMPLES``; ``--long`` many more (see conftest)."""

from __future__ import annotations

import pytest
import requests
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from serverless_mlflow.request import route_match, routes

from .conftest import Target, ensure_seeds, examples, long_mode
from .plans import RoutePlan, all_plans, good_path_param
from .requests_ import Fuzzed, checked_send, checked_sends, fuzzed_requests, path_of
from .scan import record_5xx, scan

pytestmark = pytest.mark.e2e

PLANS, UNPLANNED = all_plans()
METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS", "BREW")


def test_every_route_is_fuzzed() -> None:
    """A route added later is fuzzed from its feature's request table, or this fails and says what is missing."""
    assert not UNPLANNED, UNPLANNED
    assert len(PLANS) == len(routes.ROUTES)


def _fuzz(target: Target, plan: RoutePlan, config: pytest.Config, count: int) -> None:
    ensure_seeds(target)

    @settings(
        max_examples=count,
        deadline=None,
        database=None,
        derandomize=not long_mode(config),
        suppress_health_check=list(HealthCheck),
    )
    @given(data=st.data())
    def run(data: st.DataObject) -> None:
        checked_send(target, plan, data.draw(fuzzed_requests(plan, target), label="request"))

    run()


@pytest.mark.parametrize("plan", PLANS, ids=[plan.id for plan in PLANS])
def test_plain(plain_target: Target, plan: RoutePlan, pytestconfig: pytest.Config) -> None:
    _fuzz(plain_target, plan, pytestconfig, examples(pytestconfig, "plain"))


@pytest.mark.parametrize("plan", PLANS, ids=[plan.id for plan in PLANS])
def test_basic_auth(basic_target: Target, plan: RoutePlan, pytestconfig: pytest.Config) -> None:
    _fuzz(basic_target, plan, pytestconfig, examples(pytestconfig, "basic"))


# One plan per path: the methods a path takes are the table's, whichever route's plan fills its parameters.
PATHS = list({plan.route.path: plan for plan in PLANS}.values())


@pytest.mark.parametrize("plan", PATHS, ids=[plan.route.path for plan in PATHS])
def test_methods_a_path_does_not_take(plain_target: Target, plan: RoutePlan) -> None:
    """405 with the path's methods (204 to OPTIONS), in MLflow's JSON shape, as MLflow's server answers."""
    target = plain_target
    ensure_seeds(target)
    path = path_of(plan, {name: good_path_param(name, plan.route, target.seeds) for name in plan.path_params})
    allowed = route_match.allowed_methods(path)
    assert allowed, path
    methods = [method for method in METHODS if method not in allowed or method == "OPTIONS"]
    answers = checked_sends(target, plan, [Fuzzed(method, path, headers=dict(target.headers)) for method in methods])
    for method, response in zip(methods, answers, strict=True):
        assert response.status_code == (204 if method == "OPTIONS" else 405), (method, path, response.status_code, response.text[:300])
        assert response.headers["allow"] == ", ".join(allowed)


def test_the_state_check_sees_a_change(plain_target: Target) -> None:
    """The suite's check itself: a write between two reads of the stream is seen, the indexer's are not."""
    target = plain_target
    ensure_seeds(target)
    target.settle()
    assert target.snapshot.changes() == []
    requests.post(
        f"{target.url}/api/2.0/mlflow/runs/set-tag", json={"run_id": target.seeds["run_id"], "key": "seen", "value": "1"}, timeout=60
    )
    changes = target.snapshot.changes()
    assert [
        r["dynamodb"]["NewImage"]["key"]["S"]
        for r in changes
        if r["dynamodb"].get("NewImage", {}).get("entity_type", {}).get("S") == "run_tag"
    ] == ["seen"]


# Last in this module (and run again as each runtime's teardown, after every worker's fuzzing: see conftest).
@pytest.mark.parametrize("mode", ["plain", "basic"])
def test_everything_the_fuzz_wrote_reads_back(mode: str, request: pytest.FixtureRequest) -> None:
    """The half-written-state scan: every object the fuzzed requests left (experiments, runs and their metrics,
    traces with their infos and searches, jobs, gateway objects, models, datasets...) answers its reads below 500."""
    target: Target = request.getfixturevalue(f"{mode}_target")
    target.settle()
    result = scan(target.url, target.headers)
    result.failures = [f for f in result.failures if not record_5xx(f"scan\t{mode}: {f}")]
    assert result.reads > 20, result.reads
    assert not result.failures, "\n".join(result.failures[:20])
