"""MLflow's checks of gateway secrets (``utils/validation.py``): reserved keys and a public HTTPS ``api_base``.

The gateway sends provider requests to ``auth_config["api_base"]``, so MLflow refuses URLs that would let a
caller aim it at private addresses (SSRF); the same texts are answered here.
"""

from __future__ import annotations

from typing import Any

from serverless_mlflow.core import public_url
from serverless_mlflow.core.errors import invalid

GATEWAY_DESTINATION_KEYS = frozenset({"api_base", "base_url", "model_list", "fallbacks", "custom_llm_provider"})
_AUTH_CONFIG_RESERVED = GATEWAY_DESTINATION_KEYS - {"api_base"}
_SECRET_VALUE_RESERVED = GATEWAY_DESTINATION_KEYS
_API_BASE = "Gateway secret api_base"


def validate_secret_value(secret_value: dict[str, Any] | None) -> None:
    if not secret_value:
        return
    if reserved := sorted(_SECRET_VALUE_RESERVED & set(secret_value)):
        raise invalid(
            f"secret_value must not contain {', '.join(map(repr, reserved))}: these keys "
            "choose where the gateway sends requests. Set the upstream with 'api_base' in "
            "auth_config, where it is validated."
        )


def validate_auth_config(auth_config: dict[str, Any] | None) -> dict[str, Any] | None:
    """A normalized copy (blank ``api_base`` dropped, stripped); None for an empty map."""
    if not auth_config:
        return None
    normalized = dict(auth_config)
    if reserved := sorted(_AUTH_CONFIG_RESERVED & set(normalized)):
        raise invalid(
            f"auth_config must not contain {', '.join(map(repr, reserved))}: these LiteLLM "
            "options choose where the gateway sends requests. Set the upstream with "
            "'api_base', which is validated."
        )
    api_base = normalized.get("api_base")
    if isinstance(api_base, str):
        api_base = api_base.strip()
    if not api_base:
        normalized.pop("api_base", None)
        return normalized
    public_url.validate_gateway_api_base(api_base)
    normalized["api_base"] = api_base
    return normalized
