"""Who may call the gateway under basic auth (``functions/gateway_runtime/access.py``), as MLflow's auth middleware
decides for ``/gateway/`` (``_authenticate_fastapi_request``, ``_get_gateway_validator``): credentials are required,
a non-admin needs USE on the endpoint (a ``gateway_endpoint`` grant; the default READ is not enough), an unknown
endpoint is refused like one without USE, and the models list names only the endpoints the caller may use."""

from __future__ import annotations

import base64
import os
from collections.abc import Iterator
from typing import Any

import pytest
import requests

from tests.auth.conftest import ADMIN, ADMIN_PASSWORD, basic_env, basic_runtime
from tests.conftest import unique
from tools.mock_llm import MockLLM

pytestmark = pytest.mark.xdist_group("gateway_runtime")

GW = "/api/3.0/mlflow/gateway"
LOOSE_API_BASE = {"MLFLOW_GATEWAY_API_BASE_ALLOWED_SCHEMES": "http,https", "MLFLOW_GATEWAY_API_BASE_ALLOW_PRIVATE_IPS": "true"}
USER, PASSWORD = "gateway-user", "user-password-" + os.urandom(6).hex()
CHAT = {"messages": [{"role": "user", "content": "may I"}]}


@pytest.fixture(scope="module")
def setup() -> Iterator[tuple[str, str, str]]:
    """A basic-mode runtime with one endpoint (on the mock provider) and one non-admin user: (url, name, id)."""
    mock = MockLLM().start()
    try:
        with basic_runtime(env={**basic_env(), **LOOSE_API_BASE}) as url:
            admin = (ADMIN, ADMIN_PASSWORD)
            created = requests.post(f"{url}/api/2.0/mlflow/users/create", json={"username": USER, "password": PASSWORD}, auth=admin)
            assert created.status_code == 200, created.text
            name = unique("guarded")
            secret = _post(
                url,
                "/secrets/create",
                {
                    "secret_name": name,
                    "secret_value": {"api_key": "sk-test"},
                    "provider": "openai",
                    "auth_config": {"api_base": f"{mock.url}/v1"},
                },
            )
            definition = _post(
                url,
                "/model-definitions/create",
                {"name": name, "secret_id": secret["secret"]["secret_id"], "provider": "openai", "model_name": "gpt-4o-mini"},
            )
            config = {"model_definition_id": definition["model_definition"]["model_definition_id"], "linkage_type": "PRIMARY"}
            endpoint = _post(url, "/endpoints/create", {"name": name, "model_configs": [config]})["endpoint"]
            yield url, name, endpoint["endpoint_id"]
    finally:
        mock.stop()


def _post(url: str, path: str, body: dict[str, Any]) -> dict[str, Any]:
    response = requests.post(f"{url}{GW}{path}", json=body, auth=(ADMIN, ADMIN_PASSWORD), timeout=60)
    assert response.status_code == 200, response.text
    return response.json()


def _invoke(url: str, name: str, **kwargs: Any) -> requests.Response:
    return requests.post(f"{url}/gateway/{name}/mlflow/invocations", json=CHAT, timeout=60, **kwargs)


def _models(url: str, auth: tuple[str, str]) -> set[str]:
    answer = requests.get(f"{url}/gateway/mlflow/v1/models", auth=auth, timeout=30)
    assert answer.status_code == 200, answer.text
    return {model["id"] for model in answer.json()["data"]}


def test_use_permission_decides_who_may_call(setup: tuple[str, str, str]) -> None:
    url, name, endpoint_id = setup
    assert _invoke(url, name).status_code == 401
    assert _invoke(url, name, auth=(USER, "wrong-password")).status_code == 401
    # READ (the default permission) does not let a user call an endpoint; an unknown endpoint answers the same.
    for target in (name, "no-such-endpoint"):
        refused = _invoke(url, target, auth=(USER, PASSWORD))
        assert (refused.status_code, refused.text) == (403, "Permission denied"), target
    assert name not in _models(url, (USER, PASSWORD)) and name in _models(url, (ADMIN, ADMIN_PASSWORD))
    assert _invoke(url, name, auth=(ADMIN, ADMIN_PASSWORD)).status_code == 200

    grant = {"username": USER, "resource_type": "gateway_endpoint", "resource_id": endpoint_id, "permission": "USE"}
    granted = requests.post(f"{url}/api/3.0/mlflow/users/permissions/grant", json=grant, auth=(ADMIN, ADMIN_PASSWORD), timeout=30)
    assert granted.status_code == 200, granted.text
    allowed = _invoke(url, name, auth=(USER, PASSWORD))
    assert allowed.status_code == 200, allowed.text
    assert allowed.json()["choices"][0]["message"]["content"] == "mock reply: may I"
    assert name in _models(url, (USER, PASSWORD))
    # X-MLflow-Authorization, when sent, is the credential that counts (MLflow's middleware reads it first; on the
    # function URL, Authorization carries the SigV4 signature): the runtime checks it itself.
    token = base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
    wrong = base64.b64encode(f"{USER}:nope".encode()).decode()
    headers = {"Authorization": f"Basic {token}"}
    assert _invoke(url, name, headers={**headers, "X-MLflow-Authorization": f"Basic {token}"}).status_code == 200
    assert _invoke(url, name, headers={**headers, "X-MLflow-Authorization": f"Basic {wrong}"}).status_code == 401
