"""Routes the stock web UI calls on every page, and small answers MLflow's REST tests check: each compared with
MLflow's own server (its Flask app on sqlite) or with the installed mlflow's own code."""

from __future__ import annotations

import asyncio
import http.server
import json
import threading
from typing import Any

import pytest
import requests

from tests.conftest import unique
from tests.mlflow_reference import deployments_reference_server, reference_server

pytestmark = pytest.mark.e2e


def _both(server: str, method: str, path: str, **kwargs: Any) -> list[tuple[int, Any]]:
    out = []
    for base in (server, reference_server().url):
        response = requests.request(method, f"{base}{path}", timeout=30, **kwargs)
        out.append((response.status_code, response.json()))
    return out


def test_gateway_proxy_answers_an_empty_gateway_as_mlflow(server: str) -> None:
    # The runs table probes GET .../gateway-proxy?gateway_path=api/2.0/endpoints/ (no deployments target here).
    path = "/ajax-api/2.0/mlflow/gateway-proxy"
    for method, kwargs in (("GET", {"params": {"gateway_path": "api/2.0/endpoints/"}}), ("GET", {}), ("POST", {"json": {}})):
        ours, theirs = _both(server, method, path, **kwargs)
        assert ours == theirs == (200, {"endpoints": []})


class _DeploymentsServer(http.server.BaseHTTPRequestHandler):
    """An MLflow deployments server's two routes the UI reaches through gateway-proxy, and a failing endpoint."""

    def _answer(self, status: int, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        if self.path.rstrip("/") == "/api/2.0/endpoints":
            self._answer(200, json.dumps({"endpoints": [{"name": "chat", "endpoint_type": "llm/v1/chat"}]}).encode())
        else:
            self._answer(404, b'{"detail": "Not Found"}')

    def do_POST(self) -> None:
        sent = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"null")
        if self.path == "/gateway/chat/invocations":
            self._answer(200, json.dumps({"choices": [{"message": {"content": "hi"}}], "received": sent}).encode())
        else:
            self._answer(503, b"endpoint unavailable")

    def log_message(self, *args: Any) -> None:
        pass


def test_gateway_proxy_forwards_to_a_deployments_target_as_mlflow(server: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """With ``MLFLOW_DEPLOYMENTS_TARGET`` (a setting here), gateway-proxy lists and invokes the target's endpoints,
    refuses other paths and relays the target's failures, as MLflow's server does (MLflow's
    test_gateway_proxy_handler_rejects_invalid_requests)."""
    target = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _DeploymentsServer)
    threading.Thread(target=target.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{target.server_port}"
        monkeypatch.setenv("MLFLOW_DEPLOYMENTS_TARGET", url)
        reference = deployments_reference_server(url).url
        path = "/ajax-api/2.0/mlflow/gateway-proxy"
        for method, kwargs in (
            ("GET", {"params": {"gateway_path": "api/2.0/endpoints/"}}),
            ("GET", {"params": {"gateway_path": "api/2.0/other"}}),
            ("GET", {}),
            ("POST", {"json": {}}),
            ("POST", {"json": {"gateway_path": "foo/bar"}}),
            ("POST", {"json": {"gateway_path": "gateway/chat/invocations", "json_data": {"messages": [{"role": "user", "content": "x"}]}}}),
            ("POST", {"json": {"gateway_path": "gateway/down/invocations", "json_data": {}}}),
            # Characters a URL cannot hold are encoded (the target answers the path it does not serve), dot
            # segments resolved (the target's own chat endpoint answers), as MLflow's requests call does.
            ("POST", {"json": {"gateway_path": "gateway/a b/invocations", "json_data": {}}}),
            ("POST", {"json": {"gateway_path": "gateway/a\r\nX-Injected: 1/invocations", "json_data": {}}}),
            ("POST", {"json": {"gateway_path": "gateway/../gateway/chat/invocations", "json_data": {"messages": []}}}),
        ):
            answers = [requests.request(method, f"{base}{path}", timeout=30, **kwargs) for base in (server, reference)]
            ours, theirs = ((a.status_code, a.json()) for a in answers)
            assert ours == theirs, (method, kwargs)
        listed = requests.get(f"{server}{path}", params={"gateway_path": "api/2.0/endpoints/"}, timeout=30).json()
        assert listed == {"endpoints": [{"name": "chat", "endpoint_type": "llm/v1/chat"}]}
        down = requests.post(f"{server}{path}", json={"gateway_path": "gateway/down/invocations", "json_data": {}}, timeout=30)
        assert down.status_code == 500 and down.json()["error_code"] == "INTERNAL_ERROR"
        assert "Deployments proxy request failed with error code 503. Error message: endpoint unavailable" in down.json()["message"]
        invoked = requests.post(
            f"{server}{path}", json={"gateway_path": "gateway/chat/invocations", "json_data": {"messages": []}}, timeout=30
        ).json()
        assert invoked["received"] == {"messages": []}
    finally:
        target.shutdown()


def test_an_unreachable_deployments_target_is_not_named(server: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The target is the operator's configuration: a failed connection to it answers 500 (as MLflow's server) and
    says neither its host nor its port."""
    from local.engine import free_port

    port = free_port()  # nothing listens there
    url = f"http://127.0.0.1:{port}"
    monkeypatch.setenv("MLFLOW_DEPLOYMENTS_TARGET", url)
    reference = deployments_reference_server(url).url
    body = {"gateway_path": "gateway/chat/invocations", "json_data": {}}
    ours, theirs = (requests.post(f"{base}/ajax-api/2.0/mlflow/gateway-proxy", json=body, timeout=30) for base in (server, reference))
    assert ours.status_code == theirs.status_code == 500
    assert ours.json()["error_code"] == "INTERNAL_ERROR"
    for answer in (ours, theirs):
        assert str(port) not in answer.text and "127.0.0.1" not in answer.text, answer.text


def test_assistant_answers_as_mlflow_with_no_provider(server: str) -> None:
    from mlflow.assistant.providers import list_providers
    from mlflow.server.assistant import api

    providers = requests.get(f"{server}/ajax-api/3.0/mlflow/assistant/providers", timeout=30).json()
    stock = asyncio.run(api.get_providers()).model_dump()
    static = ("name", "display_name", "description", "requires_api_key", "has_api_key", "allows_remote_access", "client_tool_delivery")
    assert [{k: p[k] for k in static} for p in providers["providers"]] == [{k: p[k] for k in static} for p in stock["providers"]]
    assert [p["name"] for p in providers["providers"]] == [p.name for p in list_providers()]
    # Nothing can run an agent next to a Lambda function: none available, none selected, nothing resolved.
    assert {(p["available"], p["selected"], tuple(p["model_options"])) for p in providers["providers"]} == {(False, False, ())}
    assert providers["resolved"] is None and providers["gateway_vendor_options"] == stock["gateway_vendor_options"]
    config = requests.get(f"{server}/ajax-api/3.0/mlflow/assistant/config", timeout=30)
    assert (config.status_code, config.json()) == (200, {"providers": {}, "projects": {}, "remote_access_allowed": False})


def test_artifact_paths_are_validated_before_the_lookup_as_mlflow(server: str) -> None:
    # MLflow's test_path_validation: "../path" is a 400 before the run or model version is looked up, and the
    # double slash of "//model-versions/get-artifact" is merged (werkzeug answers 308 to the route).
    import mlflow

    answers = []
    for base in (server, reference_server().url):
        client = mlflow.MlflowClient(base)
        run_id = client.create_run(client.create_experiment(unique("paths"))).info.run_id
        got = []
        for path, params in (
            ("/api/2.0/mlflow/artifacts/list", {"run_id": run_id, "path": "../path"}),
            ("/get-artifact", {"run_id": run_id, "path": "../path"}),
            ("//model-versions/get-artifact", {"name": "model", "version": 1, "path": "../path"}),
            ("/get-artifact", {"run_id": "no-such-run", "path": "../path"}),
        ):
            response = requests.get(f"{base}{path}", params=params, timeout=30)
            got.append((response.status_code, response.json()))
        answers.append(got)
    assert answers[0] == answers[1]
    assert answers[0][0] == (
        400,
        {"error_code": "INVALID_PARAMETER_VALUE", "message": "Invalid path", "sqlstate": "KAM00", "error_class": "INVALID_PARAMETER_VALUE"},
    )


@pytest.mark.parametrize("method", ["GET", "POST"])
def test_dataset_search_without_max_results_as_mlflow(server: str, method: str) -> None:
    kwargs: dict[str, Any] = {"json": {}} if method == "POST" else {}
    ours, theirs = _both(server, method, "/api/3.0/mlflow/datasets/search", **kwargs)
    assert ours[0] == theirs[0] == 200
    zero: dict[str, Any] = {"json": {"max_results": 0}} if method == "POST" else {"params": {"max_results": 0}}
    ours, theirs = _both(server, method, "/api/3.0/mlflow/datasets/search", **zero)
    assert ours[0] == theirs[0] == 400
    assert (ours[1]["error_code"], ours[1]["message"]) == (theirs[1]["error_code"], theirs[1]["message"])


def test_search_datasets_shape_has_context(server: str) -> None:
    import mlflow
    from mlflow.entities import Dataset, DatasetInput, InputTag

    answers = []
    for base in (server, reference_server().url):
        client = mlflow.MlflowClient(base)
        experiment_id = client.create_experiment(unique("dsctx"))
        run_id = client.create_run(experiment_id).info.run_id
        client.log_inputs(run_id, [DatasetInput(Dataset("d", "x1", "local", "{}"), [InputTag("mlflow.data.context", "train")])])
        body = requests.post(
            f"{base}/ajax-api/2.0/mlflow/experiments/search-datasets", json={"experiment_ids": [experiment_id]}, timeout=30
        ).json()
        answers.append(json.dumps([{k: v for k, v in s.items() if k != "experiment_id"} for s in body["dataset_summaries"]]))
    assert answers[0] == answers[1] == json.dumps([{"name": "d", "digest": "x1", "context": "train"}])
