"""Gateway budget policies (SqlAlchemyGatewayStoreMixin's budget methods) and the spend of their windows.

Policies are small items of the workspace's gateway partition (``B#``); the runtime reads them on every call
and ADDs each call's cost to the current window of the policies covering it (``gateway_budget_window``). Unlike
MLflow, a new policy's first window starts from the spend recorded after it exists (MLflow backfills the
window from earlier trace costs).
"""

from __future__ import annotations

import time
import uuid
from typing import Any

from serverless_mlflow import clock, table
from serverless_mlflow.errors import invalid, not_found
from serverless_mlflow.llm_gateway import budget_windows, records
from serverless_mlflow.llm_gateway.records import WORKSPACE
from serverless_mlflow.schema import ENTITY

POLICY = ENTITY["gateway_budget_policy"]
WINDOW = ENTITY["gateway_budget_window"]
UNITS = ("USD",)
DURATION_UNITS = ("MINUTES", "HOURS", "DAYS", "WEEKS", "MONTHS")
SCOPES = ("GLOBAL", "WORKSPACE", "ENDPOINT", "USER")
ACTIONS = ("ALERT", "REJECT")


def _enum(name: str, value: Any, allowed: tuple[str, ...]) -> str:
    if isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= len(allowed):
        value = allowed[value - 1]
    if value not in allowed:
        raise invalid(f"Invalid {name}: {value}")
    return str(value)


def policy_json(item: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {
        "budget_policy_id": item["budget_policy_id"],
        "budget_unit": item["budget_unit"],
        "budget_amount": float(item["budget_amount"]),
        "duration": {"unit": item["duration_unit"], "value": int(item["duration_value"])},
        "target_scope": item["target_scope"],
        "budget_action": item["budget_action"],
        "created_by": item.get("created_by") or "",
        "created_at": int(item["created_at"]),
        "last_updated_by": item.get("last_updated_by") or "",
        "last_updated_at": int(item["last_updated_at"]),
    }
    if item.get("target_value"):
        out["target_value"] = item["target_value"]
    return out


def create_policy(msg: dict[str, Any]) -> dict[str, Any]:
    duration = msg.get("duration") or {}
    scope = _enum("target_scope", msg["target_scope"], SCOPES)
    target_value = msg.get("target_value") or None
    if scope in ("ENDPOINT", "USER") and not target_value:
        raise invalid(f"target_value is required when target_scope is {scope}")
    value = duration.get("value")
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise invalid("duration.value must be a positive integer")
    amount = msg["budget_amount"]
    if not isinstance(amount, int | float) or isinstance(amount, bool) or amount != amount or amount < 0 or amount == float("inf"):
        raise invalid(f"Invalid budget_amount: {amount}")
    now = clock.now_millis()
    policy_id = f"bp-{uuid.uuid4().hex}"
    attributes = {
        "budget_policy_id": policy_id,
        "budget_unit": _enum("budget_unit", msg["budget_unit"], UNITS),
        "budget_amount": repr(float(amount)),  # floats are stored as text
        "duration_unit": _enum("duration.unit", duration.get("unit"), DURATION_UNITS),
        "duration_value": value,
        "target_scope": scope,
        "target_value": target_value,
        "budget_action": _enum("budget_action", msg["budget_action"], ACTIONS),
        "created_at": now,
        "last_updated_at": now,
        "created_by": msg.get("created_by") or None,
        "last_updated_by": msg.get("created_by") or None,
    }
    item = POLICY.item(attributes, workspace=WORKSPACE, budget_policy_id=policy_id)
    table.put(item, condition="attribute_not_exists(pk)")
    return policy_json(item)


def _missing(policy_id: str) -> Exception:
    return not_found(f"BudgetPolicy not found (budget_policy_id='{policy_id}')")


def get_policy(policy_id: str) -> dict[str, Any]:
    item = table.get(POLICY.key(workspace=WORKSPACE, budget_policy_id=policy_id)) if policy_id else None
    if item is None:
        raise _missing(policy_id)
    return policy_json(item)


def delete_policy(policy_id: str) -> None:
    try:
        table.delete(POLICY.key(workspace=WORKSPACE, budget_policy_id=policy_id), condition="attribute_exists(pk)")
    except table.ConditionFailed:
        raise _missing(policy_id) from None


def list_policies() -> list[dict[str, Any]]:
    return [policy_json(item) for item in records.query_kind(POLICY.sk_prefix())]


def list_windows() -> list[dict[str, Any]]:
    """The current window of every policy with its recorded spend (one BatchGetItem of the windows)."""
    policies = records.query_kind(POLICY.sk_prefix())
    now = time.time()
    starts = {p["budget_policy_id"]: _window(p, now) for p in policies}
    keys = [WINDOW.key(workspace=WORKSPACE, budget_policy_id=pid, window_start=start) for pid, (start, _) in starts.items()]
    spent = {item["budget_policy_id"]: int(item.get("spend_nano_usd") or 0) / 1e9 for item in (table.batch_get(keys) if keys else [])}
    return [
        {"budget_policy_id": pid, "window_start_ms": start * 1000, "window_end_ms": end * 1000, "current_spend": spent.get(pid, 0.0)}
        for pid, (start, end) in starts.items()
    ]


def _window(policy: dict[str, Any], now: float) -> tuple[int, int]:
    return budget_windows.window_of(policy["duration_unit"], int(policy["duration_value"]), now)
