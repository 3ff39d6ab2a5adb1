"""The UI's ``gateway-proxy``: MLflow's proxy to an MLflow deployments server (``MLFLOW_DEPLOYMENTS_TARGET``).

Without a target MLflow's server pretends an empty deployments server runs (``{"endpoints": []}``); with one it
forwards two kinds of request, listing endpoints (GET ``api/2.0/endpoints``) and invoking one (POST
``gateway/<name>/invocations``), and answers what the target answers. The target is a setting
(``serverless_mlflow.store.settings``: stored with ``python -m tools.settings set``, or the function's environment),
so a team with a deployments server points the stack at it without a redeploy. A proxied answer is a small JSON
document, never artifact bytes.

The target URL is built as MLflow's ``requests`` call builds it: characters a URL cannot hold (a space, CR, LF)
percent-encoded, dot segments resolved (``gateway/../x`` reaches ``x``, not a literal ``..``). A target that
cannot be reached answers an error that does not name it (the target is operator configuration; MLflow's server
answers a bare 500 there).
"""

from __future__ import annotations

import json
import logging
import re
import urllib.error
import urllib.request
from typing import Any

from urllib3.util import parse_url

from serverless_mlflow.core.errors import MlflowError, invalid
from serverless_mlflow.store import settings

from .assistant import EMPTY_GATEWAY

TARGET_SETTING = "MLFLOW_DEPLOYMENTS_TARGET"
# Below API Gateway's 30 s integration limit, so a slow target is answered as MLflow's error, not a gateway 503.
TIMEOUT_SECONDS = 25.0
UNREACHABLE = "Deployments proxy request failed: the deployments server could not be reached."

log = logging.getLogger(__name__)


def validate_gateway_path(method: str, gateway_path: str | None) -> str:
    """MLflow's ``_validate_gateway_path``: the two paths the UI may reach on the target."""
    if not gateway_path:
        raise invalid("Deployments proxy request must specify a gateway_path.")
    stripped = gateway_path.strip("/")
    allowed = stripped == "api/2.0/endpoints" if method == "GET" else bool(re.fullmatch(r"gateway/[^/]+/invocations", stripped))
    if method in ("GET", "POST") and not allowed:
        raise invalid(f"Invalid gateway_path: {gateway_path} for method: {method}")
    return gateway_path


def proxy(method: str, message: dict[str, Any]) -> dict[str, Any]:
    target = settings.get(TARGET_SETTING)
    if not target:
        return EMPTY_GATEWAY
    gateway_path = validate_gateway_path(method, message.get("gateway_path"))
    json_data = message.get("json_data")
    body = None if json_data is None else json.dumps(json_data).encode("utf-8")
    headers = {"Content-Type": "application/json"} if body is not None else {}
    url = parse_url(f"{target}/{gateway_path}").url  # encoded and normalised, as requests (urllib3) does
    request = urllib.request.Request(url, data=body, headers=headers, method=method)
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_SECONDS) as response:
            status, text = response.status, response.read().decode("utf-8", errors="replace")
    except urllib.error.HTTPError as error:
        status, text = error.code, error.read().decode("utf-8", errors="replace")
    except (urllib.error.URLError, TimeoutError, OSError, ValueError) as error:
        log.warning("deployments proxy request to %s failed: %s", target, error)
        raise MlflowError(UNREACHABLE) from error
    if status == 200:
        try:
            return json.loads(text)
        except ValueError as error:
            raise MlflowError(f"Deployments proxy request returned a body that is not JSON: {text[:200]}") from error
    # MLflow raises MlflowException(error_code=<HTTP status>), which no error code names: INTERNAL_ERROR.
    raise MlflowError(f"Deployments proxy request failed with error code {status}. Error message: {text}")
