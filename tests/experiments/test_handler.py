"""The experiments Lambda handler invoked directly with API Gateway events (no HTTP), plus its DynamoDB cost."""

from __future__ import annotations

import json
from typing import Any

import pytest

from local.events import LambdaContext, api_gateway_event
from serverless_mlflow.request import route_match
from serverless_mlflow.storage import table
from tests.conftest import unique

M2 = "/api/2.0/mlflow"


def invoke(method: str, path: str, body: dict[str, Any] | None = None, query: str = "") -> tuple[int, dict[str, Any]]:
    from experiments.handler import lambda_handler

    matched = route_match.match(method, path)
    assert matched is not None and matched[0].feature == "experiments"
    raw = json.dumps(body).encode() if body is not None else b""
    headers = {"content-type": "application/json"} if body is not None else {}
    event = api_gateway_event(method, path, query, headers, raw, matched[0].route_key, matched[1], "localhost")
    response = lambda_handler(event, LambdaContext("experiments"))
    return response["statusCode"], json.loads(response["body"] or "{}")


@pytest.fixture(autouse=True)
def _table(server: str) -> None:
    """The session runtime configures the table endpoint; the handler runs in this process."""


def test_create_get_response_shape() -> None:
    name = unique("h")
    status, created = invoke(
        "POST", f"{M2}/experiments/create", {"name": name, "tags": [{"key": "b", "value": "2"}, {"key": "a", "value": "1"}]}
    )
    assert status == 200 and set(created) == {"experiment_id"}
    status, body = invoke("GET", f"{M2}/experiments/get", query=f"experiment_id={created['experiment_id']}")
    experiment = body["experiment"]
    assert status == 200
    assert list(experiment) == [
        "experiment_id",
        "name",
        "artifact_location",
        "lifecycle_stage",
        "last_update_time",
        "creation_time",
        "tags",
        "workspace",
    ]
    assert experiment["tags"] == [{"key": "a", "value": "1"}, {"key": "b", "value": "2"}]
    assert isinstance(experiment["creation_time"], int) and isinstance(experiment["experiment_id"], str)


def test_read_costs() -> None:
    name = unique("cost")
    _, created = invoke("POST", f"{M2}/experiments/create", {"name": name})
    table.STATS.reset()
    invoke("GET", f"{M2}/experiments/get", query=f"experiment_id={created['experiment_id']}")
    assert table.STATS.snapshot()["requests"] == {"Query": 1}
    table.STATS.reset()
    invoke("GET", f"{M2}/experiments/get-by-name", query=f"experiment_name={name}")
    assert table.STATS.snapshot()["requests"] == {"GetItem": 1, "Query": 1}
    table.STATS.reset()
    invoke("POST", f"{M2}/experiments/create", {"name": unique("cost2")})
    # Claim pre-check, id counter, one transaction.
    assert table.STATS.snapshot()["requests"] == {"GetItem": 1, "UpdateItem": 1, "TransactWriteItems": 1}


def test_bad_input_writes_nothing() -> None:
    table.STATS.reset()
    status, body = invoke(
        "POST", f"{M2}/experiments/create", {"name": unique("bad"), "tags": [{"key": "ok", "value": "v"}, {"key": "", "value": "v"}]}
    )
    assert status == 400 and body["error_code"] == "INVALID_PARAMETER_VALUE"
    assert table.STATS.snapshot()["items_written"] == 0
    status, body = invoke("POST", f"{M2}/experiments/create", {"name": 5})
    assert status == 400 and body["error_code"] == "INVALID_PARAMETER_VALUE"
    assert table.STATS.snapshot()["items_written"] == 0


def test_search_view_types_and_proto_default_max_results() -> None:
    status, body = invoke("POST", f"{M2}/experiments/search", {})
    # SearchExperiments.max_results is 0 when unset: the SQL store rejects it.
    assert (status, body["message"]) == (400, "Invalid value 0 for parameter 'max_results' supplied. It must be a positive integer")
    status, body = invoke("POST", f"{M2}/experiments/search", {"max_results": 5, "view_type": "ALL"})
    assert status == 200 and len(body["experiments"]) <= 5
    status, body = invoke("POST", f"{M2}/experiments/search", {"max_results": 5, "view_type": "NOPE"})
    assert (status, body["message"]) == (
        400,
        "Invalid value \"NOPE\" for parameter 'view_type' supplied:  Hint: Value was of type 'str'. "
        "See the API docs for more information about request parameters.",
    )
