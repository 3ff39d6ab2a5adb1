"""``/ajax-api/...``: every REST route answers under the UI's prefix too, through one greedy gateway route
per route group (HTTP API's route quota), mapped back to the ``/api/`` route by the shared resolver."""

from __future__ import annotations

from typing import Any

import pytest
import requests

from local.events import api_gateway_event
from serverless_mlflow.http import http_api
from serverless_mlflow.http.api import ajax_to_api
from serverless_mlflow.request import route_match, routes
from tests.conftest import unique

# HTTP API's default quota is 300 routes: new MLflow routes under an existing group cost none (greedy groups);
# keep room for new groups and features.
ROUTE_BUDGET = 150


def _ajax(path: str) -> str:
    return routes.AJAX_PREFIX + path[len(routes.API_PREFIX) :]


def _sample(path: str) -> str:
    return path.replace("{path+}", "1/abc/artifacts/a b.txt").replace("{model_id}", "m-123").replace("{tag_key}", "k")


@pytest.mark.parametrize("route", [r for r in routes.ROUTES if r.path.startswith(routes.API_PREFIX)], ids=lambda r: r.route_key)
def test_every_api_route_reaches_its_operation_under_ajax_api(route: routes.Route) -> None:
    path = _sample(route.path)
    gateway = http_api.match_gateway(route.method, _ajax(path))
    assert gateway is not None and gateway[0].feature == route.feature
    event = api_gateway_event(route.method, _ajax(path), "", {}, b"", gateway[0].route_key, gateway[1], "local")
    mapped = ajax_to_api(event)
    assert mapped["rawPath"] == mapped["requestContext"]["http"]["path"] == path
    operation = route_match.match(route.method, mapped["rawPath"])
    assert operation is not None and operation[0] == route
    # The function sees the /api route's path parameters, not the greedy route's {proxy}.
    assert mapped["pathParameters"] == operation[1]


@pytest.mark.parametrize("route", [r for r in routes.ROUTES if r.path.startswith(routes.API_PREFIX)], ids=lambda r: r.route_key)
def test_every_api_route_reaches_its_operation_through_its_group(route: routes.Route) -> None:
    """``/api/`` paths share one greedy route per group too: the function sees the table route's parameters."""
    path = _sample(route.path)
    gateway = http_api.match_gateway(route.method, path)
    assert gateway is not None and gateway[0].feature == route.feature
    event = api_gateway_event(route.method, path, "", {}, b"", gateway[0].route_key, gateway[1], "local")
    mapped = ajax_to_api(event)
    operation = route_match.match(route.method, path)
    assert operation is not None and operation[0] == route
    assert mapped["rawPath"] == path and (mapped.get("pathParameters") or {}) == operation[1]
    # Public routes (no authorizer under basic auth) keep exact routes of their own.
    assert gateway[0].public == route.public


def test_ui_only_routes_answer_under_ajax_api_alone() -> None:
    for route in routes.ROUTES:
        if route.path.startswith(routes.AJAX_PREFIX):
            path = _sample(route.path)
            assert route_match.match(route.method, path)[0] == route  # type: ignore[index]
            assert route_match.match(route.method, routes.API_PREFIX + path[len(routes.AJAX_PREFIX) :]) is None


def test_gateway_routes_stay_within_the_quota() -> None:
    gateway = http_api.gateway_routes()
    keys = [r.route_key for r in gateway]
    assert len(keys) == len(set(keys)) and len(keys) <= ROUTE_BUDGET
    ajax = [r for r in gateway if r.path.startswith(routes.AJAX_PREFIX)]
    assert len(ajax) < len([r for r in routes.ROUTES if r.path.startswith(routes.API_PREFIX)]) / 3
    # A route of another feature in a group keeps its own exact route, which API Gateway prefers.
    files = http_api.match_gateway("GET", "/ajax-api/2.0/mlflow/logged-models/m-1/artifacts/files")
    assert files is not None and files[0].feature == "artifacts" and files[1] == {"model_id": "m-1"}
    assert http_api.match_gateway("GET", "/ajax-api/2.0/mlflow/logged-models/m-1")[0].feature == "logged_models"  # type: ignore[index]


def test_named_stage_prefix_is_kept() -> None:
    event = api_gateway_event(
        "GET", "/prod/ajax-api/2.0/mlflow/runs/get", "", {}, b"", "ANY /ajax-api/2.0/mlflow/runs/{proxy+}", {"proxy": "get"}, "x"
    )
    event["requestContext"]["stage"] = "prod"
    mapped = ajax_to_api(event)
    assert mapped["rawPath"] == "/prod/api/2.0/mlflow/runs/get" and mapped["pathParameters"] == {}


# --- end to end -----------------------------------------------------------------------------------


def _both(server: str, method: str, path: str, **kwargs: Any) -> tuple[requests.Response, requests.Response]:
    return (
        requests.request(method, f"{server}/api{path}", timeout=30, **kwargs),
        requests.request(method, f"{server}/ajax-api{path}", timeout=30, **kwargs),
    )


@pytest.mark.e2e
def test_ajax_api_answers_like_api(server: str, client: Any) -> None:
    experiment_id = client.create_experiment(unique("ajax"))
    api, ajax = _both(server, "GET", "/2.0/mlflow/experiments/get", params={"experiment_id": experiment_id})
    assert api.status_code == ajax.status_code == 200 and api.json() == ajax.json()
    created = requests.post(f"{server}/ajax-api/2.0/mlflow/runs/create", json={"experiment_id": experiment_id}, timeout=30)
    assert created.status_code == 200
    run_id = created.json()["run"]["info"]["run_id"]
    assert client.get_run(run_id).info.experiment_id == experiment_id
    # A greedy path parameter is the /api route's own: the artifact path.
    requests.put(f"{server}/api/2.0/mlflow-artifacts/artifacts/{experiment_id}/{run_id}/artifacts/a.txt", data=b"abc", timeout=30)
    api, ajax = _both(server, "GET", "/2.0/mlflow-artifacts/artifacts", params={"path": f"{experiment_id}/{run_id}/artifacts"})
    assert api.json() == ajax.json() == {"files": [{"path": "a.txt", "is_dir": False, "file_size": 3}]}
    # Errors are the same too, and a path no route has is MLflow's ENDPOINT_NOT_FOUND.
    api, ajax = _both(server, "GET", "/2.0/mlflow/runs/get", params={"run_id": "0" * 32})
    assert api.status_code == ajax.status_code == 404 and api.json() == ajax.json()
    missing = requests.get(f"{server}/ajax-api/2.0/mlflow/runs/no-such-route", timeout=30)
    assert missing.status_code == 404 and missing.json()["error_code"] == "ENDPOINT_NOT_FOUND"
    assert requests.get(f"{server}/api/2.0/mlflow/metrics/get-history-bulk", timeout=30).status_code == 404


@pytest.mark.e2e
def test_ui_telemetry_is_off(server: str) -> None:
    assert requests.get(f"{server}/ajax-api/3.0/mlflow/ui-telemetry", timeout=30).json() == {
        "disable_ui_telemetry": True,
        "disable_ui_events": [],
        "ui_rollout_percentage": 0,
    }
    posted = requests.post(f"{server}/ajax-api/3.0/mlflow/ui-telemetry", json={"records": [{"x": 1}]}, timeout=30)
    assert posted.json() == {"status": "disabled"}
