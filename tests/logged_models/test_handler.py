"""The logged_models Lambda handler invoked directly with API Gateway events, plus its DynamoDB cost."""

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
    matched = route_match.match(method, path)
    assert matched is not None
    feature = matched[0].feature
    handler = __import__(f"{feature}.handler", fromlist=["lambda_handler"]).lambda_handler
    raw = json.dumps(body).encode() if body is not None else b""
    headers = {"content-type": "application/json"} if body is not None else {}
    event = api_gateway_event(method, path, query, headers, raw, matched[0].route_key, matched[1], "localhost")
    response = handler(event, LambdaContext(feature))
    return response["statusCode"], json.loads(response["body"] or "{}")


@pytest.fixture
def experiment_id(server: str) -> str:
    status, body = invoke("POST", f"{M2}/experiments/create", {"name": unique("lmh")})
    assert status == 200
    return body["experiment_id"]


def test_create_response_shape_and_costs(experiment_id: str) -> None:
    table.STATS.reset()
    status, body = invoke(
        "POST", f"{M2}/logged-models", {"experiment_id": experiment_id, "name": "m", "params": [{"key": "p", "value": "1"}]}
    )
    assert status == 200
    # Experiment GetItem + one transaction (model, locator, param).
    assert table.STATS.snapshot()["requests"] == {"GetItem": 1, "TransactWriteItems": 1}
    info = body["model"]["info"]
    assert info["status"] == "LOGGED_MODEL_PENDING"
    # MLflow's handler stores the proto defaults "" for unset model_type / source_run_id and answers them.
    assert (info["model_type"], info["source_run_id"]) == ("", "")
    assert body["model"]["data"] == {"params": [{"key": "p", "value": "1"}]}
    model_id = info["model_id"]
    table.STATS.reset()
    status, fetched = invoke("GET", f"{M2}/logged-models/{model_id}")
    assert status == 200 and fetched["model"] == body["model"]
    # The model's own partition (its locator and metric points), then its items in the experiment partition.
    assert table.STATS.snapshot()["requests"] == {"Query": 2}


def test_finalize_status_parsing(experiment_id: str) -> None:
    _, created = invoke("POST", f"{M2}/logged-models", {"experiment_id": experiment_id})
    model_id = created["model"]["info"]["model_id"]
    path = f"{M2}/logged-models/{model_id}"
    status, body = invoke("PATCH", path, {"model_id": model_id, "status": "LOGGED_MODEL_UPLOAD_FAILED"})
    assert status == 200 and body["model"]["info"]["status"] == "LOGGED_MODEL_UPLOAD_FAILED"
    status, body = invoke("PATCH", path, {"model_id": model_id, "status": 2})
    assert status == 200 and body["model"]["info"]["status"] == "LOGGED_MODEL_READY"
    status, body = invoke("PATCH", path, {"model_id": model_id, "status": "NOPE"})
    assert status == 400 and body["message"].startswith("Invalid value \"NOPE\" for parameter 'status' supplied:  Hint")
    status, body = invoke("PATCH", path, {"model_id": model_id, "status": 9})
    assert (status, body["message"]) == (400, "Unknown model status: 9")
    status, body = invoke("PATCH", path, {"status": 2})
    assert status == 400 and body["message"].startswith("Missing value for required parameter 'model_id'.")


def test_search_requires_experiment_ids(server: str) -> None:
    status, body = invoke("POST", f"{M2}/logged-models/search", {})
    assert status == 400 and body["message"].startswith("Missing value for required parameter 'experiment_ids'.")
    status, body = invoke("POST", f"{M2}/logged-models/search", {"experiment_ids": ["x"]})
    assert (status, body["message"]) == (400, "Invalid experiment ID 'x'. Experiment ID must be a valid integer.")
    status, body = invoke("POST", f"{M2}/logged-models/search", {"experiment_ids": ["1"], "datasets": [{"dataset_digest": "d"}]})
    assert (status, body["message"]) == (400, "`dataset_name` in the `datasets` clause must be specified.")
