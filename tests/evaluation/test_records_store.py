"""Dataset records on the table: concurrent merges stay exact, retries are safe, DynamoDB work per call is bounded."""

from __future__ import annotations

import base64
import json
import urllib.parse
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import requests

from local.events import LambdaContext, api_gateway_event
from serverless_mlflow.request import route_match
from serverless_mlflow.storage import table
from tests.conftest import unique

M3 = "/api/3.0/mlflow"


def invoke(method: str, path: str, body: dict[str, Any] | None = None, query: str = "") -> tuple[int, dict[str, Any]]:
    matched = route_match.match(method, path)
    assert matched is not None
    handler = __import__(f"{matched[0].feature}.handler", fromlist=["lambda_handler"]).lambda_handler
    raw = json.dumps(body).encode() if body is not None else b""
    headers = {"content-type": "application/json"} if body is not None else {}
    event = api_gateway_event(method, path, query, headers, raw, matched[0].route_key, matched[1], "localhost")
    response = handler(event, LambdaContext(matched[0].feature))
    return response["statusCode"], json.loads(response["body"] or "{}")


def _create(server: str) -> str:
    status, body = invoke("POST", f"{M3}/datasets/create", {"name": unique("ds")})
    assert status == 200
    return body["dataset"]["dataset_id"]


def _records(dataset_id: str) -> list[dict[str, Any]]:
    status, body = invoke("GET", f"{M3}/datasets/{dataset_id}/records", query="max_results=1000")
    assert status == 200
    return json.loads(body["records"])


def test_concurrent_merges_into_one_record_lose_nothing(server: str) -> None:
    dataset_id = _create(server)

    def merge(i: int) -> dict[str, int]:
        records = [{"inputs": {"q": "same"}, "expectations": {f"e{i}": i}, "tags": {f"t{i}": str(i)}}]
        response = requests.post(f"{server}{M3}/datasets/{dataset_id}/records", json={"records": json.dumps(records)}, timeout=60)
        assert response.status_code == 200, response.text
        return response.json()

    with ThreadPoolExecutor(max_workers=8) as pool:
        counts = list(pool.map(merge, range(16)))
    assert sum(c.get("inserted_count", 0) for c in counts) == 1
    assert sum(c.get("updated_count", 0) for c in counts) == 15
    (record,) = _records(dataset_id)
    assert record["expectations"] == {f"e{i}": i for i in range(16)}
    assert record["tags"] == {f"t{i}": str(i) for i in range(16)}
    _, body = invoke("GET", f"{M3}/datasets/{dataset_id}")
    assert json.loads(body["dataset"]["profile"]) == {"num_records": 1}


def test_retried_upsert_lands_on_the_same_records(server: str) -> None:
    dataset_id = _create(server)
    batch = {"records": json.dumps([{"inputs": {"i": i}, "outputs": i} for i in range(30)])}
    assert invoke("POST", f"{M3}/datasets/{dataset_id}/records", batch) == (200, {"inserted_count": 30, "updated_count": 0})
    assert invoke("POST", f"{M3}/datasets/{dataset_id}/records", batch) == (200, {"inserted_count": 0, "updated_count": 30})
    assert len(_records(dataset_id)) == 30
    _, body = invoke("GET", f"{M3}/datasets/{dataset_id}")
    assert json.loads(body["dataset"]["profile"]) == {"num_records": 30}


def test_dynamodb_work_per_call(server: str) -> None:
    dataset_id = _create(server)
    batch = {"records": json.dumps([{"inputs": {"i": i}, "expectations": {"x": i}} for i in range(100)])}
    table.STATS.reset()
    assert invoke("POST", f"{M3}/datasets/{dataset_id}/records", batch)[0] == 200
    requests_made = table.STATS.snapshot()["requests"]
    # Dataset read, one BatchGetItem per 100 identities, 3 transactions of <= 45 records (new records also write
    # their id locator), the dataset's read-modify-write.
    assert requests_made == {"GetItem": 2, "BatchGetItem": 1, "TransactWriteItems": 3, "UpdateItem": 1}
    table.STATS.reset()
    status, body = invoke("GET", f"{M3}/datasets/{dataset_id}/records", query="max_results=40")
    assert status == 200 and len(json.loads(body["records"])) == 40 and body["next_page_token"]
    assert table.STATS.snapshot()["requests"] == {"Query": 1}
    table.STATS.reset()
    assert invoke("GET", f"{M3}/datasets/{dataset_id}")[0] == 200
    assert table.STATS.snapshot()["requests"] == {"GetItem": 1}


def test_bad_requests_answer_mlflow_codes(server: str) -> None:
    dataset_id = _create(server)
    cases = [
        ("POST", f"{M3}/datasets/create", {"experiment_ids": ["1"]}, "", "INVALID_PARAMETER_VALUE"),
        ("POST", f"{M3}/datasets/create", {"name": "x", "tags": "{bad json"}, "", "INVALID_PARAMETER_VALUE"),
        ("POST", f"{M3}/datasets/create", {"name": "x", "tags": json.dumps({"": "v"})}, "", "INVALID_PARAMETER_VALUE"),
        ("POST", f"{M3}/datasets/create", {"name": "x", "experiment_ids": ["1" * 600]}, "", "INVALID_PARAMETER_VALUE"),
        ("PATCH", f"{M3}/datasets/{dataset_id}/tags", {"tags": "[1, 2]"}, "", "INVALID_PARAMETER_VALUE"),
        ("PATCH", f"{M3}/datasets/{dataset_id}/tags", {}, "", "INVALID_PARAMETER_VALUE"),
        ("PATCH", f"{M3}/datasets/d-{'0' * 32}/tags", {"tags": "{}"}, "", "RESOURCE_DOES_NOT_EXIST"),
        ("GET", f"{M3}/datasets/{dataset_id}/records", None, "page_token=%25%25", "INVALID_PARAMETER_VALUE"),
        ("GET", f"{M3}/datasets/{dataset_id}/records", None, "max_results=abc", "INVALID_PARAMETER_VALUE"),
        (
            "GET",
            f"{M3}/datasets/{dataset_id}/records",
            None,
            "page_token=" + base64.b64encode(b"1:" + b"x" * 2000).decode(),
            "INVALID_PARAMETER_VALUE",
        ),
        ("GET", f"{M3}/datasets/{dataset_id}/records", None, "max_results=-3", "INVALID_PARAMETER_VALUE"),
        ("GET", f"{M3}/datasets/{'x' * 3000}", None, "", "RESOURCE_DOES_NOT_EXIST"),
        ("POST", f"{M3}/datasets/d-{'0' * 32}/records", {"records": "[]"}, "", "BAD_REQUEST"),
        ("POST", f"{M3}/datasets/search", {"max_results": 10, "filter_string": "name = "}, "", "INVALID_PARAMETER_VALUE"),
        # MLflow answers a lower-case `like` on an attribute with a 500; here it is a 400.
        ("POST", f"{M3}/datasets/search", {"max_results": 10, "filter_string": "name like 'a%'"}, "", "INVALID_PARAMETER_VALUE"),
        ("GET", f"{M3}/scorers/get", None, "experiment_id=0&name=a&version=abc", "INVALID_PARAMETER_VALUE"),
        ("GET", f"{M3}/scorers/list", None, "experiment_id=0&experiment_ids=0", "INVALID_PARAMETER_VALUE"),
        ("GET", f"{M3}/scorers/list", None, "experiment_id=abc", "INVALID_PARAMETER_VALUE"),
        ("POST", f"{M3}/scorers/register", {"experiment_id": "0", "name": "a"}, "", "INVALID_PARAMETER_VALUE"),
        ("GET", f"{M3}/scorers/online-configs", None, "", "INVALID_PARAMETER_VALUE"),
    ]
    for method, path, body, query, code in cases:
        status, answer = invoke(method, path, body, query)
        assert (status, answer.get("error_code")) == (404 if code == "RESOURCE_DOES_NOT_EXIST" else 400, code), (path, body, query, answer)
    status, answer = invoke("GET", f"{M3}/scorers/online-configs", None, "scorer_ids=a&scorer_ids=b")
    assert (status, answer) == (200, {"configs": []})


def test_tags_past_the_item_limit_are_refused(server: str) -> None:
    dataset_id = _create(server)
    big = {f"k{i}": "v" * 5000 for i in range(50)}
    assert invoke("PATCH", f"{M3}/datasets/{dataset_id}/tags", {"tags": json.dumps(big)})[0] == 200
    status, body = invoke("PATCH", f"{M3}/datasets/{dataset_id}/tags", {"tags": json.dumps({f"x{i}": "v" * 5000 for i in range(40)})})
    assert (status, body["error_code"]) == (400, "INVALID_PARAMETER_VALUE")
    _, fetched = invoke("GET", f"{M3}/datasets/{dataset_id}")
    assert json.loads(fetched["dataset"]["tags"]) == big


def test_search_by_experiment_reads_links_then_datasets(server: str) -> None:
    status, body = invoke("POST", "/api/2.0/mlflow/experiments/create", {"name": unique("evalsearch")})
    experiment_id = body["experiment_id"]
    names = [unique("ds") for _ in range(3)]
    for name in names:
        assert invoke("POST", f"{M3}/datasets/create", {"name": name, "experiment_ids": [experiment_id]})[0] == 200
    table.STATS.reset()
    status, body = invoke("GET", f"{M3}/datasets/search", query=f"experiment_ids={experiment_id}&max_results=2&order_by=name")
    assert status == 200
    assert [d["name"] for d in body["datasets"]] == sorted(names)[:2] and body["next_page_token"]
    assert table.STATS.snapshot()["requests"] == {"Query": 1, "BatchGetItem": 1}
    status, body = invoke(
        "GET",
        f"{M3}/datasets/search",
        query=f"experiment_ids={experiment_id}&max_results=2&order_by=name&page_token={urllib.parse.quote(body['next_page_token'])}",
    )
    assert [d["name"] for d in body["datasets"]] == sorted(names)[2:] and "next_page_token" not in body


def test_concurrent_merges_into_a_large_record_stay_readable(server: str) -> None:
    dataset_id = _create(server)
    blob = "y" * 300_000  # the document goes to parts

    def merge(i: int) -> None:
        records = [{"inputs": {"q": "large"}, "outputs": {"blob": blob, "writer": i}, "expectations": {f"e{i}": i}}]
        response = requests.post(f"{server}{M3}/datasets/{dataset_id}/records", json={"records": json.dumps(records)}, timeout=120)
        assert response.status_code == 200, response.text

    with ThreadPoolExecutor(max_workers=4) as pool:
        list(pool.map(merge, range(6)))
    (record,) = _records(dataset_id)
    assert record["expectations"] == {f"e{i}": i for i in range(6)}
    assert record["outputs"]["blob"] == blob and record["outputs"]["writer"] in range(6)
    # Only the committed version's parts remain next to the record.
    items = table.query(f"EDS#{dataset_id}")
    parts = [i for i in items if i["entity_type"] == "evaluation_dataset_record_part"]
    (item,) = [i for i in items if i["entity_type"] == "evaluation_dataset_record"]
    assert len(parts) == item["parts"] and all(item["parts_id"] in p["sk"] for p in parts)
