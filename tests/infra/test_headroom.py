"""Room to grow: every synthesized template (the stack and each nested stack) stays well below CloudFormation's
500 resources, and the HTTP API well below its 300 routes, in the largest configuration (basic auth, the full
monitoring set, canary deployments). New MLflow routes under an existing route group cost no route at all."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from infra.permissions import access_for
from serverless_mlflow.http import http_api
from serverless_mlflow.request import routes
from tests.infra.test_stack import Synth

pytestmark = pytest.mark.xdist_group("infra")

# CloudFormation takes 500 resources per stack and an HTTP API 300 routes: fail with room for the next release.
MAX_RESOURCES = 350
MAX_ROUTES = 270
# The ``largest`` fixture (conftest.py): basic auth, full monitoring, canary deployments.


def resource_counts(synth: Synth) -> dict[str, int]:
    """Resources per template of the cloud assembly: the stack's and each nested stack's."""
    counts = {}
    for path in sorted(Path(synth.outdir).glob("*.template.json")):
        counts[path.name] = len(json.loads(path.read_text()).get("Resources", {}))
    return counts


def route_count(synth: Synth) -> int:
    return sum(
        1
        for path in Path(synth.outdir).glob("*.template.json")
        for resource in json.loads(path.read_text()).get("Resources", {}).values()
        if resource["Type"] == "AWS::ApiGatewayV2::Route"
    )


@pytest.mark.parametrize("which", ["default", "largest"])
def test_every_stack_stays_clear_of_the_resource_limit(synth: Synth, largest: Synth, which: str) -> None:
    counts = resource_counts(synth if which == "default" else largest)
    print(which, counts)
    assert counts and all(count <= MAX_RESOURCES for count in counts.values()), counts


@pytest.mark.parametrize("which", ["default", "largest"])
def test_routes_stay_clear_of_the_http_api_quota(synth: Synth, largest: Synth, which: str) -> None:
    count = route_count(synth if which == "default" else largest)
    print(which, count, "routes")
    assert count == len(http_api.gateway_routes()) + 1  # + $default
    assert count <= MAX_ROUTES, f"{count} HTTP API routes: put new route families behind greedy routes"


def test_a_new_route_under_an_existing_group_costs_no_gateway_route(monkeypatch: pytest.MonkeyPatch) -> None:
    """The next MLflow release's routes land in existing groups: 100 of them add no route to the API."""
    before = len(http_api.gateway_routes())
    groups = sorted({http_api.group_of(r.path) for r in routes.ROUTES if r.path.startswith(routes.API_PREFIX) and not r.public})
    added = tuple(
        routes.Route(method, f"{groups[i % len(groups)]}/future-{i}", _main_feature(groups[i % len(groups)]), f"future_{i}")
        for i in range(50)
        for method in ("GET", "POST")
    )
    monkeypatch.setattr(routes, "ROUTES", routes.ROUTES + added)
    monkeypatch.setattr(http_api, "ROUTES", routes.ROUTES)
    http_api.gateway_routes.cache_clear()
    try:
        assert len(added) == 100 and len(http_api.gateway_routes()) == before
    finally:
        monkeypatch.undo()
        http_api.gateway_routes.cache_clear()


def _main_feature(group: str) -> str:
    return next(route.feature for route in http_api.gateway_routes() if route.path in (group, group + "/{proxy+}"))


def test_a_function_without_a_permission_declaration_cannot_be_deployed() -> None:
    with pytest.raises(KeyError, match=r"permissions\.py"):
        access_for("not-a-feature")
