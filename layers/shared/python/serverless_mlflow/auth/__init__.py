"""MLflow-compatible basic auth (``AUTHORIZATION=basic``): who the caller is, and whether the operation may run.

The API Gateway Lambda authorizer (``authorizer.py``) checks the credentials and passes the identity in the
request context; ``enforce`` (called by ``api.build_app`` around every operation) applies the rule table
(``rules/``). In the other modes (``iam``, ``none``) nothing here runs.

May import: core, request, storage, store, llm_gateway.
"""

from __future__ import annotations

import os

BASIC = "basic"


def mode() -> str:
    return os.environ.get("AUTHORIZATION", "iam").lower()


def basic_enabled() -> bool:
    return mode() == BASIC
