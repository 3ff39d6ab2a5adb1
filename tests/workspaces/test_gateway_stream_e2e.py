"""A gateway call in a workspace (issue 27) records its spend and usage trace in that workspace, streamed or not:
a streamed answer's chunks (and the recording after its last one) are produced after the call's routing returns,
by the function URL's server or the API handler buffering them, so they are bound to the call's workspace apart;
the usage trace's events to the traces function name the workspace. Against the local runtime's API (whose
handler consumes the stream as the function URL's server does) with the local mock provider."""

from __future__ import annotations

from typing import Any

import mlflow
import pytest

from tests.conftest import unique
from tests.gateway_runtime.test_runtime_e2e import _traces
from tests.workspaces.support import raw
from tools.mock_llm import MockLLM

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("workspaces")]

GW = "/api/3.0/mlflow/gateway"


def _post(url: str, workspace: str, path: str, body: dict[str, Any]) -> dict[str, Any]:
    status, answer = raw(url, "POST", f"{GW}{path}", workspace, json=body)
    assert status == 200, answer
    return answer


def _endpoint(url: str, workspace: str, mock_url: str, name: str) -> dict[str, Any]:
    secret = {"secret_name": name, "secret_value": {"api_key": "sk-test-0123456789"}, "provider": "openai"}
    secret_id = _post(url, workspace, "/secrets/create", {**secret, "auth_config": {"api_base": f"{mock_url}/v1"}})["secret"]["secret_id"]
    definition = {"name": name, "secret_id": secret_id, "provider": "openai", "model_name": "gpt-4o-mini"}
    definition_id = _post(url, workspace, "/model-definitions/create", definition)["model_definition"]["model_definition_id"]
    config = {"model_definition_id": definition_id, "linkage_type": "PRIMARY", "weight": 1.0}
    return _post(url, workspace, "/endpoints/create", {"name": name, "model_configs": [config]})["endpoint"]


def test_gateway_calls_record_spend_and_traces_in_their_workspace(ours: str, mock_llm: MockLLM) -> None:
    suffix = unique("g")[-6:]
    team, name = f"stream-{suffix}", f"chat-{suffix}"
    mlflow.set_tracking_uri(ours)
    mlflow.set_workspace(None)
    mlflow.create_workspace(team)
    endpoint = _endpoint(ours, team, mock_llm.url, name)
    policy = {
        "budget_unit": "USD",
        "budget_amount": 100.0,
        "duration": {"unit": "DAYS", "value": 1},
        "target_scope": "WORKSPACE",
        "budget_action": "ALERT",
    }
    policy_id = _post(ours, team, "/budgets/create", policy)["budget_policy"]["budget_policy_id"]

    messages = [{"role": "user", "content": "count my tokens"}]
    for body in ({"messages": messages, "stream": True}, {"messages": messages}):
        status, answer = raw(ours, "POST", f"/gateway/{name}/mlflow/invocations", team, json=body)
        assert status == 200, answer

    # Both calls' spend is the workspace's (3 tokens in, 5 out at gpt-4o-mini's prices, each).
    status, windows = raw(ours, "GET", f"{GW}/budgets/windows", team)
    assert status == 200, windows
    spend = next(window["current_spend"] for window in windows["windows"] if window["budget_policy_id"] == policy_id)
    assert spend == pytest.approx(2 * (3 * 0.15e-6 + 5 * 0.6e-6))

    # Both usage traces land in the endpoint's experiment, which is the workspace's (each exported after its answer:
    # wait until both have landed whole, their token usage with them).
    mlflow.set_workspace(team)
    found = _traces(ours, endpoint["experiment_id"], 2)
    assert (
        sorted(trace.info.trace_metadata["mlflow.trace.tokenUsage"] for trace in found)
        == ['{"input_tokens": 3, "output_tokens": 5, "total_tokens": 8}'] * 2
    )
