"""What API Gateway does around the function, emulated by the local runtime: malformed requests, HEAD, and
Lambda's 6 MB payload caps."""

from __future__ import annotations

import http.client
import json
import re
import uuid
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import requests

pytestmark = pytest.mark.e2e


def _raw(server: str, request: bytes) -> tuple[int, bytes]:
    parts = urlsplit(server)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
    connection.connect()
    assert connection.sock is not None
    connection.sock.sendall(request)
    response = http.client.HTTPResponse(connection.sock)
    response.begin()
    body = response.read()
    connection.close()
    return response.status, body


def test_negative_content_length_is_a_bad_request_not_a_hang(server: str) -> None:
    status, body = _raw(server, b"POST /api/2.0/mlflow/experiments/create HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n")
    assert status == 400 and json.loads(body) == {"message": "Bad Request"}
    status, _ = _raw(server, b"POST /api/2.0/mlflow/experiments/create HTTP/1.1\r\nHost: x\r\nContent-Length: ten\r\n\r\n")
    assert status == 400


def test_head_health_answers_like_get_without_a_body(server: str) -> None:
    head = requests.head(f"{server}/health", timeout=10)
    get = requests.get(f"{server}/health", timeout=10)
    assert head.status_code == get.status_code == 200
    assert head.content == b"" and get.text == "OK"
    assert head.headers["content-length"] == str(len(get.content))


def test_a_response_over_6_mb_is_refused_like_lambda_does(server: str) -> None:
    # A run whose params alone exceed 6 MB (1,100 params of MLflow's maximum 6,000 characters): its get_run
    # answer is too large for Lambda, which drops it; API Gateway then answers 500 on its own.
    api = f"{server}/api/2.0/mlflow"
    experiment_id = requests.post(f"{api}/experiments/create", json={"name": f"big-{uuid.uuid4().hex[:8]}"}, timeout=30).json()[
        "experiment_id"
    ]
    run_id = requests.post(f"{api}/runs/create", json={"experiment_id": experiment_id}, timeout=30).json()["run"]["info"]["run_id"]
    for batch in range(11):
        params = [{"key": f"p{batch}-{i}", "value": "v" * 6000} for i in range(100)]
        requests.post(f"{api}/runs/log-batch", json={"run_id": run_id, "params": params}, timeout=60).raise_for_status()
    response = requests.get(f"{api}/runs/get", params={"run_id": run_id}, timeout=60)
    assert (response.status_code, response.json()) == (500, {"message": "Internal Server Error"})


def test_a_request_over_6_mb_never_reaches_the_function(server: str) -> None:
    response = requests.post(f"{server}/api/2.0/mlflow/experiments/create", json={"name": "x" * (6 * 1024 * 1024)}, timeout=30)
    assert (response.status_code, response.json()) == (413, {"message": "Request Entity Too Large"})


def test_the_terminal_shows_one_access_line_per_request_and_no_metric_blobs(server: str, tmp_path: Path) -> None:
    """``make serve``'s output: one line per request as ``mlflow server`` prints it (client, request line,
    status) plus the time taken, and none of the indexer's CloudWatch EMF lines (its metrics are off locally;
    Powertools used to print them anyway once 100 values had piled up)."""
    import mlflow

    from tests.conftest import runtime_process, unique

    output = tmp_path / "serve.log"
    with runtime_process({"TABLE_NAME": unique("log"), "BUCKET_NAME": unique("log")}, output=output) as url:
        client = mlflow.MlflowClient(url)
        run_id = client.create_run(client.create_experiment(unique("log"))).info.run_id
        for i in range(105):  # more than 100 indexer invocations, each with its metrics
            client.set_tag(run_id, "k", str(i))
        assert requests.get(f"{url}/api/2.0/mlflow/experiments/get?experiment_id=nope", timeout=10).status_code in (400, 404)
    lines = output.read_text().splitlines()
    access = [line for line in lines if re.search(r' - "(GET|POST) /\S* HTTP/1.1" \d{3} \d+ ms$', line)]
    tags = [line for line in access if '"POST /api/2.0/mlflow/runs/set-tag HTTP/1.1" 200 ' in line]
    assert len(tags) == 105
    assert re.match(r"^\d{4}/\d\d/\d\d \d\d:\d\d:\d\d INFO: +127\.0\.0\.1:\d+ - ", tags[0])
    assert any('"GET /api/2.0/mlflow/experiments/get?experiment_id=nope HTTP/1.1" 40' in line for line in access)
    assert not [line for line in lines if '"_aws"' in line or "CloudWatchMetrics" in line]
