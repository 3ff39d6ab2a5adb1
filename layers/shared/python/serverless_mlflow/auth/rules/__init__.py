"""Who may call what: one row per operation of ``routes.ROUTES`` (MLflow's BEFORE_REQUEST_VALIDATORS and
AFTER_REQUEST_HANDLERS, mlflow/server/auth/__init__.py), applied centrally by ``api.build_app``.

A feature adds a route and, with it, a row in the section of its area (``tracking``, ``genai``, ``platform``):
the check that must pass before the operation runs, and optionally what runs after it (grant MANAGE to a
creator, filter a search). An operation without a row is admin-only (fail closed, as MLflow's
MLFLOW_BASIC_AUTH_FAIL_CLOSED), so a new route is never open by accident. ``PUBLIC`` operations need no
credentials at all (MLflow's unprotected routes).
"""

from __future__ import annotations

from serverless_mlflow.auth.checks import admin
from serverless_mlflow.auth.rules.common import Prepare, Rule
from serverless_mlflow.auth.rules.genai import GENAI_RULES
from serverless_mlflow.auth.rules.platform import PLATFORM_RULES
from serverless_mlflow.auth.rules.tracking import TRACKING_RULES
from serverless_mlflow.request.routes import PUBLIC_OPERATIONS

__all__ = ["FAIL_CLOSED", "PUBLIC", "RULES", "Prepare", "Rule", "rule_for"]

PUBLIC = PUBLIC_OPERATIONS

# The sections name disjoint operations (tests/auth/test_unauthenticated.py), so the merge drops no row.
RULES: dict[str, Rule] = {**TRACKING_RULES, **GENAI_RULES, **PLATFORM_RULES}

FAIL_CLOSED = Rule(admin)


def rule_for(operation: str) -> Rule:
    return RULES.get(operation, FAIL_CLOSED)
