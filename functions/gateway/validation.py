"""MLflow's checks of gateway secrets (``utils/validation.py``): reserved keys and a public HTTPS ``api_base``.

The gateway sends provider requests to ``auth_config["api_base"]``, so MLflow refuses URLs that would let a
caller aim it at private addresses (SSRF); the same texts are answered here.
"""

from __future__ import annotations

import ipaddress
import os
import socket
import urllib.parse
from typing import Any

from serverless_mlflow.errors import invalid

GATEWAY_DESTINATION_KEYS = frozenset({"api_base", "base_url", "model_list", "fallbacks", "custom_llm_provider"})
_AUTH_CONFIG_RESERVED = GATEWAY_DESTINATION_KEYS - {"api_base"}
_SECRET_VALUE_RESERVED = GATEWAY_DESTINATION_KEYS
_NAT64_PREFIX = ipaddress.IPv6Network("64:ff9b::/96")
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
    _validate_api_base(api_base)
    normalized["api_base"] = api_base
    return normalized


def _allowed_schemes() -> set[str]:
    raw = os.environ.get("MLFLOW_GATEWAY_API_BASE_ALLOWED_SCHEMES")
    schemes = [s.strip() for s in raw.split(",") if s.strip()] if raw else ["https"]
    return {scheme.lower() for scheme in schemes}


def _allow_private_ips() -> bool:
    return os.environ.get("MLFLOW_GATEWAY_API_BASE_ALLOW_PRIVATE_IPS", "false").strip().lower() in ("true", "1")


def _is_public(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    if isinstance(ip, ipaddress.IPv6Address):
        embedded = ip.ipv4_mapped or ip.sixtofour
        if embedded is None and ip in _NAT64_PREFIX:
            embedded = ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
        if embedded is not None:
            ip = embedded
    return ip.is_global


def _validate_api_base(url: str) -> None:
    try:
        parsed = urllib.parse.urlparse(url)
        hostname = parsed.hostname
    except ValueError as error:
        raise invalid(f"Invalid {_API_BASE} {url!r}: {error!r}") from None
    allowed = _allowed_schemes()
    if parsed.scheme not in allowed:
        scheme_list = ", ".join(f"{scheme!r}" for scheme in sorted(allowed))
        raise invalid(f"Invalid {_API_BASE} scheme: {parsed.scheme!r}. Allowed schemes are: {scheme_list}.")
    if parsed.username or parsed.password:
        raise invalid(f"{_API_BASE} must not include embedded credentials: {url!r}")
    if not hostname:
        raise invalid(f"{_API_BASE} must include a hostname: {url!r}")
    if ":" in hostname or hostname.replace(".", "").isdigit():
        try:
            ipaddress.ip_address(hostname)
        except ValueError:
            raise invalid(f"{_API_BASE} host {hostname!r} is not a canonical IP address literal.") from None
    if _allow_private_ips():
        return
    try:
        addr_infos = socket.getaddrinfo(hostname, None)
    except (socket.gaierror, UnicodeError, ValueError) as error:
        raise invalid(f"Cannot resolve {_API_BASE} hostname {hostname!r}: {error}") from None
    for addr_info in addr_infos:
        ip = ipaddress.ip_address(addr_info[4][0])
        if not _is_public(ip):
            raise invalid(f"{_API_BASE} must not resolve to a non-public IP address. {hostname!r} resolves to {ip}.")
