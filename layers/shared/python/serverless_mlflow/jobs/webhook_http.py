"""Sending a webhook request as MLflow does (mlflow/webhooks/delivery.py, ssrf.py, utils/validation.py).

* The URL is checked as MLflow checks it: scheme in ``MLFLOW_WEBHOOK_ALLOWED_SCHEMES`` (default ``https``),
  a hostname, and unless ``MLFLOW_WEBHOOK_ALLOW_PRIVATE_IPS`` every address it resolves to public.
* The connection's peer address is checked again right after ``connect()``, before a byte is sent
  (``checked_http``), so a DNS answer that changes between the check and the request (rebinding) cannot reach a
  private address.
* The body is MLflow's envelope ``{"entity", "action", "timestamp", "data"}``; the headers carry the delivery
  id and timestamp, and ``X-MLflow-Signature: v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<body>">`` when the
  webhook has a secret.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import ipaddress
import json
import time
import urllib.parse
from datetime import UTC, datetime
from typing import Any

from urllib3.util import Timeout

from serverless_mlflow.core import checked_http, public_url
from serverless_mlflow.core.errors import invalid
from serverless_mlflow.request import workspace as request_workspace
from serverless_mlflow.store import settings

SIGNATURE_HEADER = "X-MLflow-Signature"
TIMESTAMP_HEADER = "X-MLflow-Timestamp"
DELIVERY_ID_HEADER = "X-MLflow-Delivery-Id"
SIGNATURE_VERSION = "v1"


# The connection reached a non-public address: the delivery fails closed (never retried as sent).
BlockedAddress = checked_http.BlockedAddress


def _allow_private() -> bool:
    return bool(settings.get("MLFLOW_WEBHOOK_ALLOW_PRIVATE_IPS"))


def validate_url(url: Any) -> None:
    """MLflow's ``_validate_webhook_url`` under the server's settings."""
    check_url(url, settings.get("MLFLOW_WEBHOOK_ALLOWED_SCHEMES"), _allow_private())


def check_url(url: Any, schemes: list[str], allow_private_ips: bool) -> None:
    """MLflow's ``_validate_webhook_url``, with its messages."""
    if not isinstance(url, str):
        raise invalid(f"Webhook URL must be a string, got {type(url).__name__!r}")
    if not url.strip():
        raise invalid(f"Webhook URL cannot be empty or just whitespace: {url!r}")
    try:
        parsed = urllib.parse.urlparse(url)
        hostname = parsed.hostname
    except ValueError as error:
        raise invalid(f"Invalid webhook URL {url!r}: {error!r}") from None
    if parsed.scheme not in schemes:
        raise invalid(f"Invalid webhook URL scheme: {parsed.scheme!r}. Allowed schemes are: {', '.join(schemes)}.")
    if not hostname:
        raise invalid(f"Webhook URL must include a hostname: {url!r}")
    if not allow_private_ips:
        public_url.require_public_host(hostname, "Webhook URL")


def envelope(entity: str, action: str, payload: dict[str, Any], webhook: dict[str, Any]) -> str:
    """The JSON body MLflow sends (``_send_webhook_request``), as text (the signature covers these bytes). With
    workspaces enabled it names the webhook's workspace, as MLflow's does."""
    body: dict[str, Any] = {"entity": entity, "action": action, "timestamp": datetime.now(UTC).isoformat(), "data": payload}
    if request_workspace.enabled():
        body["workspace"] = webhook.get("workspace") or request_workspace.DEFAULT_WORKSPACE
    return json.dumps(body)


def signature(secret: str, delivery_id: str, timestamp: str, body: str) -> str:
    digest = hmac.new(secret.encode("utf-8"), f"{delivery_id}.{timestamp}.{body}".encode(), hashlib.sha256).digest()
    return f"{SIGNATURE_VERSION},{base64.b64encode(digest).decode('utf-8')}"


def headers(delivery_id: str, body: str, secret: str | None) -> dict[str, str]:
    timestamp = str(int(time.time()))
    out = {"Content-Type": "application/json", DELIVERY_ID_HEADER: delivery_id, TIMESTAMP_HEADER: timestamp}
    if secret:
        out[SIGNATURE_HEADER] = signature(secret, delivery_id, timestamp, body)
    return out


def _check_peer(_host: str, ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> None:
    if not _allow_private() and not public_url.is_public_ip(ip):
        raise BlockedAddress(f"Webhook connection blocked: {ip} is not a public IP address. This may indicate a DNS rebinding attempt.")


_CheckedHTTPPool, _CheckedHTTPSPool = checked_http.pool_classes(_check_peer, "webhook")


def post(url: str, body: str, request_headers: dict[str, str], timeout: float | None = None) -> tuple[int, str]:
    """POST once (retries are the caller's: SQS redelivery); (status, body text). Raises on network errors."""
    validate_url(url)
    parsed = urllib.parse.urlparse(url)
    pool_class = _CheckedHTTPSPool if parsed.scheme == "https" else _CheckedHTTPPool
    seconds = float(timeout if timeout is not None else settings.get("MLFLOW_WEBHOOK_REQUEST_TIMEOUT"))
    pool = pool_class(parsed.hostname, port=parsed.port, timeout=Timeout(connect=seconds, read=seconds), retries=False, maxsize=1)
    target = parsed.path or "/"
    if parsed.query:
        target += "?" + parsed.query
    try:
        response = pool.urlopen("POST", target, body=body.encode("utf-8"), headers=request_headers, redirect=False, preload_content=True)
        return response.status, response.data.decode("utf-8", errors="replace")
    finally:
        pool.close()
