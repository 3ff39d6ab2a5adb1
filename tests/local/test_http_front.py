"""What API Gateway does around the function, emulated by the local runtime: malformed requests, HEAD, and
Lambda's 6 MB payload caps."""

from __future__ import annotations

import http.client
import json
from typing import Any
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


def test_a_response_over_6_mb_is_refused_like_lambda_does(local_runtime: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from local.runtime import LocalRuntime

    big = {"statusCode": 200, "headers": {"content-type": "application/json"}, "body": "x" * (6 * 1024 * 1024)}
    original = LocalRuntime.handler_for

    def handler_for(self: LocalRuntime, feature: str) -> Any:
        # A function whose answer is too large (e.g. a search page of huge runs): Lambda drops it.
        return (lambda event, context: big) if feature == "meta" else original(self, feature)

    monkeypatch.setattr(LocalRuntime, "handler_for", handler_for)
    response = requests.get(f"{local_runtime.url}/version", timeout=30)
    assert (response.status_code, response.json()) == (500, {"message": "Internal Server Error"})


def test_a_request_over_6_mb_never_reaches_the_function(server: str) -> None:
    response = requests.post(f"{server}/api/2.0/mlflow/experiments/create", json={"name": "x" * (6 * 1024 * 1024)}, timeout=30)
    assert (response.status_code, response.json()) == (413, {"message": "Request Entity Too Large"})
