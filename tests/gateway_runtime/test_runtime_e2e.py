"""The AI gateway runtime end to end: the same gateway configuration on this server and on ``mlflow server``
(its FastAPI gateway routes, sqlite), both pointed at the local mock provider (``tools/mock_llm.py``; no call
leaves the machine), the same invocations on both, answers compared; usage traces read back with the real
client; a budget that stops calls; streaming that arrives in pieces; Bedrock through a stubbed endpoint."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from typing import Any

import pytest
import requests

from tests.conftest import runtime_process, unique
from tests.gateway_runtime.trace_shape import differences, normalized, trace_shape
from tests.sqlite_template import migrated_sqlite
from tests.webhooks.conftest import LOCAL_TARGETS, Receiver, serve_receiver
from tools.mock_llm import MockLLM
from tools.server_process import free_port

pytestmark = pytest.mark.xdist_group("gateway_runtime")

GW = "/api/3.0/mlflow/gateway"
# mlflow server refuses http:// and loopback api_base values unless told otherwise; so does this server.
LOOSE_API_BASE = {"MLFLOW_GATEWAY_API_BASE_ALLOWED_SCHEMES": "http,https", "MLFLOW_GATEWAY_API_BASE_ALLOW_PRIVATE_IPS": "true"}


@pytest.fixture(scope="module")
def mock() -> Iterator[MockLLM]:
    server = MockLLM().start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def loose_api_base() -> Iterator[None]:
    with pytest.MonkeyPatch.context() as patch:
        for name, value in LOOSE_API_BASE.items():
            patch.setenv(name, value)
        yield


@pytest.fixture(scope="module")
def reference(loose_api_base: None) -> Iterator[str]:
    """``mlflow server`` (uvicorn, FastAPI gateway routes) on a fresh sqlite store."""
    yield from gateway_reference()


def gateway_reference(own_gateway_uri: bool = False) -> Iterator[str]:
    """Start ``mlflow server``; with ``own_gateway_uri`` its MLFLOW_GATEWAY_URI is its own URL (what its in-process
    judges, e.g. a guardrail's, need to call its gateway: its tracking URI there is the sqlite store)."""
    directory = tempfile.mkdtemp(prefix="mlflow-gateway-reference-")
    port = free_port()
    env = {**os.environ, **LOOSE_API_BASE, **LOCAL_TARGETS, "MLFLOW_CRYPTO_KEK_PASSPHRASE": "reference-only-passphrase"}
    for name in ("MLFLOW_TRACKING_URI", "MLFLOW_REGISTRY_URI"):
        env.pop(name, None)
    if own_gateway_uri:
        env["MLFLOW_GATEWAY_URI"] = f"http://127.0.0.1:{port}"
    command = [
        sys.executable,
        "-m",
        "mlflow",
        "server",
        "--backend-store-uri",
        migrated_sqlite(f"{directory}/mlflow.db"),
        "--host",
        "127.0.0.1",
    ]
    process = subprocess.Popen(
        [*command, "--port", str(port), "--workers", "1"], cwd=directory, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 240
    while True:
        try:
            if requests.get(f"{url}/health", timeout=5).status_code == 200:
                break
        except requests.RequestException:
            pass
        if time.monotonic() > deadline or process.poll() is not None:
            process.kill()
            raise RuntimeError("mlflow server did not become healthy")
        time.sleep(1)
    yield url
    process.terminate()
    process.wait(timeout=30)


def _post(base: str, path: str, body: dict[str, Any], auth: tuple[str, str] | None = None) -> dict[str, Any]:
    response = requests.post(f"{base}{GW}{path}", json=body, auth=auth, timeout=60)
    assert response.status_code == 200, response.text
    return response.json()


def _endpoint(
    base: str, mock_url: str, name: str, provider: str, model: str, auth: tuple[str, str] | None = None, **endpoint: Any
) -> dict[str, Any]:
    """A gateway endpoint on the mock provider: its secret, model definition and endpoint, created as ``auth``."""
    secret = _post(
        base,
        "/secrets/create",
        {
            "secret_name": name,
            "secret_value": {"api_key": "sk-test-0123456789"},
            "provider": provider,
            "auth_config": {"api_base": f"{mock_url}/v1"},
        },
        auth,
    )
    definition = _post(
        base,
        "/model-definitions/create",
        {"name": name, "secret_id": secret["secret"]["secret_id"], "provider": provider, "model_name": model},
        auth,
    )
    config = {"model_definition_id": definition["model_definition"]["model_definition_id"], "linkage_type": "PRIMARY", "weight": 1.0}
    return _post(base, "/endpoints/create", {"name": name, "model_configs": [config], **endpoint}, auth)["endpoint"]


def _calls(openai_name: str, claude_name: str) -> list[tuple[str, str, dict[str, Any] | None]]:
    messages = [{"role": "user", "content": "hello there"}]
    return [
        ("POST", f"/gateway/{openai_name}/mlflow/invocations", {"messages": messages}),
        ("POST", f"/gateway/{openai_name}/mlflow/invocations", {"messages": messages, "stream": True}),
        ("POST", f"/gateway/{openai_name}/mlflow/invocations", {"input": ["a b", "c"]}),
        ("POST", f"/gateway/{openai_name}/mlflow/invocations", {"foo": 1}),
        ("POST", "/gateway/no-such-endpoint/mlflow/invocations", {"messages": messages}),
        ("POST", "/gateway/mlflow/v1/chat/completions", {"model": openai_name, "messages": messages}),
        ("POST", "/gateway/mlflow/v1/chat/completions", {"messages": messages}),
        ("POST", "/gateway/openai/v1/chat/completions", {"model": openai_name, "messages": messages}),
        ("POST", "/gateway/openai/v1/chat/completions", {"model": openai_name, "messages": messages, "stream": True}),
        ("POST", "/gateway/openai/v1/embeddings", {"model": openai_name, "input": "x y"}),
        ("POST", "/gateway/openai/v1/responses", {"model": openai_name, "input": "hi"}),
        ("POST", "/gateway/anthropic/v1/messages", {"model": claude_name, "messages": messages, "max_tokens": 50}),
        ("POST", "/gateway/anthropic/v1/messages", {"model": claude_name, "messages": messages, "max_tokens": 50, "stream": True}),
        ("POST", f"/gateway/{claude_name}/mlflow/invocations", {"messages": messages, "max_tokens": 50}),
        ("POST", f"/gateway/{claude_name}/mlflow/invocations", {"messages": messages, "max_tokens": 50, "stream": True}),
        ("POST", "/gateway/anthropic/v1/messages", {"model": openai_name, "messages": messages, "max_tokens": 5}),
        ("POST", f"/gateway/{openai_name}/mlflow/invocations", {"messages": [{"role": "user", "content": "FAIL429"}]}),
        ("POST", f"/gateway/{openai_name}/mlflow/invocations", {"messages": [{"role": "user", "content": "FAIL500"}]}),
        ("POST", "/gateway/openai/v1/chat/completions", {"model": openai_name, "messages": [{"role": "user", "content": "FAIL400"}]}),
        (
            "POST",
            "/gateway/anthropic/v1/messages",
            {"model": claude_name, "messages": [{"role": "user", "content": "FAIL529"}], "max_tokens": 5},
        ),
        ("POST", f"/gateway/proxy/{openai_name}/chat/completions", {"model": "gpt-4o-mini", "messages": messages}),
        ("POST", f"/gateway/proxy/{openai_name}/chat/completions", {"model": "gpt-4o-mini", "messages": messages, "stream": True}),
        ("POST", "/gateway/mlflow/v1/chat/completions", None),
    ]


def test_invocations_match_mlflow(server: str, reference: str, mock: MockLLM) -> None:
    suffix = unique("rt")
    for base in (server, reference):
        _endpoint(base, mock.url, f"oa-{suffix}", "openai", "gpt-4o-mini")
        _endpoint(base, mock.url, f"an-{suffix}", "anthropic", "claude-3-5-haiku-latest")
    for method, path, body in _calls(f"oa-{suffix}", f"an-{suffix}"):
        ours, theirs = (requests.request(method, f"{base}{path}", json=body, timeout=60) for base in (server, reference))
        assert (ours.status_code, ours.headers["content-type"]) == (theirs.status_code, theirs.headers["content-type"]), path
        assert normalized(ours.text) == normalized(theirs.text), (path, body)
    # The models list names the endpoints (those of other tests too: compare ours with our endpoint list).
    listed = requests.get(f"{server}/gateway/mlflow/v1/models", timeout=30).json()
    assert {f"oa-{suffix}", f"an-{suffix}"} <= {model["id"] for model in listed["data"]}
    assert listed["data"] == sorted(listed["data"], key=lambda model: model["id"])


def _traces(base: str, experiment_id: str, count: int, seconds: float = 60) -> list[Any]:
    """``count`` usage traces of the experiment, each whole: both servers export a call's spans and its trace info
    (whose metadata holds the token usage and cost) apart and asynchronously, after the answer, so a trace may be
    found before either has landed. Waits for that, not for a time; fails if it has not happened in ``seconds``."""
    import mlflow

    client = mlflow.MlflowClient(base)
    deadline = time.monotonic() + seconds
    while True:
        found = client.search_traces(locations=[experiment_id], max_results=100)
        if len(found) >= count and all(_complete(trace) for trace in found):
            return found
        assert time.monotonic() < deadline, f"{count} whole usage traces never landed: {[t.info.trace_metadata for t in found]}"
        time.sleep(0.5)


def _complete(trace: Any) -> bool:
    """The trace's info has landed (spans may arrive first: it then has no metadata yet) and all its spans."""
    stats = trace.info.trace_metadata.get("mlflow.trace.sizeStats")
    return stats is not None and len(trace.data.spans) >= json.loads(stats)["num_spans"]


def test_usage_traces_match_mlflow(server: str, reference: str, mock: MockLLM) -> None:
    name = unique("traced")
    endpoints = {base: _endpoint(base, mock.url, name, "openai", "gpt-4o-mini") for base in (server, reference)}
    for base in (server, reference):
        chat = requests.post(
            f"{base}/gateway/{name}/mlflow/invocations", json={"messages": [{"role": "user", "content": "count my tokens"}]}, timeout=60
        )
        assert chat.status_code == 200
    ours, theirs = (trace_shape(_traces(base, endpoints[base]["experiment_id"], 1)[0]) for base in (server, reference))
    assert differences(ours, theirs) == []
    assert json.loads(ours["metadata"]["mlflow.trace.tokenUsage"]) == {"input_tokens": 3, "output_tokens": 5, "total_tokens": 8}
    assert json.loads(ours["metadata"]["mlflow.trace.cost"])["total_cost"] > 0


def test_budget_stops_calls(server: str, mock: MockLLM, loose_api_base: None) -> None:
    name = unique("budget")
    endpoint = _endpoint(server, mock.url, name, "openai", "gpt-4o-mini")
    policy = {
        "budget_unit": "USD",
        "budget_amount": 0.000001,
        "duration": {"unit": "DAYS", "value": 1},
        "target_scope": "ENDPOINT",
        "target_value": endpoint["endpoint_id"],
        "budget_action": "REJECT",
    }
    created = _post(server, "/budgets/create", policy)["budget_policy"]
    call = {"messages": [{"role": "user", "content": "spend a little"}]}
    first = requests.post(f"{server}/gateway/{name}/mlflow/invocations", json=call, timeout=60)
    assert first.status_code == 200, first.text
    refused = requests.post(f"{server}/gateway/{name}/mlflow/invocations", json=call, timeout=60)
    assert refused.status_code == 429
    assert re.fullmatch(
        r"Budget limit exceeded\. Limit: \$0\.00 USD per 1 day\. Budget resets at \d{4}-\d\d-\d\dT00:00:00Z\. Request rejected\.",
        refused.json()["detail"],
    )
    windows = requests.get(f"{server}{GW}/budgets/windows", timeout=30).json()["windows"]
    mine = next(window for window in windows if window["budget_policy_id"] == created["budget_policy_id"])
    # 3 tokens in, 5 out ("mock reply: spend a little") at OpenAI's gpt-4o-mini prices: MLflow prices a call
    # by its provider's catalog entry.
    assert mine["current_spend"] == pytest.approx(3 * 0.15e-6 + 5 * 0.6e-6)
    # Removing the policy lets calls through again.
    assert (
        requests.delete(f"{server}{GW}/budgets/delete", json={"budget_policy_id": created["budget_policy_id"]}, timeout=30).status_code
        == 200
    )
    assert requests.post(f"{server}/gateway/{name}/mlflow/invocations", json=call, timeout=60).status_code == 200


def test_budget_policy_answers_match_mlflow(server: str, reference: str) -> None:
    policy = {
        "budget_unit": "USD",
        "budget_amount": 12.5,
        "duration": {"unit": "WEEKS", "value": 2},
        "target_scope": "WORKSPACE",
        "budget_action": "ALERT",
    }
    answers = []
    for base in (server, reference):
        created = _post(base, "/budgets/create", policy)["budget_policy"]
        got = requests.get(f"{base}{GW}/budgets/get", params={"budget_policy_id": created["budget_policy_id"]}, timeout=30).json()[
            "budget_policy"
        ]
        assert got == created
        missing = requests.get(f"{base}{GW}/budgets/get", params={"budget_policy_id": "bp-missing"}, timeout=30)
        answers.append(
            (
                {k: v for k, v in created.items() if k not in ("budget_policy_id", "created_at", "last_updated_at")},
                missing.status_code,
                missing.json()["error_code"],
            )
        )
        requests.delete(f"{base}{GW}/budgets/delete", json={"budget_policy_id": created["budget_policy_id"]}, timeout=30)
    assert answers[0] == answers[1]


def _budget_requests(endpoint_id: str) -> list[tuple[str, dict[str, Any]]]:
    """Budget policy writes, good and bad, in order; ``<policy>`` is the policy the first step creates."""
    base = {"budget_unit": "USD", "budget_amount": 5.0, "duration": {"unit": "DAYS", "value": 1}, "budget_action": "REJECT"}
    return [
        ("create", {**base, "target_scope": "WORKSPACE"}),
        ("create", {**base, "target_scope": "ENDPOINT"}),
        ("create", {**base, "target_scope": "GLOBAL", "target_value": "x"}),
        ("create", {**base, "target_scope": "USER", "target_value": "alice"}),
        ("create", {**base, "target_scope": "ENDPOINT", "target_value": "ep-missing"}),
        ("create", {**base, "target_scope": "TARGET_SCOPE_UNSPECIFIED"}),
        ("create", {**base, "target_scope": "WORKSPACE", "duration": {"unit": "DAYS", "value": 0}}),
        ("create", {**base, "target_scope": "WORKSPACE", "duration": {"value": 2}}),
        ("create", {**base, "target_scope": "WORKSPACE", "budget_unit": 0}),
        ("update", {"budget_policy_id": "<policy>", "budget_amount": 7.5, "updated_by": "bob"}),
        ("update", {"budget_policy_id": "<policy>", "duration": {"unit": "WEEKS", "value": 3}, "budget_action": "ALERT"}),
        ("update", {"budget_policy_id": "<policy>", "target_scope": "ENDPOINT"}),
        ("update", {"budget_policy_id": "<policy>", "target_value": "x"}),
        ("update", {"budget_policy_id": "<policy>", "target_scope": "ENDPOINT", "target_value": "ep-missing"}),
        ("update", {"budget_policy_id": "<policy>", "target_scope": "ENDPOINT", "target_value": endpoint_id}),
        ("update", {"budget_policy_id": "<policy>", "budget_amount": 9.0}),
        ("update", {"budget_policy_id": "<policy>", "target_scope": "GLOBAL"}),
        ("update", {"budget_policy_id": "<policy>", "target_scope": "USER", "target_value": "alice"}),
        ("update", {"budget_policy_id": "<policy>", "duration": {"unit": "HOURS", "value": -1}}),
        ("update", {"budget_policy_id": "<policy>", "budget_action": 0}),
        ("update", {"budget_policy_id": "bp-missing", "budget_amount": 1.0}),
        ("update", {"budget_policy_id": "bp-missing", "target_scope": "GLOBAL"}),
        ("update", {"budget_amount": 1.0}),
    ]


def test_budget_policy_writes_answer_as_mlflow(server: str, reference: str, mock: MockLLM, loose_api_base: None) -> None:
    """Create and update, with each check MLflow's handler and store make, answered as ``mlflow server`` answers
    (ids, times and the endpoint id masked)."""
    answers: list[list[tuple[int, Any]]] = []
    for base in (server, reference):
        endpoint_id = _endpoint(base, mock.url, unique("bud"), "openai", "gpt-4o-mini")["endpoint_id"]
        policy_id = None
        seen = []
        for step, body in _budget_requests(endpoint_id):
            if policy_id:
                body = {key: policy_id if value == "<policy>" else value for key, value in body.items()}
            response = requests.post(f"{base}{GW}/budgets/{step}", json=body, timeout=30)
            answer = response.json()
            if policy_id is None and response.status_code == 200:
                policy_id = answer["budget_policy"]["budget_policy_id"]
            text = json.dumps(answer, sort_keys=True).replace(endpoint_id, "<endpoint>").replace(policy_id or "-", "<policy>")
            text = re.sub(r'"(created_at|last_updated_at)": \d+', r'"\1": 0', text)
            seen.append((response.status_code, json.loads(text)))
        requests.delete(f"{base}{GW}/budgets/delete", json={"budget_policy_id": policy_id}, timeout=30)
        answers.append(seen)
    for step, ours, theirs in zip(_budget_requests("<endpoint>"), *answers, strict=True):
        assert ours == theirs, step


@pytest.fixture(scope="module")
def alert_runtime() -> Iterator[str]:
    """Our runtime allowed to call the mock provider and to deliver webhooks to 127.0.0.1 (its own table)."""
    with runtime_process({"TABLE_NAME": unique("alerts"), "BUCKET_NAME": unique("alerts"), **LOOSE_API_BASE, **LOCAL_TARGETS}) as url:
        yield url


def test_alert_budget_fires_mlflow_webhook_once(alert_runtime: str, reference: str, mock: MockLLM, loose_api_base: None) -> None:
    """An ALERT policy's window reaching its amount sends MLflow's ``budget_policy.exceeded`` webhook once (the
    call that crosses it), with MLflow's payload; calls keep passing (ALERT never rejects)."""
    payloads = []
    for base in (alert_runtime, reference):
        receiver = Receiver()
        listener = serve_receiver(receiver)
        try:
            name = unique("alert")
            endpoint_id = _endpoint(base, mock.url, name, "openai", "gpt-4o-mini")["endpoint_id"]
            hook = {"name": name, "url": f"{receiver.url}/hook", "events": [{"entity": "BUDGET_POLICY", "action": "EXCEEDED"}]}
            created_hook = requests.post(f"{base}/api/2.0/mlflow/webhooks", json=hook, timeout=30)
            assert created_hook.status_code == 200, created_hook.text
            policy = {
                "budget_unit": "USD",
                "budget_amount": 0.000004,  # one call costs 0.0000034 (3 tokens in, 5 out): the second crosses it
                "duration": {"unit": "DAYS", "value": 1},
                "target_scope": "ENDPOINT",
                "target_value": endpoint_id,
                "budget_action": "ALERT",
            }
            policy_id = _post(base, "/budgets/create", policy)["budget_policy"]["budget_policy_id"]
            call = {"messages": [{"role": "user", "content": "spend a little"}]}
            for _ in range(4):
                answer = requests.post(f"{base}/gateway/{name}/mlflow/invocations", json=call, timeout=60)
                assert answer.status_code == 200, answer.text
            received = receiver.wait_for(lambda seen: len(seen) >= 1)
            time.sleep(3)  # a second event would be delivered by now
            assert len(receiver.at("/hook")) == 1, [r.body for r in receiver.requests]
            sent = received[0].json
            assert (sent["entity"], sent["action"]) == ("budget_policy", "exceeded")
            data = dict(sent["data"])
            assert (data.pop("budget_policy_id"), data.pop("target_value")) == (policy_id, endpoint_id)
            payloads.append(data)
            requests.delete(f"{base}{GW}/budgets/delete", json={"budget_policy_id": policy_id}, timeout=30)
            requests.delete(f"{base}/api/2.0/mlflow/webhooks/{created_hook.json()['webhook']['webhook_id']}", timeout=30)
        finally:
            listener.shutdown()
            listener.server_close()
    assert payloads[0] == payloads[1]
    assert payloads[0]["current_spend"] == pytest.approx(2 * (3 * 0.15e-6 + 5 * 0.6e-6))


def test_streamed_answer_arrives_in_pieces(server: str, mock: MockLLM, loose_api_base: None) -> None:
    name = unique("stream")
    _endpoint(server, mock.url, name, "openai", "gpt-4o-mini")
    body = {"model": name, "messages": [{"role": "user", "content": "PACE300 tell me a story in several words"}], "stream": True}
    started = time.monotonic()
    arrivals = []
    with requests.post(f"{server}/gateway/mlflow/v1/chat/completions", json=body, stream=True, timeout=60) as response:
        assert response.status_code == 200 and response.headers["content-type"].startswith("text/event-stream")
        for line in response.iter_lines():
            if line.startswith(b"data:"):
                arrivals.append((time.monotonic() - started, json.loads(line[5:])))
    texts = "".join(chunk["choices"][0]["delta"]["content"] or "" for _, chunk in arrivals if chunk["choices"])
    assert texts == "mock reply: PACE300 tell me a story in several words"
    # The first words are read while the provider is still writing the rest (0.3 s between its chunks).
    assert arrivals[-1][0] - arrivals[0][0] > 2.0


def test_bedrock_through_the_functions_role(server: str, mock: MockLLM, loose_api_base: None) -> None:
    """A Bedrock endpoint needs no stored credentials: the function's role signs (here: a stub endpoint)."""
    from serverless_mlflow.llm_gateway.providers import bedrock

    os.environ["BEDROCK_ENDPOINT_URL"] = mock.url
    bedrock._clients.clear()
    try:
        name = unique("bedrock")
        secret = _post(
            server,
            "/secrets/create",
            {
                "secret_name": name,
                "secret_value": {"unused": "-"},
                "provider": "bedrock",
                "auth_config": {"auth_mode": "default_chain", "aws_region_name": "us-east-1"},
            },
        )
        definition = _post(
            server,
            "/model-definitions/create",
            {
                "name": name,
                "secret_id": secret["secret"]["secret_id"],
                "provider": "bedrock",
                "model_name": "anthropic.claude-3-haiku-20240307-v1:0",
            },
        )
        _post(
            server,
            "/endpoints/create",
            {
                "name": name,
                "model_configs": [
                    {"model_definition_id": definition["model_definition"]["model_definition_id"], "linkage_type": "PRIMARY"}
                ],
            },
        )
        answer = requests.post(
            f"{server}/gateway/{name}/mlflow/invocations", json={"messages": [{"role": "user", "content": "hi bedrock"}]}, timeout=60
        )
        assert answer.status_code == 200, answer.text
        body = answer.json()
        assert body["choices"][0]["message"]["content"] == "mock reply: hi bedrock"
        assert body["usage"] == {"prompt_tokens": 2, "completion_tokens": 4, "total_tokens": 6} and body["provider"] == "bedrock"
        path, _, headers = mock.requests[-1]
        assert path == "/model/anthropic.claude-3-haiku-20240307-v1%3A0/converse" and headers["authorization"].startswith(
            "AWS4-HMAC-SHA256"
        )
    finally:
        os.environ.pop("BEDROCK_ENDPOINT_URL")
        bedrock._clients.clear()
