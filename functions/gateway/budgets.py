"""Gateway budget policies (SqlAlchemyGatewayStoreMixin's budget methods) and the spend of their windows.

Policies are small items of the workspace's gateway partition (``B#``); the runtime reads them on every call
and ADDs each call's cost to the current window of the policies covering it (``gateway_budget_window``). Unlike
MLflow, a new policy's first window starts from the spend recorded after it exists (MLflow backfills the
window from earlier trace costs).
"""

from __future__ import annotations

import math
import time
import uuid
from typing import Any

from serverless_mlflow import auth
from serverless_mlflow.core import clock
from serverless_mlflow.core.errors import MlflowError, invalid, not_found
from serverless_mlflow.llm_gateway import budget_windows, records
from serverless_mlflow.llm_gateway.records import current_workspace
from serverless_mlflow.storage import table
from serverless_mlflow.storage.schema import ENTITY

POLICY = ENTITY["gateway_budget_policy"]
WINDOW = ENTITY["gateway_budget_window"]
UNITS = ("USD",)
DURATION_UNITS = ("MINUTES", "HOURS", "DAYS", "WEEKS", "MONTHS")
SCOPES = ("GLOBAL", "WORKSPACE", "ENDPOINT", "USER")
ACTIONS = ("ALERT", "REJECT")
TARGETED = ("ENDPOINT", "USER")
ENDPOINT = ENTITY["gateway_endpoint"]


def _enum(name: str, value: Any, allowed: tuple[str, ...]) -> str:
    """``<Enum>.from_proto``: a name or number of the proto enum; UNSPECIFIED (0) is refused by number."""
    if isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= len(allowed):
        value = allowed[value - 1]
    if value not in allowed:
        raise invalid(f"Invalid {name}: {0 if isinstance(value, str) and value.endswith('UNSPECIFIED') else value}")
    return str(value)


def _check_target(scope: str, target_value: str | None) -> None:
    """MLflow's ``_validate_budget_target_scope`` and ``_assert_user_scope_enforceable``."""
    if scope in TARGETED:
        if not target_value:
            raise invalid(f"target_value is required when target_scope is {scope}.")
    elif target_value:
        raise invalid("target_value can only be set when target_scope is ENDPOINT or USER.")
    if scope == "USER" and not auth.basic_enabled():
        raise invalid(
            "USER-scoped budget policies require server authentication to be enabled. Without auth the gateway "
            "cannot attribute requests to a user, so the policy would never take effect."
        )


def _check_endpoint(scope: str, target_value: str | None) -> None:
    """An ENDPOINT policy names an endpoint that exists (the store's ``_get_entity_or_raise``)."""
    if scope == "ENDPOINT" and table.get(ENDPOINT.key(workspace=current_workspace(), endpoint_id=target_value)) is None:
        raise records.missing("GatewayEndpoint", "endpoint_id", str(target_value))


def _duration(duration: dict[str, Any]) -> tuple[str, int]:
    unit = _enum("duration.unit", duration.get("unit", 0), DURATION_UNITS)
    value = duration.get("value", 0)
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise invalid(f"duration.value must be a positive integer, got {value}")
    return unit, value


def _amount(amount: Any) -> str:
    """Floats are stored as text; the table (and a budget) has no use for NaN or infinity."""
    if not isinstance(amount, int | float) or isinstance(amount, bool) or not math.isfinite(amount):
        raise invalid(f"Invalid budget_amount: {amount}")
    return repr(float(amount))


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
    """MLflow's ``_create_budget_policy`` (its checks in its order) and ``create_budget_policy``."""
    unit = _enum("budget_unit", msg["budget_unit"], UNITS)
    duration_unit, duration_value = _duration(msg.get("duration") or {})
    scope = _enum("target_scope", msg["target_scope"], SCOPES)
    action = _enum("budget_action", msg["budget_action"], ACTIONS)
    target_value = msg.get("target_value") or None
    _check_target(scope, target_value)
    amount = _amount(msg["budget_amount"])
    _check_endpoint(scope, target_value)
    now = clock.now_millis()
    policy_id = f"bp-{uuid.uuid4().hex}"
    attributes = {
        "budget_policy_id": policy_id,
        "budget_unit": unit,
        "budget_amount": amount,
        "duration_unit": duration_unit,
        "duration_value": duration_value,
        "target_scope": scope,
        "target_value": target_value,
        "budget_action": action,
        "created_at": now,
        "last_updated_at": now,
        "created_by": msg.get("created_by") or None,
        "last_updated_by": msg.get("created_by") or None,
    }
    item = POLICY.item(attributes, workspace=current_workspace(), budget_policy_id=policy_id)
    table.put(item, condition="attribute_not_exists(pk)")
    return policy_json(item)


def update_policy(msg: dict[str, Any]) -> dict[str, Any]:
    """MLflow's ``_update_budget_policy`` and ``update_budget_policy``: the fields given replace the stored ones;
    a target carries over only within its scope; the result must be a policy that can match."""
    policy_id = msg["budget_policy_id"]
    changes: dict[str, Any] = {}
    if "budget_unit" in msg:
        changes["budget_unit"] = _enum("budget_unit", msg["budget_unit"], UNITS)
    if "duration" in msg:
        changes["duration_unit"], changes["duration_value"] = _duration(msg["duration"] or {})
    scope = _enum("target_scope", msg["target_scope"], SCOPES) if "target_scope" in msg else None
    if "budget_action" in msg:
        changes["budget_action"] = _enum("budget_action", msg["budget_action"], ACTIONS)
    target_given = "target_value" in msg
    target_value = (msg.get("target_value") or None) if target_given else None
    current = table.get(POLICY.key(workspace=current_workspace(), budget_policy_id=policy_id)) if policy_id else None
    if (scope is not None or target_given) and current is None:
        raise _missing(policy_id)
    if scope is not None or target_given:
        effective_scope = scope or current["target_scope"]
        inherited = current.get("target_value") if effective_scope == current["target_scope"] else None
        _check_target(effective_scope, target_value if target_given else inherited)
    if "budget_amount" in msg:
        changes["budget_amount"] = _amount(msg["budget_amount"])
    if current is None:
        raise _missing(policy_id)
    final_scope = scope or current["target_scope"]
    final_target = current.get("target_value") if final_scope == current["target_scope"] else None
    if target_value is not None:
        final_target = target_value
    if final_scope in TARGETED and not final_target:
        raise invalid(f"target_value is required when target_scope is {final_scope}.")
    if final_scope not in TARGETED:
        final_target = None
    if target_value is not None:
        _check_endpoint(final_scope, final_target)
    changes.update(target_scope=final_scope, target_value=final_target, last_updated_at=clock.now_millis())
    if msg.get("updated_by"):
        changes["last_updated_by"] = msg["updated_by"]
    item = {**current, **changes}
    try:
        # The policy as read, unless it changed meanwhile (then the caller retries, as after a lost race in SQL).
        table.put(item, condition="last_updated_at = :seen", values={":seen": current["last_updated_at"]})
    except table.ConditionFailed:
        raise MlflowError(f"BudgetPolicy '{policy_id}' changed during the update; retry", "ABORTED") from None
    return policy_json(item)


def _missing(policy_id: str) -> Exception:
    return not_found(f"BudgetPolicy not found (budget_policy_id='{policy_id}')")


def get_policy(policy_id: str) -> dict[str, Any]:
    item = table.get(POLICY.key(workspace=current_workspace(), budget_policy_id=policy_id)) if policy_id else None
    if item is None:
        raise _missing(policy_id)
    return policy_json(item)


def delete_policy(policy_id: str) -> None:
    try:
        table.delete(POLICY.key(workspace=current_workspace(), budget_policy_id=policy_id), condition="attribute_exists(pk)")
    except table.ConditionFailed:
        raise _missing(policy_id) from None


def list_policies() -> list[dict[str, Any]]:
    return [policy_json(item) for item in records.query_kind(POLICY.sk_prefix())]


def list_windows() -> list[dict[str, Any]]:
    """The current window of every policy with its recorded spend (one BatchGetItem of the windows)."""
    policies = records.query_kind(POLICY.sk_prefix())
    now = time.time()
    starts = {p["budget_policy_id"]: _window(p, now) for p in policies}
    keys = [WINDOW.key(workspace=current_workspace(), budget_policy_id=pid, window_start=start) for pid, (start, _) in starts.items()]
    spent = {item["budget_policy_id"]: int(item.get("spend_nano_usd") or 0) / 1e9 for item in (table.batch_get(keys) if keys else [])}
    return [
        {"budget_policy_id": pid, "window_start_ms": start * 1000, "window_end_ms": end * 1000, "current_spend": spent.get(pid, 0.0)}
        for pid, (start, end) in starts.items()
    ]


def _window(policy: dict[str, Any], now: float) -> tuple[int, int]:
    return budget_windows.window_of(policy["duration_unit"], int(policy["duration_value"]), now)
