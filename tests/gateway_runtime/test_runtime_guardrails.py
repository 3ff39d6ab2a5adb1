"""Gateway guardrails at invocation time, end to end: a make_judge judge (its model a gateway endpoint on the
local mock provider) registered with the real client, made a guardrail and added to an endpoint; calls that
pass, calls it blocks, a payload it sanitizes through its action endpoint. The blocking answer is compared with
``mlflow server`` on the same configuration and call."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
import requests
from mlflow.store.tracking.rest_store import RestStore
from mlflow.utils.rest_utils import MlflowHostCreds

from tests.conftest import unique
from tests.gateway_runtime.test_runtime_e2e import _endpoint, _post, _traces, gateway_reference, loose_api_base, mock  # noqa: F401
from tests.gateway_runtime.trace_shape import differences, trace_shape
from tools.mock_llm import MockLLM

pytestmark = pytest.mark.xdist_group("gateway_runtime")


@pytest.fixture(scope="module")
def reference(loose_api_base: None) -> Iterator[str]:  # noqa: F811
    yield from gateway_reference(own_gateway_uri=True)


def _judge(endpoint_name: str) -> str:
    return json.dumps(
        {
            "name": "policy",
            "aggregations": [],
            "description": None,
            "mlflow_version": "3.17.2",
            "serialization_version": 1,
            "instructions_judge_pydantic_data": {
                "instructions": "Does {{ inputs }} follow the usage policy? Answer yes or no.",
                "model": f"gateway:/{endpoint_name}",
                "feedback_value_type": {"type": "string"},
            },
            "builtin_scorer_class": None,
            "builtin_scorer_pydantic_data": None,
            "call_source": None,
            "call_signature": None,
            "original_func_name": None,
        }
    )


def _guarded(base: str, mock_url: str, suffix: str, **guardrail: Any) -> tuple[str, str]:
    """A chat endpoint with one guardrail judged by another endpoint: (chat endpoint name, guardrail id)."""
    chat, guardrail_id = _guarded_endpoint(base, mock_url, suffix, **guardrail)
    return chat["name"], guardrail_id


def _guarded_endpoint(base: str, mock_url: str, suffix: str, **guardrail: Any) -> tuple[dict[str, Any], str]:
    """``_guarded``, answering the chat endpoint itself (its usage-trace experiment)."""
    _endpoint(base, mock_url, f"judge-{suffix}", "openai", "gpt-4o-mini")
    chat = _endpoint(base, mock_url, f"chat-{suffix}", "openai", "gpt-4o-mini")
    store = RestStore(lambda: MlflowHostCreds(base))
    experiment_id = store.create_experiment(f"guardrails-{suffix}")
    scorer = store.register_scorer(experiment_id, "policy", _judge(f"judge-{suffix}"))
    body = {"name": "policy", "scorer_id": scorer.scorer_id, "scorer_version": 1, "stage": "BEFORE", "action": "VALIDATION", **guardrail}
    created = _post(base, "/guardrails/create", body)["guardrail"]
    _post(base, "/guardrails/add-to-endpoint", {"endpoint_id": chat["endpoint_id"], "guardrail_id": created["guardrail_id"]})
    return chat, created["guardrail_id"]


def _chat(base: str, endpoint_name: str, text: str, **extra: Any) -> requests.Response:
    body = {"messages": [{"role": "user", "content": text}], **extra}
    return requests.post(f"{base}/gateway/{endpoint_name}/mlflow/invocations", json=body, timeout=120)


def test_validation_guardrail_blocks_as_mlflow_does(server: str, reference: str, mock: MockLLM) -> None:  # noqa: F811
    suffix = unique("gr")
    answers = []
    for base in (server, reference):
        endpoint_name, _ = _guarded(base, mock.url, suffix)
        passed = _chat(base, endpoint_name, "hello JUDGE")
        assert passed.status_code == 200, passed.text
        blocked = _chat(base, endpoint_name, "my password is hunter2 JUDGE VIOLATION")
        # Streamed, the block is the stream's only chunk: MLflow's SSE error chunk naming GuardrailViolation.
        streamed = _chat(base, endpoint_name, "my password is hunter2 JUDGE VIOLATION", stream=True)
        answers.append((blocked.status_code, blocked.json(), streamed.status_code, streamed.text))
    error = {"error": {"message": "Guardrail 'policy' blocked: The mock judge found a VIOLATION marker.", "type": "GuardrailViolation"}}
    assert (
        answers[0]
        == answers[1]
        == (
            400,
            {"detail": "Guardrail 'policy' blocked: The mock judge found a VIOLATION marker."},
            200,
            f"data: {json.dumps(error)}\n\n",
        )
    )


def test_guardrails_on_this_runtime(server: str, mock: MockLLM, loose_api_base: None) -> None:  # noqa: F811
    suffix = unique("gs")
    endpoint_name, guardrail_id = _guarded(server, mock.url, suffix)
    judged = len(mock.requests)
    # The judge ran on the request (its endpoint was called with the caller's message), then the model.
    assert _chat(server, endpoint_name, "hello JUDGE").status_code == 200
    judge_call = mock.requests[judged][1]
    assert judge_call["messages"][0]["role"] == "system" and "Your task: Does {{ inputs }} follow" in judge_call["messages"][0]["content"]
    assert "hello JUDGE" in judge_call["messages"][1]["content"] and len(mock.requests) == judged + 2
    # A streamed call is judged before it starts; a violation ends the stream with an error chunk.
    streamed = _chat(server, endpoint_name, "JUDGE VIOLATION", stream=True)
    assert streamed.status_code == 200 and "Guardrail 'policy' blocked" in streamed.text

    # The passthrough and proxy routes, where this gateway does not run guardrails, refuse a guarded endpoint.
    messages = [{"role": "user", "content": "JUDGE VIOLATION"}]
    for path, body in (
        ("/gateway/openai/v1/chat/completions", {"model": endpoint_name, "messages": messages}),
        (f"/gateway/proxy/{endpoint_name}/chat/completions", {"model": "gpt-4o-mini", "messages": messages}),
    ):
        refused = requests.post(f"{server}{path}", json=body, timeout=60)
        assert refused.status_code >= 400 and "has guardrails" in refused.text, (path, refused.text)

    # Removed from the endpoint, the guardrail no longer runs.
    listed = requests.get(f"{server}/api/3.0/mlflow/gateway/endpoints/list", timeout=30).json()["endpoints"]
    endpoint_id = next(e["endpoint_id"] for e in listed if e["name"] == endpoint_name)
    removed = requests.delete(
        f"{server}/api/3.0/mlflow/gateway/guardrails/remove-from-endpoint",
        json={"endpoint_id": endpoint_id, "guardrail_id": guardrail_id},
        timeout=30,
    )
    assert removed.status_code == 200, removed.text
    assert _chat(server, endpoint_name, "JUDGE VIOLATION").status_code == 200
    passthrough = {"model": endpoint_name, "messages": messages}
    assert requests.post(f"{server}/gateway/openai/v1/chat/completions", json=passthrough, timeout=60).status_code == 200


def test_sanitization_guardrail_rewrites_the_request(server: str, mock: MockLLM, loose_api_base: None) -> None:  # noqa: F811
    suffix = unique("gz")
    sanitizer = _endpoint(server, mock.url, f"sanitizer-{suffix}", "openai", "gpt-4o-mini")
    endpoint_name, _ = _guarded(server, mock.url, suffix, action="SANITIZATION", action_endpoint_id=sanitizer["endpoint_id"])
    before = len(mock.requests)
    answer = _chat(server, endpoint_name, "call me at VIOLATION JUDGE")
    assert answer.status_code == 200, answer.text
    # judge, sanitizer, then the model with the rewritten payload.
    calls = [body for _, body, _ in mock.requests[before:]]
    assert len(calls) == 3
    assert calls[1]["messages"][0]["content"].startswith("You are a content sanitizer.")
    assert calls[2]["messages"] == [{"role": "user", "content": "call me at [REDACTED] JUDGE"}]


def test_guardrail_spans_in_usage_traces_match_mlflow(server: str, reference: str, mock: MockLLM) -> None:  # noqa: F811
    """The guarded endpoint's usage traces carry MLflow's guardrail spans: a passing and a blocking validation
    guardrail, then a sanitizing one; compared span by span with ``mlflow server``'s."""
    suffix = unique("gt")
    shapes: dict[str, list[dict[str, Any]]] = {}
    for base in (server, reference):
        validated, _ = _guarded_endpoint(base, mock.url, f"v{suffix}")
        assert _chat(base, validated["name"], "hello JUDGE").status_code == 200
        assert _chat(base, validated["name"], "JUDGE VIOLATION").status_code == 400
        sanitizer = _endpoint(base, mock.url, f"sanitizer-{suffix}", "openai", "gpt-4o-mini")
        sanitized, _ = _guarded_endpoint(
            base, mock.url, f"s{suffix}", stage="AFTER", action="SANITIZATION", action_endpoint_id=sanitizer["endpoint_id"]
        )
        assert _chat(base, sanitized["name"], "my number is VIOLATION JUDGE").status_code == 200
        traces = _traces(base, validated["experiment_id"], 2) + _traces(base, sanitized["experiment_id"], 1)
        shapes[base] = [trace_shape(trace) for trace in sorted(traces[:2], key=lambda t: t.info.request_time) + traces[2:]]
    assert len(shapes[server]) == len(shapes[reference]) == 3
    for ours, theirs in zip(shapes[server], shapes[reference], strict=True):
        assert differences(ours, theirs) == []
    passed, blocked, sanitized_shape = shapes[server]
    assert [(s["name"], s["depth"], s["type"]) for s in passed["spans"]][1:] == [
        ("guardrail/policy", 1, "GUARDRAIL"),
        ("provider/openai/gpt-4o-mini", 1, "LLM"),
        ("judge", 2, "EVALUATOR"),
    ]
    assert blocked["state"] == "ERROR" and blocked["spans"][1]["status"] == "SpanStatusCode.ERROR"
    assert "sanitization" in [s["name"] for s in sanitized_shape["spans"]]
