"""The AI gateway's provider and model catalog (the UI's ``/ajax-api/3.0/mlflow/gateway/...`` discovery routes),
end to end through the local runtime: every provider's answer compared with ``mlflow.utils.providers`` (what
MLflow's handlers call), and the HTTP answers compared with MLflow's own server (``tests/mlflow_reference``).

Both sides read the catalog bundled in the mlflow wheel (tests/conftest.py sets ``MLFLOW_MODEL_CATALOG_URI=""``).
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from typing import Any

import pytest
import requests
from mlflow.utils import providers as mlflow_providers

from infra import gateway_catalog
from tests.conftest import ROOT, runtime_process, unique
from tests.mlflow_reference import reference_server

pytestmark = pytest.mark.e2e

AJAX = "/ajax-api/3.0/mlflow/gateway"
ROUTES = ("supported-providers", "supported-models", "provider-config", "secrets/config")


def _get(base: str, path: str, **params: str) -> requests.Response:
    return requests.get(f"{base}{path}", params=params, timeout=60)


def _ok(base: str, path: str, **params: str) -> Any:
    response = _get(base, path, **params)
    assert response.status_code == 200, response.text
    return response.json()


def _error(response: requests.Response) -> tuple[int, str | None, str | None]:
    body = response.json()
    return response.status_code, body.get("error_code"), body.get("message")


@pytest.fixture(scope="module")
def all_providers() -> list[str]:
    return sorted(mlflow_providers.get_all_providers())


# --- every provider, against mlflow.utils.providers ------------------------------------------------------


def test_supported_providers_are_mlflows(server: str, all_providers: list[str]) -> None:
    assert _ok(server, f"{AJAX}/supported-providers") == {"providers": all_providers}
    assert len(all_providers) > 50 and "openai" in all_providers and "bedrock_converse" not in all_providers


def test_supported_models_without_a_filter_are_mlflows(server: str) -> None:
    expected = mlflow_providers.get_models()
    for params in ({}, {"provider": ""}):  # an empty filter is no filter (MLflow: ``if provider``)
        assert _ok(server, f"{AJAX}/supported-models", **params) == {"models": expected}


def test_supported_models_of_every_provider_are_mlflows(server: str, all_providers: list[str]) -> None:
    for provider in all_providers:
        assert _ok(server, f"{AJAX}/supported-models", provider=provider) == {"models": mlflow_providers.get_models(provider)}, provider


@pytest.mark.parametrize("provider", ["OpenAI", "vertex_ai-anthropic", "bedrock_converse", "no-such#provider ü"])
def test_supported_models_filter_matches_names_exactly(server: str, provider: str) -> None:
    # No lower-casing, no alias, no variant: MLflow answers an empty list (kept in its JSON).
    assert mlflow_providers.get_models(provider) == []
    assert _ok(server, f"{AJAX}/supported-models", provider=provider) == {"models": []}


def test_provider_auth_table_is_mlflows() -> None:
    from gateway import provider_auth

    assert provider_auth.AUTH_MODES == mlflow_providers._PROVIDER_AUTH_MODES


def test_provider_config_of_every_provider_is_mlflows(server: str, all_providers: list[str]) -> None:
    # Every catalog provider, the table's own rows (some are not catalog files), aliases and spellings.
    extra = [*mlflow_providers._PROVIDER_AUTH_MODES, "bedrock_converse", "amazon-bedrock", "databricks-model-serving", "OpenAI"]
    for provider in [*all_providers, *extra, "together_ai", "my provider#1 ü/x"]:
        expected = mlflow_providers.get_provider_config_response(provider)
        assert _ok(server, f"{AJAX}/provider-config", provider=provider) == expected, provider


# --- HTTP answers, against MLflow's own server ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "params"),
    [
        ("supported-providers", {}),
        ("supported-models", {}),
        ("supported-models", {"provider": "anthropic"}),
        ("supported-models", {"provider": "vertex_ai"}),
        ("supported-models", {"provider": "unknown"}),
        ("provider-config", {"provider": "bedrock"}),
        ("provider-config", {"provider": "Amazon-Bedrock"}),
        ("provider-config", {"provider": "databricks"}),
        ("provider-config", {"provider": "some_new_provider"}),
        ("secrets/config", {}),
    ],
)
def test_same_answer_as_mlflows_server(server: str, path: str, params: dict[str, str]) -> None:
    ours, theirs = _get(server, f"{AJAX}/{path}", **params), _get(reference_server().url, f"{AJAX}/{path}", **params)
    assert (ours.status_code, ours.json()) == (theirs.status_code, theirs.json())


def test_secrets_config_says_no_default_passphrase(server: str) -> None:
    # Values are encrypted under the stack's KMS key: never under a default passphrase.
    assert _ok(server, f"{AJAX}/secrets/config") == {"secrets_available": True, "using_default_passphrase": False}


@pytest.mark.parametrize("params", [{}, {"provider": ""}])
def test_provider_config_without_a_provider_is_mlflows_error(server: str, params: dict[str, str]) -> None:
    ours, theirs = _get(server, f"{AJAX}/provider-config", **params), _get(reference_server().url, f"{AJAX}/provider-config", **params)
    assert _error(ours) == _error(theirs) == (400, "INVALID_PARAMETER_VALUE", "Provider parameter is required")


@pytest.mark.parametrize("route", ROUTES)
def test_catalog_routes_are_ajax_only_as_in_mlflow(server: str, route: str) -> None:
    # MLflow registers them under /ajax-api/ alone: under /api/3.0 both servers answer 404.
    ours = _get(server, f"/api/3.0/mlflow/gateway/{route}", provider="openai")
    assert ours.status_code == _get(reference_server().url, f"/api/3.0/mlflow/gateway/{route}", provider="openai").status_code == 404
    assert ours.json()["error_code"] == "ENDPOINT_NOT_FOUND"


# --- the operator's settings (a runtime process of its own) ---------------------------------------------------


def test_allowed_providers_policy_is_mlflows(server: str, monkeypatch: pytest.MonkeyPatch) -> None:
    policy = " OpenAI, amazon-bedrock ,vertex_ai"
    monkeypatch.setenv("MLFLOW_GATEWAY_ALLOWED_PROVIDERS", policy)
    mlflow_providers_expected = sorted(mlflow_providers.get_all_providers())
    assert mlflow_providers_expected == ["bedrock", "openai", "vertex_ai"]
    env = {"TABLE_NAME": unique("gw"), "BUCKET_NAME": unique("gw"), "MLFLOW_GATEWAY_ALLOWED_PROVIDERS": policy}
    with runtime_process(env) as url:
        assert _ok(url, f"{AJAX}/supported-providers") == {"providers": mlflow_providers_expected}
        assert _ok(url, f"{AJAX}/supported-models") == {"models": mlflow_providers.get_models()}
        assert _ok(url, f"{AJAX}/supported-models", provider="anthropic") == {"models": []}
        assert _ok(url, f"{AJAX}/provider-config", provider="amazon-bedrock") == mlflow_providers.get_provider_config_response("bedrock")
        refused = _get(url, f"{AJAX}/provider-config", provider="Anthropic")
        assert _error(refused) == (
            400,
            "INVALID_PARAMETER_VALUE",
            "Provider 'Anthropic' is not allowed by the current gateway provider policy.",
        )


def test_disabled_gateway_answers_not_implemented(server: str) -> None:
    env = {"TABLE_NAME": unique("gw"), "BUCKET_NAME": unique("gw"), "MLFLOW_ENABLE_AI_GATEWAY": "false"}
    with runtime_process(env) as url:
        for route in ROUTES:
            status, code, message = _error(_get(url, f"{AJAX}/{route}", provider="openai"))
            assert (status, code) == (501, "NOT_IMPLEMENTED"), route
            assert message is not None and "MLFLOW_ENABLE_AI_GATEWAY" in message
        # And server-info says so, so the UI hides the Judges tab, the Playground and the AI Gateway page.
        info = requests.get(f"{url}/ajax-api/3.0/mlflow/server-info", timeout=60).json()
        assert info["features_enabled"] == {"gateway": False, "scheduled_issue_detection": True}


# --- the catalog file -----------------------------------------------------------------------------------------


def test_catalog_file_is_small_deterministic_and_the_functions_format() -> None:
    from gateway import catalog

    staged = gateway_catalog.staged_catalog()
    rebuilt = gateway_catalog.build(gateway_catalog.wheel_catalog_dir(), json.loads(gzip.decompress(staged.read_bytes()))["mlflow_version"])
    assert rebuilt == staged.read_bytes()
    assert len(rebuilt) < 200_000  # vs 2.7 MB of JSON in the wheel
    assert (gateway_catalog.CATALOG_FILE, gateway_catalog.FORMAT) == (catalog.CATALOG_FILE, catalog.FORMAT)


def test_price_table_is_deterministic_and_the_runtimes_format() -> None:
    from gateway_runtime import pricing

    staged = gateway_catalog.staged_prices()
    data = json.loads(gzip.decompress(staged.read_bytes()))
    assert gateway_catalog.build_prices(gateway_catalog.wheel_catalog_dir(), data["mlflow_version"]) == staged.read_bytes()
    assert (gateway_catalog.PRICES_FILE, gateway_catalog.PRICES_FORMAT) == (pricing.PRICES_FILE, pricing.FORMAT)
    # Per token, as MLflow's cost_per_token reads the catalog's per-million prices.
    assert data["providers"]["openai"]["gpt-4o-mini"][0] == pytest.approx(0.15 / 1_000_000)


def test_handler_import_does_not_load_the_catalog(tmp_path: Any) -> None:
    # Cold start: importing the handler must not read the catalog (here it does not even exist).
    code = "import gateway.handler, serverless_mlflow.llm_gateway.catalog_file as c; print(c.load.cache_info().currsize)"
    env = {**os.environ, "GATEWAY_MODEL_CATALOG": str(tmp_path / "missing.json.gz")}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "functions"), str(ROOT / "layers" / "shared" / "python")])
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.strip() == "0"
