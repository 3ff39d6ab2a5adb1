"""A registered LLM judge whose model is one of this server's gateway endpoints (``gateway:/<endpoint>``), run from
the UI path (``scorer/invoke``): the job worker runs MLflow's judge, which calls this server's gateway (MLflow
resolves ``gateway:/`` to the tracking URI's ``/gateway/mlflow/v1/chat/completions``) as the job's creator; the
gateway calls the mock provider; the assessments land on the traces, and each judge call is an ordinary gateway
call: a usage trace on the endpoint (caller ``judge``) and spend on its budget. Without auth and under basic auth
(a non-admin creator, whose job token is the judge's credential)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import mlflow
import pytest
import requests

from tests.auth.conftest import ADMIN, ADMIN_PASSWORD, basic_env, basic_runtime
from tests.conftest import unique
from tests.gateway_runtime.test_runtime_e2e import GW, LOOSE_API_BASE, _endpoint, _post, _traces
from tests.jobs.test_invoke import SCORER_INVOKE, two_traces, wait_flask_job
from tools.mock_llm import MockLLM

pytestmark = pytest.mark.e2e


@pytest.fixture
def mock(monkeypatch: pytest.MonkeyPatch) -> Iterator[MockLLM]:
    """The endpoint's provider. The gateway refuses loopback http api_base values unless told otherwise (as
    ``mlflow server`` does): the in-process runtime reads these variables, a child runtime inherits them."""
    for name, value in LOOSE_API_BASE.items():
        monkeypatch.setenv(name, value)
    llm = MockLLM().start()
    yield llm
    llm.stop()


def _judge_endpoint(base: str, mock_url: str, auth: tuple[str, str] | None = None) -> dict[str, Any]:
    """A chat endpoint on the mock provider with an ALERT budget (it only records spend)."""
    endpoint = _endpoint(base, mock_url, unique("judge-ep"), "openai", "gpt-4o-mini", auth)
    policy = {
        "budget_unit": "USD",
        "budget_amount": 100.0,
        "duration": {"unit": "DAYS", "value": 1},
        "target_scope": "ENDPOINT",
        "target_value": endpoint["endpoint_id"],
        "budget_action": "ALERT",
    }
    endpoint["budget_policy_id"] = _post(base, "/budgets/create", policy, auth)["budget_policy"]["budget_policy_id"]
    return endpoint


def _judge(endpoint_name: str) -> str:
    from mlflow.genai.judges import make_judge

    judge = make_judge(name="helpful", instructions="JUDGE whether {{ outputs }} answers well.", model=f"gateway:/{endpoint_name}")
    return json.dumps(judge.model_dump())


def _invoke(base: str, experiment_id: str, endpoint: dict[str, Any], auth: tuple[str, str] | None) -> tuple[list[str], dict[str, Any]]:
    """The judge run on two new traces through ``scorer/invoke``: (the trace ids, the finished job)."""
    trace_ids = two_traces(experiment_id)
    body = {"experiment_id": experiment_id, "serialized_scorer": _judge(endpoint["name"]), "trace_ids": trace_ids, "log_assessments": True}
    answer = requests.post(f"{base}{SCORER_INVOKE}", json=body, auth=auth, timeout=60)
    assert answer.status_code == 200, answer.text
    (job,) = answer.json()["jobs"]
    with pytest.MonkeyPatch.context() as patch:
        if auth:  # wait_flask_job reads as the tests' client: as the creator
            patch.setattr(requests, "request", _authed(requests.request, auth))
        done = wait_flask_job(base, job["job_id"], seconds=120)
    assert done["status"] == "SUCCEEDED", done
    return trace_ids, done


def _invoke_and_check(base: str, experiment_id: str, endpoint: dict[str, Any], auth: tuple[str, str] | None, mock: MockLLM) -> str:
    """Run the judge on two traces; check the assessments and the gateway's record of the judge's calls. Answers
    the username the usage traces name (None without auth)."""
    before = len(mock.requests)
    trace_ids, done = _invoke(base, experiment_id, endpoint, auth)
    client = mlflow.MlflowClient(base)
    for trace_id in trace_ids:
        assert done["result"][trace_id]["failures"] == [], done["result"][trace_id]
        (logged,) = [a for a in client.get_trace(trace_id).info.assessments if a.name == "helpful"]
        assert logged.value == "yes" and logged.source.source_type == "LLM_JUDGE"
        assert logged.source.source_id == f"gateway:/{endpoint['name']}"
    # The judge's calls reached the provider through the gateway (the endpoint's model, its key).
    calls = mock.requests[before:]
    assert len(calls) == 2 and all(path.endswith("/chat/completions") and body["model"] == "gpt-4o-mini" for path, body, _ in calls)

    # Each is a gateway call like any other: a usage trace on the endpoint, named as the judge's, and spend (under
    # basic auth too, where the creator has USE on the endpoint and no grant on its experiment, as on MLflow's server).
    usage = _traces(base, endpoint["experiment_id"], 2)
    assert len(usage) == 2
    metadata = [trace.info.trace_metadata for trace in usage]
    assert {m["mlflow.gateway.caller"] for m in metadata} == {"judge"}
    assert {m["mlflow.gateway.requestType"] for m in metadata} == {"unified/chat"}
    total = sum(json.loads(m["mlflow.trace.cost"])["total_cost"] for m in metadata)
    reader = (ADMIN, ADMIN_PASSWORD) if auth else None  # budgets are the admin's to read
    windows = requests.get(f"{base}{GW}/budgets/windows", auth=reader, timeout=30).json()["windows"]
    (window,) = [w for w in windows if w["budget_policy_id"] == endpoint["budget_policy_id"]]
    assert total > 0 and window["current_spend"] == pytest.approx(total)
    usernames = {m.get("mlflow.auth.username") for m in metadata}
    assert len(usernames) == 1
    return usernames.pop()


def _authed(request: Any, auth: tuple[str, str]) -> Any:
    def authed(method: str, url: str, **kwargs: Any) -> Any:
        return request(method, url, auth=auth, **kwargs)

    return authed


def test_a_gateway_judge_runs_through_this_servers_gateway(server: str, client: Any, mock: MockLLM) -> None:
    endpoint = _judge_endpoint(server, mock.url)
    experiment_id = client.create_experiment(unique("gw-judge"))
    mlflow.set_experiment(experiment_id=experiment_id)
    assert _invoke_and_check(server, experiment_id, endpoint, None, mock) is None


def test_a_gateway_judge_runs_as_its_creator_under_basic_auth(server: str, mock: MockLLM, monkeypatch: pytest.MonkeyPatch) -> None:
    with basic_runtime(env=basic_env()) as url:
        alice = (unique("alice"), "alice-password-1")
        created = requests.post(
            f"{url}/api/2.0/mlflow/users/create",
            json={"username": alice[0], "password": alice[1]},
            auth=(ADMIN, ADMIN_PASSWORD),
            timeout=30,
        )
        assert created.status_code == 200, created.text
        # The admin configures the endpoint (gateway configuration is admin-only here); alice logs the traces and
        # runs the judge: the job's calls are hers.
        monkeypatch.setenv("MLFLOW_TRACKING_USERNAME", alice[0])
        monkeypatch.setenv("MLFLOW_TRACKING_PASSWORD", alice[1])
        mlflow.set_tracking_uri(url)
        try:
            endpoint = _judge_endpoint(url, mock.url, (ADMIN, ADMIN_PASSWORD))
            experiment_id = mlflow.MlflowClient(url).create_experiment(unique("gw-judge"))
            mlflow.set_experiment(experiment_id=experiment_id)
            # The judge calls the gateway with alice's rights, no more: without USE on the endpoint it is refused.
            trace_ids, refused = _invoke(url, experiment_id, endpoint, alice)
            failures = [f for trace_id in trace_ids for f in refused["result"][trace_id]["failures"]]
            assert [f["error_message"] for f in failures] == ["Failed to invoke judge model: Permission denied"] * 2
            grant = {"username": alice[0], "resource_type": "gateway_endpoint", "resource_id": endpoint["endpoint_id"], "permission": "USE"}
            granted = requests.post(f"{url}/api/3.0/mlflow/users/permissions/grant", json=grant, auth=(ADMIN, ADMIN_PASSWORD), timeout=30)
            assert granted.status_code == 200, granted.text
            assert _invoke_and_check(url, experiment_id, endpoint, alice, mock) == alice[0]
        finally:
            mlflow.set_tracking_uri(server)
        # Without credentials the gateway refuses the call the judge made with them.
        anonymous = requests.post(f"{url}/gateway/mlflow/v1/chat/completions", json={"model": endpoint["name"], "messages": []}, timeout=30)
        assert anonymous.status_code == 401


def test_under_iam_a_judges_gateway_calls_are_signed(mock: MockLLM, monkeypatch: pytest.MonkeyPatch) -> None:
    """Deployed with ``authorization=iam`` every API route needs SigV4: the worker signs its judge's gateway calls
    with its role as the client signs its own (``MLFLOW_TRACKING_AWS_SIGV4``). MLflow's judge runs unchanged against
    the mock standing in for this server's API; it sees the signed request."""
    from job_worker.credentials import signed_gateway_calls
    from mlflow.genai.judges import make_judge

    monkeypatch.setenv("JOB_SERVER_URL", mock.url)
    monkeypatch.setenv("MLFLOW_GATEWAY_URI", mock.url)
    judge = make_judge(name="helpful", instructions="JUDGE whether {{ outputs }} answers well.", model="gateway:/my-endpoint")
    monkeypatch.setenv("MLFLOW_TRACKING_AWS_SIGV4", "true")
    with signed_gateway_calls():
        assert judge(outputs="JUDGE: an answer").value == "yes"
    path, body, headers = mock.requests[-1]
    assert path == "/gateway/mlflow/v1/chat/completions" and body["model"] == "my-endpoint"
    assert headers["x-mlflow-gateway-caller"] == "judge"
    assert headers["authorization"].startswith("AWS4-HMAC-SHA256 Credential=") and "/execute-api/aws4_request" in headers["authorization"]
    # Outside a job (or without IAM) nothing is signed.
    assert judge(outputs="JUDGE: an answer").value == "yes"
    assert "authorization" not in mock.requests[-1][2]
