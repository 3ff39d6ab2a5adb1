"""The streaming function started as the Lambda Web Adapter starts it: the runtime's staged code asset, the
adapter's bootstrap line (``exec "$LAMBDA_TASK_ROOT/$_HANDLER"``, the function's ``run.sh``) with the variables
the stack sets, the adapter's readiness check, then function URL requests relayed to the server: a chat
completion streamed chunk by chunk from the local mock provider, its usage trace recorded by the traces function
(invoked through Lambda's Invoke API, as deployed), and the API's answers for the rest."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import requests

import infra
from infra import gateway_catalog
from infra.constructs import gateway_stream
from tests.conftest import unique
from tests.gateway_runtime.test_runtime_e2e import LOOSE_API_BASE, _endpoint, _traces
from tools.mock_llm import MockLLM
from tools.server_process import free_port, stop_process

pytestmark = pytest.mark.xdist_group("gateway_runtime")

# The layer's /opt/bootstrap (awslabs/aws-lambda-web-adapter, layer/bootstrap), run by Lambda as the exec wrapper.
ADAPTER_BOOTSTRAP = 'exec -- "${LAMBDA_TASK_ROOT}/${_HANDLER}"'


@pytest.fixture(scope="module")
def mock() -> Iterator[MockLLM]:
    server = MockLLM().start()
    yield server
    server.stop()


TRACES_FUNCTION_NAME = "mlflow-serverless-traces"


@pytest.fixture(scope="module")
def lambda_invoke(local_runtime: Any) -> Iterator[str]:
    """Lambda's Invoke API for the stack's traces function (the stream function's usage traces): the event goes to
    the session runtime's traces handler, as Lambda would run it; an ``Event`` invocation is answered 202 at once."""

    class Invoke(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            assert self.path == f"/2015-03-31/functions/{TRACES_FUNCTION_NAME}/invocations", self.path
            event = json.loads(self.rfile.read(int(self.headers["content-length"])))
            wait = self.headers.get("x-amz-invocation-type", "RequestResponse") != "Event"
            answer = local_runtime.invoke_function("traces", event, wait)
            payload = json.dumps(answer).encode() if wait else b""
            self.send_response(200 if wait else 202)
            self.send_header("content-length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    lambda_api = ThreadingHTTPServer(("127.0.0.1", 0), Invoke)
    threading.Thread(target=lambda_api.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{lambda_api.server_port}"
    lambda_api.shutdown()
    lambda_api.server_close()


@pytest.fixture(scope="module")
def stream_url(server: str, lambda_invoke: str) -> Iterator[str]:
    """The stream server, up once the adapter's readiness check passes; on the session runtime's table and key."""
    port = free_port()
    env = {
        **os.environ,
        **LOOSE_API_BASE,
        "LAMBDA_TASK_ROOT": str(gateway_catalog.staged_runtime()),
        "_HANDLER": gateway_stream.HANDLER,
        "AWS_LAMBDA_EXEC_WRAPPER": "/opt/bootstrap",
        "AWS_LWA_INVOKE_MODE": "response_stream",
        # The stack's port is 8080 (checked against stream_server by tests/infra): a free one here.
        "AWS_LWA_PORT": str(port),
        "AWS_LWA_READINESS_CHECK_PATH": gateway_stream.READINESS_PATH,
        # The runtime's `python` (here this venv's) and the shared layer (deployed: /opt/python, added by run.sh).
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "PYTHONPATH": str(infra.LAYER_PYTHON_DIR),
        # Set by the stack (lambda:InvokeFunction on that function only); Lambda's API here is the stand-in above.
        "TRACES_FUNCTION_NAME": TRACES_FUNCTION_NAME,
        "AWS_ENDPOINT_URL_LAMBDA": lambda_invoke,
    }
    process = subprocess.Popen(["bash", "-c", ADAPTER_BOOTSTRAP], env=env, cwd="/", stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            assert process.poll() is None, process.stderr.read().decode(errors="replace")[-3000:] if process.stderr else ""
            try:
                readiness = requests.get(f"{url}{gateway_stream.READINESS_PATH}", timeout=5)
                break
            except requests.ConnectionError:
                assert time.monotonic() < deadline, "the stream server never listened"
                time.sleep(0.2)
        assert (readiness.status_code, readiness.text) == (200, "OK")
        yield url
    finally:
        stop_process(process)


def test_streamed_chat_completion_arrives_in_pieces(
    server: str, local_runtime: Any, stream_url: str, mock: MockLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in LOOSE_API_BASE.items():
        monkeypatch.setenv(name, value)  # the endpoint is configured through the API, in this process
    name = unique("fnurl")
    endpoint = _endpoint(server, mock.url, name, "openai", "gpt-4o-mini")
    prompt = "PACE250 a story in a few words"
    body = {"model": name, "messages": [{"role": "user", "content": prompt}], "stream": True}
    started = time.monotonic()
    arrivals = []
    with requests.post(f"{stream_url}/gateway/mlflow/v1/chat/completions", json=body, stream=True, timeout=60) as response:
        assert response.status_code == 200 and response.headers["content-type"].startswith("text/event-stream")
        assert response.headers["transfer-encoding"] == "chunked"
        for line in response.iter_lines():
            if line.startswith(b"data:") and line != b"data: [DONE]":
                arrivals.append((time.monotonic() - started, json.loads(line[5:])))
    assert (
        "".join(chunk["choices"][0]["delta"].get("content") or "" for _, chunk in arrivals if chunk["choices"]) == f"mock reply: {prompt}"
    )
    # The first words are out while the provider still writes the rest (0.25 s between its chunks).
    assert arrivals[-1][0] - arrivals[0][0] > 1.0
    # Usage tracking (on by default): the stream function's trace, recorded by the traces function.
    assert not [chunk for _, chunk in arrivals if "error" in chunk]
    (trace,) = _traces(server, endpoint["experiment_id"], 1)
    assert json.loads(trace.info.trace_metadata["mlflow.trace.tokenUsage"])["total_tokens"] == arrivals[-1][1]["usage"]["total_tokens"]

    # A whole answer, and the models list, as the API gives them.
    whole = {"messages": [{"role": "user", "content": "hello"}]}
    direct = requests.post(f"{stream_url}/gateway/{name}/mlflow/invocations", json=whole, timeout=60)
    through_api = requests.post(f"{server}/gateway/{name}/mlflow/invocations", json=whole, timeout=60)
    assert direct.status_code == through_api.status_code == 200
    assert direct.json()["choices"] == through_api.json()["choices"] and direct.json()["usage"] == through_api.json()["usage"]
    models = requests.get(f"{stream_url}/gateway/mlflow/v1/models", timeout=30)
    assert models.status_code == 200 and name in {model["id"] for model in models.json()["data"]}
    missing = requests.post(f"{stream_url}/gateway/no-such-endpoint/mlflow/invocations", json=whole, timeout=30)
    missing_api = requests.post(f"{server}/gateway/no-such-endpoint/mlflow/invocations", json=whole, timeout=30)
    assert missing.status_code == missing_api.status_code == 404 and missing.json() == missing_api.json()
    # Both whole answers are traced too (recorded asynchronously: wait, so none lands after the session's runtime).
    assert len(_traces(server, endpoint["experiment_id"], 3)) == 3
    local_runtime.wait_for_async_invocations()


def test_only_the_apis_runtime_routes_are_served(server: str, stream_url: str) -> None:
    """The API routes GET and POST /gateway/{path+} to the runtime; anything else is HTTP API's 404."""
    for method, path in (("GET", "/"), ("POST", "/api/2.0/mlflow/experiments/create"), ("DELETE", "/gateway/x/mlflow/invocations")):
        response = requests.request(method, f"{stream_url}{path}", timeout=30)
        assert (response.status_code, response.json()) == (404, {"message": "Not Found"}), (method, path)
    # Under /gateway, the runtime's own answers (a GET on an invocation route: its 405).
    response = requests.get(f"{stream_url}/gateway/x/mlflow/invocations", timeout=30)
    through_api = requests.get(f"{server}/gateway/x/mlflow/invocations", timeout=30)
    assert response.status_code == through_api.status_code == 405 and response.json() == through_api.json()
