"""The route table: what API Gateway would pick, and what each feature registers."""

from __future__ import annotations

from serverless_mlflow.request import route_match, routes


def test_literal_routes_beat_path_parameters() -> None:
    route, params = route_match.match("POST", "/api/2.0/mlflow/logged-models/search")
    assert route.operation == "search_logged_models" and params == {}
    route, params = route_match.match("GET", "/api/2.0/mlflow/logged-models/m-abc")
    assert route.operation == "get_logged_model" and params == {"model_id": "m-abc"}


def test_greedy_paths() -> None:
    route, params = route_match.match("POST", "/api/2.0/mlflow-artifacts/mpu/create/1/abc/artifacts/dir")
    assert route.operation == "create_multipart_upload" and params == {"path": "1/abc/artifacts/dir"}
    assert route.powertools_rule.endswith("/mpu/create/(.+)")


def test_unknown_routes_and_methods_do_not_match() -> None:
    assert route_match.match("GET", "/api/2.0/mlflow/unknown") is None
    assert route_match.match("DELETE", "/api/2.0/mlflow/runs/get") is None


def test_route_keys_are_unique() -> None:
    keys = [route.route_key for route in routes.ROUTES]
    assert len(keys) == len(set(keys))
