"""MLflow's checks that a URL the server will call is public (``utils/validation.py``), with its messages.

Webhook targets, AI gateway ``api_base`` values and MCP icon URLs are fetched by the server (or by browsers it
hands them to), so a caller must not aim them at private, loopback or link-local addresses (SSRF). Each caller
names its field and passes its own settings, as MLflow's validators do.
"""

from __future__ import annotations

import fnmatch
import ipaddress
import os
import socket
import urllib.parse
from collections.abc import Iterable
from typing import Any

from serverless_mlflow.core.errors import invalid

_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")


def is_public_ip(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    """MLflow's ``_is_public_ip``: IPv6 transition formats are judged by the IPv4 address they carry."""
    if isinstance(ip, ipaddress.IPv6Address):
        embedded = ip.ipv4_mapped or ip.sixtofour
        if embedded is None and ip in _NAT64:
            embedded = ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
        if embedded is not None:
            ip = embedded
    return ip.is_global


def require_public_host(hostname: str, field: str) -> None:
    """MLflow's ``_validate_hostname_resolves_to_public_ips``: every address the name resolves to is public."""
    try:
        infos = socket.getaddrinfo(hostname, None)
    except (socket.gaierror, UnicodeError, ValueError) as error:
        raise invalid(f"Cannot resolve {field} hostname {hostname!r}: {error}") from None
    for info in infos:
        try:
            ip = ipaddress.ip_address(info[4][0])
        except ValueError as error:
            raise invalid(f"{field} hostname {hostname!r} resolved to an invalid IP address: {error}") from None
        if not is_public_ip(ip):
            raise invalid(f"{field} must not resolve to a non-public IP address. {hostname!r} resolves to {ip}.")


def validate(url: Any, field: str, schemes: Iterable[str], allow_private_ips: bool) -> str:
    """MLflow's ``_validate_public_https_url``; answers the hostname."""
    if not isinstance(url, str):
        raise invalid(f"{field} must be a string, got {type(url).__name__!r}")
    if not url.strip():
        raise invalid(f"{field} cannot be empty or just whitespace: {url!r}")
    try:
        parsed = urllib.parse.urlparse(url)
        hostname = parsed.hostname
    except ValueError as error:
        raise invalid(f"Invalid {field} {url!r}: {error!r}") from None
    allowed = {scheme.lower() for scheme in schemes}
    if parsed.scheme not in allowed:
        listed = ", ".join(f"{scheme!r}" for scheme in sorted(allowed))
        raise invalid(f"Invalid {field} scheme: {parsed.scheme!r}. Allowed schemes are: {listed}.")
    if parsed.username or parsed.password:
        raise invalid(f"{field} must not include embedded credentials: {url!r}")
    if not hostname:
        raise invalid(f"{field} must include a hostname: {url!r}")
    if ":" in hostname or hostname.replace(".", "").isdigit():
        # Legacy numeric spellings (127.1, 0177.0.0.1) are refused: resolvers read them differently.
        try:
            ipaddress.ip_address(hostname)
        except ValueError:
            raise invalid(f"{field} host {hostname!r} is not a canonical IP address literal.") from None
    if not allow_private_ips:
        require_public_host(hostname, field)
    return hostname


def _env_list(name: str, default: list[str] | None) -> list[str] | None:
    raw = os.environ.get(name)
    return [part.strip() for part in raw.split(",")] if raw is not None else default


def _env_flag(name: str) -> bool:
    return os.environ.get(name, "false").strip().lower() in ("true", "1")


def validate_gateway_api_base(url: Any) -> None:
    """MLflow's ``_validate_gateway_api_base``, under its settings."""
    schemes = _env_list("MLFLOW_GATEWAY_API_BASE_ALLOWED_SCHEMES", ["https"]) or []
    validate(url, "Gateway secret api_base", schemes, _env_flag("MLFLOW_GATEWAY_API_BASE_ALLOW_PRIVATE_IPS"))


def validate_icon_url(url: Any) -> None:
    """MLflow's ``_validate_mcp_icon_url``, under its settings (the domain allowlist included)."""
    schemes = _env_list("MLFLOW_ICON_URL_ALLOWED_SCHEMES", ["https"]) or []
    hostname = validate(url, "Icon URL", schemes, _env_flag("MLFLOW_ICON_URL_ALLOW_PRIVATE_IPS"))
    domains = _env_list("MLFLOW_ICON_URL_ALLOWED_DOMAINS", None)
    if domains and not any(fnmatch.fnmatch(hostname.lower(), pattern.lower()) for pattern in domains):
        raise invalid(f"Icon URL host {hostname!r} is not in the allowed domain list: {', '.join(domains)}.")
