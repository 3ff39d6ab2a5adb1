"""API Gateway's Lambda authorizer, emulated for ``AUTHORIZATION=basic`` (what the deployed HTTP API does).

Routes other than the public ones (``routes.PUBLIC_OPERATIONS``) carry the authorizer, whose identity
source is the ``Authorization`` header: without the header API Gateway answers 401 ``{"message":
"Unauthorized"}`` itself (no ``WWW-Authenticate``: it cannot add one), otherwise it invokes the authorizer
function (with that function's IAM rights) and caches its answer per header value for
``AUTHORIZER_CACHE_SECONDS`` (the stack's TTL by default), then passes the context to the route's function
as ``requestContext.authorizer.lambda``.
"""

from __future__ import annotations

import hashlib
import os
import threading
import time
from typing import Any

from local import iam
from local.events import LambdaContext, json_response
from serverless_mlflow.auth.authorizer import lambda_handler

# The deployed authorizer's result TTL (infra/constructs/api.py reads the same constant).
CACHE_SECONDS = 60  # = infra.constructs.api.AUTHORIZER_CACHE_SECONDS (tests/infra checks they agree)
UNAUTHORIZED = json_response(401, '{"message":"Unauthorized"}')


class Authorizer:
    def __init__(self) -> None:
        self.ttl = float(os.environ.get("AUTHORIZER_CACHE_SECONDS", CACHE_SECONDS))
        self._cache: dict[str, tuple[float, dict[str, Any]]] = {}
        self._lock = threading.Lock()

    def context_for(self, headers: dict[str, str], route_arn: str) -> dict[str, Any] | None:
        """The authorizer's context for this request; None when API Gateway would answer 401 itself."""
        header = next((v for k, v in headers.items() if k.lower() == "authorization"), "")
        if not header:
            return None
        # Keyed by a digest: the cache never holds the credentials themselves.
        cache_key = hashlib.sha256(header.encode("utf-8")).hexdigest()
        now = time.monotonic()
        with self._lock:
            cached = self._cache.get(cache_key)
        if cached and cached[0] > now:
            return cached[1]
        event = {
            "version": "2.0",
            "type": "REQUEST",
            "routeArn": route_arn,
            "identitySource": [header],
            "headers": {"authorization": header},
        }
        with iam.acting_as("authorizer"):
            answer = lambda_handler(event, LambdaContext("authorizer"))
        context = answer.get("context") or {}
        if self.ttl > 0:
            with self._lock:
                self._cache[cache_key] = (now + self.ttl, context)
        return context
