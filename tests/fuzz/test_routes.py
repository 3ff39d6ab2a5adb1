"""Property-based fuzzing of every route of the route table (issue 22): hostile values in every field, whole
bodies that are not JSON objects, repeated query keys, odd path parameters. Every answer is below 500, every
4xx is MLflow's JSON error (``error_code``, ``message``) and leaves the table and the bucket as they were."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from .conftest import Target, ensure_seeds, examples
from .plans import RoutePlan, all_plans
from .requests_ import check_answer, fuzzed_requests, send

pytestmark = pytest.mark.e2e

PLANS = all_plans()


def _fuzz(target: Target, plan: RoutePlan, config: pytest.Config) -> None:
    ensure_seeds(target)

    @settings(
        max_examples=examples(config),
        deadline=None,
        database=None,
        derandomize=not config.getoption("--long", default=False),
        suppress_health_check=list(HealthCheck),
    )
    @given(data=st.data())
    def run(data: st.DataObject) -> None:
        fuzzed = data.draw(fuzzed_requests(plan, target), label="request")
        before = target.state()
        check_answer(target, fuzzed, send(target, fuzzed), before)

    run()


@pytest.mark.parametrize("plan", PLANS, ids=[plan.id for plan in PLANS])
def test_plain(plain_target: Target, plan: RoutePlan, pytestconfig: pytest.Config) -> None:
    _fuzz(plain_target, plan, pytestconfig)
