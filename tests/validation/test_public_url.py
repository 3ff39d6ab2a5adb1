"""The public-URL checks (webhook targets, gateway ``api_base``, MCP icon URLs) against MLflow's own validators,
under each of their settings: same accept/reject decision, same message. Host names are IP literals and
``localhost`` (no DNS here)."""

from __future__ import annotations

import pytest
from mlflow.utils import validation as ref

from serverless_mlflow.core import public_url
from serverless_mlflow.jobs import webhook_http

from .test_validation import outcome

URLS = [
    "https://93.184.216.34/icon.png",
    "https://93.184.216.34:8443/v1",
    "http://93.184.216.34/x",
    "HTTPS://93.184.216.34/x",
    "ftp://93.184.216.34/x",
    "https://127.0.0.1/x",
    "https://localhost/x",
    "https://10.1.2.3/x",
    "https://169.254.169.254/latest/meta-data",
    "https://[::1]/x",
    "https://[::ffff:10.0.0.1]/x",
    "https://[64:ff9b::a00:1]/x",
    "https://[2002:a00:1::]/x",
    "https://127.1/x",
    "https://0177.0.0.1/x",
    "https://u:p@93.184.216.34/x",
    "https://:p@93.184.216.34/x",
    "https:///x",
    "https://[::1/x",
    "",
    "   ",
    7,
    None,
]

SETTINGS = [
    {},
    {"schemes": "http,https"},
    {"schemes": " HTTP , https "},
    {"private": "true"},
    {"private": "1", "schemes": "http"},
    {"domains": "93.184.*"},
    {"domains": "*.example.com, 93.184.216.34"},
    {"domains": "other.example", "private": "true"},
]


def _env(monkeypatch: pytest.MonkeyPatch, prefix: str, setting: dict[str, str]) -> None:
    for key, name in (("schemes", "ALLOWED_SCHEMES"), ("private", "ALLOW_PRIVATE_IPS"), ("domains", "ALLOWED_DOMAINS")):
        if key in setting:
            monkeypatch.setenv(f"{prefix}_{name}", setting[key])
        else:
            monkeypatch.delenv(f"{prefix}_{name}", raising=False)


@pytest.mark.parametrize("setting", SETTINGS, ids=str)
def test_icon_urls_as_mlflow(monkeypatch: pytest.MonkeyPatch, setting: dict[str, str]) -> None:
    _env(monkeypatch, "MLFLOW_ICON_URL", setting)
    for url in URLS:
        expected = outcome(ref._validate_mcp_icon_url, url)
        assert outcome(public_url.validate_icon_url, url) == expected, url


@pytest.mark.parametrize("setting", [s for s in SETTINGS if "domains" not in s], ids=str)
def test_gateway_api_base_as_mlflow(monkeypatch: pytest.MonkeyPatch, setting: dict[str, str]) -> None:
    _env(monkeypatch, "MLFLOW_GATEWAY_API_BASE", setting)
    for url in URLS:
        expected = outcome(ref._validate_gateway_api_base, url)
        assert outcome(public_url.validate_gateway_api_base, url) == expected, url


@pytest.mark.parametrize("setting", [s for s in SETTINGS if "domains" not in s], ids=str)
def test_webhook_urls_as_mlflow(monkeypatch: pytest.MonkeyPatch, setting: dict[str, str]) -> None:
    _env(monkeypatch, "MLFLOW_WEBHOOK", setting)
    # The server reads these from its settings (the stored item, else the environment): tests/webhooks/test_settings.
    schemes = [part.strip() for part in setting.get("schemes", "https").split(",")]
    private = setting.get("private", "false") in ("true", "1")
    for url in URLS:
        expected = outcome(ref._validate_webhook_url, url)
        assert outcome(webhook_http.check_url, url, schemes, private) == expected, url
