"""SSRF at call time (MLflow's ``mlflow/gateway/ssrf.py``): an ``api_base`` stored while private addresses were
allowed (or before the write-time check existed), or a name that resolves to a private address when the call is
made (DNS rebinding), must not reach that address once ``MLFLOW_GATEWAY_API_BASE_ALLOW_PRIVATE_IPS`` is off.

The endpoints are written through the session's runtime with private addresses allowed, then invoked through a
second runtime process on the same table with them refused, as an operator who turns the setting off would."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator

import pytest
import requests

from tests.conftest import runtime_process
from tests.gateway_runtime.test_runtime_e2e import LOOSE_API_BASE, _endpoint
from tools.mock_llm import MockLLM

pytestmark = pytest.mark.xdist_group("gateway_runtime")

MESSAGES = [{"role": "user", "content": "hello there"}]


@pytest.fixture(scope="module")
def mock() -> Iterator[MockLLM]:
    server = MockLLM().start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def strict(server: str) -> Iterator[str]:
    """A runtime on the session's table that refuses private upstreams (MLflow's default)."""
    env = {"MLFLOW_GATEWAY_API_BASE_ALLOWED_SCHEMES": "http,https", "MLFLOW_GATEWAY_API_BASE_ALLOW_PRIVATE_IPS": "false"}
    with runtime_process(env) as url:
        yield url


@pytest.fixture
def loose(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in LOOSE_API_BASE.items():
        monkeypatch.setenv(name, value)


def _mlflow_refusal(url: str) -> str:
    """What MLflow's own guard says about ``url`` (an IP-literal host), with protection on."""
    from mlflow.gateway.ssrf import GatewaySSRFProtectionError, assert_public_upstream_url, upstream_ssrf_protection

    token = upstream_ssrf_protection.set(True)
    saved = os.environ.pop("MLFLOW_GATEWAY_API_BASE_ALLOW_PRIVATE_IPS", None)
    try:
        assert_public_upstream_url(url)
    except GatewaySSRFProtectionError as error:
        return str(error)
    finally:
        upstream_ssrf_protection.reset(token)
        if saved is not None:
            os.environ["MLFLOW_GATEWAY_API_BASE_ALLOW_PRIVATE_IPS"] = saved
    raise AssertionError(f"MLflow's guard let {url} through")


def _invoke(base: str, name: str, stream: bool = False) -> requests.Response:
    return requests.post(f"{base}/gateway/{name}/mlflow/invocations", json={"messages": MESSAGES, "stream": stream}, timeout=60)


def test_a_stored_private_api_base_is_refused_as_mlflow_refuses_it(server: str, strict: str, mock: MockLLM, loose: None) -> None:
    _endpoint(server, mock.url, "egress-literal", "openai", "gpt-4o-mini")
    assert _invoke(server, "egress-literal").status_code == 200  # allowed where private upstreams are allowed
    before = len(mock.requests)
    refusal = _mlflow_refusal(f"{mock.url}/v1/chat/completions")
    answer = _invoke(strict, "egress-literal")
    assert answer.status_code == 502, answer.text
    assert answer.json() == {"detail": refusal}
    # A stream has answered 200 before the provider is called: the refusal comes as its error chunk (safe_stream).
    streamed = _invoke(strict, "egress-literal", stream=True)
    assert streamed.status_code == 200
    assert json.loads(streamed.text.removeprefix("data: ")) == {"error": {"message": f"502: {refusal}", "type": "HTTPException"}}
    assert len(mock.requests) == before  # not a byte reached the provider


def test_a_name_resolving_to_a_private_address_is_refused_after_connecting(server: str, strict: str, mock: MockLLM, loose: None) -> None:
    """``localhost`` is resolved by the connection itself: only the peer check after ``connect()`` can see where it
    went (the same check stops a rebinding answer)."""
    _endpoint(server, mock.url.replace("127.0.0.1", "localhost"), "egress-name", "openai", "gpt-4o-mini")
    before = len(mock.requests)
    answer = _invoke(strict, "egress-name")
    assert answer.status_code == 502, answer.text
    detail = answer.json()["detail"]
    assert detail.startswith("Gateway upstream connection blocked: 'localhost' resolves to "), detail
    assert detail.endswith(
        "which is not a public IP address. Set MLFLOW_GATEWAY_API_BASE_ALLOW_PRIVATE_IPS=true to allow private upstreams."
    )
    assert len(mock.requests) == before


def test_a_raw_proxy_call_is_guarded(server: str, strict: str, mock: MockLLM, loose: None) -> None:
    _endpoint(server, mock.url, "egress-proxy", "openai", "gpt-4o-mini")
    before = len(mock.requests)
    answer = requests.post(
        f"{strict}/gateway/proxy/egress-proxy/chat/completions", json={"model": "gpt-4o-mini", "messages": MESSAGES}, timeout=60
    )
    assert answer.status_code == 502, answer.text
    assert "is not a public IP address" in answer.json()["detail"]
    assert len(mock.requests) == before


def test_an_unreachable_provider_is_a_502_that_does_not_name_it(server: str, loose: None) -> None:
    """An endpoint's api_base is an admin's configuration: a provider that cannot be reached answers 502 without
    its host or port (urllib3's own text names both), streamed or not."""
    from local.engine import free_port

    port = free_port()  # nothing listens there
    _endpoint(server, f"http://127.0.0.1:{port}", "egress-down", "openai", "gpt-4o-mini")
    answer = _invoke(server, "egress-down")
    assert answer.status_code == 502, answer.text
    assert answer.json() == {"detail": "The provider could not be reached (NewConnectionError)."}
    streamed = _invoke(server, "egress-down", stream=True)
    assert str(port) not in streamed.text and "127.0.0.1" not in streamed.text, streamed.text
