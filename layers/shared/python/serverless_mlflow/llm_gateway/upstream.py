"""HTTP to the LLM providers, with MLflow's error answers (``mlflow/gateway/providers/utils.py``).

MLflow's gateway answers a failed provider call with FastAPI's ``{"detail": ...}`` and the provider's status;
an unreachable provider or an unsupported body is a 502; a call past ``MLFLOW_GATEWAY_ROUTE_TIMEOUT_SECONDS``
(300 s by default; here capped by the function's own time) is a 504. Requests go through urllib3 (shipped with
botocore on Lambda): no aiohttp, no mlflow on the request path.

SSRF, as MLflow's ``mlflow/gateway/ssrf.py``: ``api_base`` is checked on write (``public_url``), and again at
connect time, since a stored value can predate the check and a DNS answer can change after it (rebinding). Unless
``MLFLOW_GATEWAY_API_BASE_ALLOW_PRIVATE_IPS`` is on, a call to a host other than a provider's built-in base, and
every raw-proxy call (its caller chooses the path), goes through connections whose peer address must be public
(``checked_http``), and a numeric host must be a canonical IP literal. A refused connection answers MLflow's 502.
Redirects are never followed (a redirect could steer a request at an internal address).
"""

from __future__ import annotations

import ipaddress
import json
import logging
import os
import time
import urllib.parse
from collections.abc import Iterator
from contextvars import ContextVar
from typing import Any

import urllib3

from serverless_mlflow.core import checked_http, public_url

# MLflow strips these before any upstream call; hop-by-hop headers of the client's own connection go too.
_STRIPPED_HEADERS = frozenset(
    {"accept-encoding", "content-encoding", "x-mlflow-authorization", "connection", "keep-alive", "transfer-encoding", "te", "upgrade"}
)
STREAMING_CONTENT_TYPES = frozenset({"text/event-stream", "application/x-ndjson"})
log = logging.getLogger(__name__)
# Time spent waiting for providers in the current request (MLflow's provider_call_duration_ms).
provider_call_ms: ContextVar[float] = ContextVar("provider_call_ms", default=0.0)

_POOL_OPTIONS: dict[str, Any] = {"num_pools": 16, "maxsize": 8, "retries": False}
_pool = urllib3.PoolManager(**_POOL_OPTIONS)
# Origins (scheme://host:port) of the providers' built-in base URLs: operator code, like MLflow's typed routes,
# so not guarded (Ollama's is localhost). Providers declare them with ``builtin_base``.
_BUILTIN_ORIGINS: set[tuple[str, str, int | None]] = set()


class GatewayHTTPError(Exception):
    """An error MLflow's gateway answers ``{"detail": detail}`` with ``status``: its ``AIGatewayException`` (a
    provider's own refusal; ``str()`` is the detail) or, for a provider's HTTP error answer, FastAPI's
    ``HTTPException`` (``str()`` is ``"<status>: <detail>"``). Traces and SSE error chunks show the difference."""

    def __init__(self, status: int, detail: Any, mlflow_type: str = "AIGatewayException") -> None:
        super().__init__(str(detail))
        self.status = status
        self.detail = detail
        self.mlflow_type = mlflow_type

    def __str__(self) -> str:
        return f"{self.status}: {self.detail}" if self.mlflow_type == "HTTPException" else str(self.detail)


def http_error(status: int, detail: Any) -> GatewayHTTPError:
    return GatewayHTTPError(status, detail, "HTTPException")


def builtin_base(url: str) -> str:
    _BUILTIN_ORIGINS.add(_origin(url))
    return url


def _origin(url: str) -> tuple[str, str, int | None]:
    parsed = urllib.parse.urlsplit(url)
    return parsed.scheme.lower(), (parsed.hostname or "").lower(), parsed.port


def _allow_private() -> bool:
    return os.environ.get("MLFLOW_GATEWAY_API_BASE_ALLOW_PRIVATE_IPS", "false").strip().lower() in ("true", "1")


def _refuse_private_peer(host: str, ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> None:
    if not public_url.is_public_ip(ip):
        raise checked_http.BlockedAddress(
            f"Gateway upstream connection blocked: {host!r} resolves to {ip}, which is not a public IP address. "
            "Set MLFLOW_GATEWAY_API_BASE_ALLOW_PRIVATE_IPS=true to allow private upstreams."
        )


_guarded_pool = checked_http.pool_manager(_refuse_private_peer, "gateway upstream", **_POOL_OPTIONS)


def _pool_for(url: str, raw_proxy: bool) -> urllib3.PoolManager:
    """MLflow's ``_enable_upstream_ssrf_protection`` and ``assert_public_upstream_url``: the guarded pool for a
    user-chosen destination or the raw proxy, after refusing a numeric host that is not a canonical literal."""
    if _allow_private() or (not raw_proxy and _origin(url) in _BUILTIN_ORIGINS):
        return _pool
    hostname = urllib.parse.urlsplit(url).hostname or ""
    if ":" in hostname or hostname.replace(".", "").isdigit():
        try:
            ipaddress.ip_address(hostname)
        except ValueError:
            raise http_error(502, f"Gateway upstream host {hostname!r} is not a canonical IP address literal.") from None
    return _guarded_pool


def timeout_seconds() -> float:
    return float(os.environ.get("MLFLOW_GATEWAY_ROUTE_TIMEOUT_SECONDS") or 300)


def join(base_url: str, path: str) -> str:
    """MLflow's ``append_to_uri_path``: one slash between the two."""
    return base_url.rstrip("/") + "/" + path.lstrip("/") if path else base_url


def _headers(headers: dict[str, str]) -> dict[str, str]:
    out = {k: v for k, v in headers.items() if k.lower() not in _STRIPPED_HEADERS}
    out["Accept-Encoding"] = "gzip, deflate, identity"
    if not any(k.lower() == "content-type" for k in out):
        out["Content-Type"] = "application/json"
    return out


def _send(url: str, headers: dict[str, str], payload: dict[str, Any], stream: bool, raw_proxy: bool = False) -> urllib3.BaseHTTPResponse:
    pool = _pool_for(url, raw_proxy)
    try:
        return pool.request(
            "POST",
            url,
            body=json.dumps(payload).encode("utf-8"),
            headers=_headers(headers),
            timeout=urllib3.Timeout(connect=10.0, read=timeout_seconds()),
            redirect=False,
            preload_content=not stream,
            decode_content=True,
        )
    except checked_http.BlockedAddress as error:
        raise http_error(502, str(error)) from None
    except urllib3.exceptions.ReadTimeoutError as error:
        raise http_error(504, f"The provider did not answer within {timeout_seconds():g} seconds.") from error
    except urllib3.exceptions.HTTPError as error:
        # urllib3's text names the provider's host and port (an endpoint's api_base is an admin's configuration):
        # the caller learns what failed, the logs where.
        log.warning("gateway upstream request to %s failed: %s", url, error)
        failure = type(getattr(error, "reason", None) or error).__name__
        raise http_error(502, f"The provider could not be reached ({failure}).") from error


def _json_or_none(raw: bytes) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return None


def error_detail(body: Any) -> str:
    """MLflow's ``_error_detail``: the most specific message an upstream error body carries."""
    match body:
        case {"error": {"message": str(message)}} if message:
            return message
        case {"message": str(message)} if message:
            return message
    return str(body) if body else ""


def _raise_for_status(response: urllib3.BaseHTTPResponse) -> None:
    if response.status < 400:
        return
    raw = response.data if response.data is not None else response.read()
    body = _json_or_none(raw)
    detail = error_detail(body) if body is not None else (raw.decode("utf-8", "replace") or response.reason or "")
    raise http_error(response.status, detail or response.reason or "")


def post_json(url: str, headers: dict[str, str], payload: dict[str, Any]) -> Any:
    """MLflow's ``send_request``: the provider's JSON, or its error as ``GatewayHTTPError``."""
    start = time.perf_counter()
    try:
        response = _send(url, headers, payload, stream=False)
        content_type = response.headers.get("Content-Type") or ""
        if "application/json" in content_type:
            body = _json_or_none(response.data)
        elif "text/plain" in content_type:
            body = {"message": response.data.decode("utf-8", "replace")}
        else:
            raise http_error(
                502, f"The returned data type from the route service is not supported. Received content type: {content_type or None}"
            )
        if response.status >= 400:
            if isinstance(body, dict) and "error" in body:
                error = body["error"]
                detail = error.get("message", response.reason) if isinstance(error, dict) else body
            else:
                detail = body
            raise http_error(response.status, detail)
        return body
    finally:
        provider_call_ms.set(provider_call_ms.get() + (time.perf_counter() - start) * 1000)


def post_stream(url: str, headers: dict[str, str], payload: dict[str, Any]) -> Iterator[bytes]:
    """MLflow's ``send_stream_request``: the response's lines as they arrive. Like MLflow's async generator,
    the request is sent (and a refusal raised) when the first line is asked for."""
    response = _send(url, headers, payload, stream=True)
    _raise_for_status(response)
    yield from _lines(response)


def _lines(response: urllib3.BaseHTTPResponse) -> Iterator[bytes]:
    buffer = b""
    try:
        for chunk in response.stream(8192):
            buffer += chunk
            while b"\n" in buffer:
                line, buffer = buffer.split(b"\n", 1)
                yield line + b"\n"
        if buffer:
            yield buffer
    except urllib3.exceptions.ReadTimeoutError as error:
        raise http_error(504, f"The provider stopped answering for {timeout_seconds():g} seconds.") from error
    finally:
        response.release_conn()


def post_proxy(url: str, headers: dict[str, str], payload: dict[str, Any]) -> tuple[bool, Any]:
    """MLflow's ``send_proxy_request``: (streaming?, JSON or an iterator of raw lines), by the answer's type."""
    start = time.perf_counter()
    response = _send(url, headers, payload, stream=True, raw_proxy=True)
    try:
        _raise_for_status(response)
        content_type = response.headers.get("Content-Type") or "application/json"
        if content_type.split(";")[0].strip() in STREAMING_CONTENT_TYPES:
            return True, _lines(response)
        raw = response.read()
        response.release_conn()
        if "application/json" in content_type:
            return False, _json_or_none(raw)
        if "text/plain" in content_type:
            return False, {"message": raw.decode("utf-8", "replace")}
        raise http_error(502, f"Unsupported Content-Type from upstream proxy: {content_type}")
    finally:
        provider_call_ms.set(provider_call_ms.get() + (time.perf_counter() - start) * 1000)


def sse_events(lines: Iterator[bytes]) -> Iterator[tuple[str | None, str]]:
    """(event name, data) per server-sent event, from raw lines."""
    event: str | None = None
    data: list[str] = []
    for raw in lines:
        line = raw.decode("utf-8", "replace").rstrip("\r\n")
        if not line:
            if data:
                yield event, "\n".join(data)
            event, data = None, []
        elif line.startswith("event:"):
            event = line[6:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].lstrip())
    if data:
        yield event, "\n".join(data)
