"""What API Gateway does around the function, emulated by the local runtime: malformed requests, HEAD, methods
no route has, and Lambda's 6 MB payload caps. Every refusal is MLflow's JSON error (``error_code``, ``message``),
never http.server's HTML page."""

from __future__ import annotations

import http.client
import json
import re
import uuid
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import requests

from local.events import LambdaContext, api_gateway_event
from tests.mlflow_reference import reference_server

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


def _mlflow_error(body: bytes) -> str:
    """The error code of an answer in MLflow's JSON error shape, classification fields included as MLflow's
    MlflowException.serialize_as_json gives them (fails on anything else, e.g. an HTML page)."""
    answer = json.loads(body)
    assert list(answer) == ["error_code", "message", "sqlstate", "error_class"] and answer["message"], answer
    return answer["error_code"]


def test_negative_content_length_is_a_bad_request_not_a_hang(server: str) -> None:
    status, body = _raw(server, b"POST /api/2.0/mlflow/experiments/create HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n")
    assert status == 400 and _mlflow_error(body) == "BAD_REQUEST"
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
    # The function answers this itself (deployed too: API Gateway would otherwise answer a bare 500).
    assert response.status_code == 500 and _mlflow_error(response.content) == "INTERNAL_ERROR"
    assert "larger than the 6 MB" in response.json()["message"]


def test_a_request_over_6_mb_never_reaches_the_function(server: str) -> None:
    response = requests.post(f"{server}/api/2.0/mlflow/experiments/create", json={"name": "x" * (6 * 1024 * 1024)}, timeout=30)
    assert response.status_code == 413 and _mlflow_error(response.content) == "BAD_REQUEST"


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


def test_a_request_line_over_64_kb_is_414_in_mlflow_s_shape(server: str) -> None:
    status, body = _raw(server, b"GET /api/2.0/mlflow/experiments/get?experiment_id=" + b"1" * 70_000 + b" HTTP/1.1\r\nHost: x\r\n\r\n")
    assert status == 414 and _mlflow_error(body) == "BAD_REQUEST"
    status, body = _raw(server, b"GET / HTTP/1.1\r\n" + b"".join(b"X-%d: y\r\n" % i for i in range(120)) + b"\r\n")
    assert status == 431 and _mlflow_error(body) == "BAD_REQUEST"
    status, body = _raw(server, b"GET /health HTTP/9.9\r\nHost: x\r\n\r\n")
    assert status == 505 and _mlflow_error(body) == "BAD_REQUEST"


@pytest.mark.parametrize(
    ("method", "path", "allowed"),
    [
        ("GET", "/api/2.0/mlflow/experiments/create", "POST, OPTIONS"),
        ("PUT", "/api/2.0/mlflow/experiments/create", "POST, OPTIONS"),
        ("BREW", "/api/2.0/mlflow/experiments/create", "POST, OPTIONS"),
        ("POST", "/api/2.0/mlflow/runs/get", "GET, OPTIONS"),
        ("PUT", "/api/2.0/mlflow/logged-models/m-123", "DELETE, GET, PATCH, OPTIONS"),
        # An /ajax-api/ path reaches its group's function through a greedy route: same answer there.
        ("DELETE", "/ajax-api/2.0/mlflow/experiments/search", "GET, POST, OPTIONS"),
    ],
)
def test_a_known_path_with_another_method_is_405_as_in_mlflow(server: str, method: str, path: str, allowed: str) -> None:
    """MLflow's server answers 405 (werkzeug's MethodNotAllowed) with the path's methods; here in MLflow's JSON
    shape, whichever function answers (the meta function behind ``$default``, or a greedy group's own)."""
    theirs = requests.request(method, reference_server().url + path, timeout=30)
    ours = requests.request(method, server + path, timeout=30)
    assert ours.status_code == theirs.status_code == 405
    assert ours.headers["allow"] == allowed
    assert _mlflow_error(ours.content) == "ENDPOINT_NOT_FOUND" and ours.json()["message"].startswith(
        f"The method is not allowed for the requested URL: {method} "
    )


def test_head_of_a_get_route_is_405_where_no_route_takes_it(server: str) -> None:
    # MLflow's Flask app answers HEAD as GET without a body. A HEAD reaches the meta function (``$default``),
    # deployed too, which cannot run the GET route's function: it says which methods the path takes.
    response = requests.head(f"{server}/api/2.0/mlflow/experiments/get", timeout=30)
    assert response.status_code == 405 and response.headers["allow"] == "GET, OPTIONS" and response.content == b""


def test_options_lists_a_path_s_methods_and_unknown_methods_on_unknown_paths_are_404(server: str) -> None:
    theirs = requests.options(reference_server().url + "/api/2.0/mlflow/experiments/create", timeout=30)
    ours = requests.options(server + "/api/2.0/mlflow/experiments/create", timeout=30)
    assert ours.status_code == theirs.status_code == 204 and ours.headers["allow"] == "POST, OPTIONS"
    for method in ("BREW", "GET", "OPTIONS"):
        response = requests.request(method, server + "/api/2.0/mlflow/no-such-route", timeout=30)
        assert response.status_code == 404 and _mlflow_error(response.content) == "ENDPOINT_NOT_FOUND", method


def test_the_deployed_default_route_answers_405_like_the_local_front() -> None:
    """API Gateway sends a method no route has to ``$default``: the meta function answers it, the same way."""
    from meta.handler import lambda_handler

    event = api_gateway_event("GET", "/api/2.0/mlflow/runs/create", "", {}, b"", "$default", {}, "localhost")
    response = lambda_handler(event, LambdaContext("meta"))
    assert response["statusCode"] == 405 and response["headers"]["Allow"] == "POST, OPTIONS"
    assert _mlflow_error(response["body"].encode()) == "ENDPOINT_NOT_FOUND"
