"""Budgets, enforced from usage records (MLflow's ``mlflow/gateway/budget.py``).

MLflow keeps each budget window's spend in its server's memory (or Redis), backfilled from trace costs. Here
every call's cost is ADDed to one item per applicable policy and window (``gateway_budget_window``), so every
concurrent function instance sees the same spend; a call is refused with MLflow's 429 while a REJECT policy's
window has reached its amount. Per call: one Query of the workspace's policies and one BatchGetItem of their
windows before, one UpdateItem per applicable policy after (only when the call cost something).
"""

from __future__ import annotations

import logging
import time
from typing import Any

from serverless_mlflow.llm_gateway import budget_windows, records
from serverless_mlflow.llm_gateway.config import EndpointConfig
from serverless_mlflow.llm_gateway.upstream import GatewayHTTPError
from serverless_mlflow.storage import table
from serverless_mlflow.storage.schema import ENTITY, TTL_ATTRIBUTE
from serverless_mlflow.store import registry_events

from .tracing import GatewayTrace

log = logging.getLogger(__name__)
POLICY = ENTITY["gateway_budget_policy"]
WINDOW = ENTITY["gateway_budget_window"]
# Windows are kept a day past their end (their spend answers budgets/windows meanwhile).
KEEP_SECONDS = 86400


def window_of(policy: dict[str, Any], now: float) -> tuple[int, int]:
    return budget_windows.window_of(policy["duration_unit"], int(policy.get("duration_value") or 1), now)


def _applies(policy: dict[str, Any], config: EndpointConfig, username: str | None) -> bool:
    scope = policy.get("target_scope") or "WORKSPACE"
    if scope == "ENDPOINT":
        return policy.get("target_value") == config.endpoint_id
    if scope == "USER":
        return username is not None and policy.get("target_value") == username
    return True


def _policies(config: EndpointConfig, username: str | None) -> list[dict[str, Any]]:
    return [p for p in table.query(records.partition(), POLICY.sk_prefix()) if _applies(p, config, username)]


def _window_key(policy: dict[str, Any], start: int) -> dict[str, str]:
    return WINDOW.key(workspace=records.current_workspace(), budget_policy_id=policy["budget_policy_id"], window_start=start)


def check(config: EndpointConfig, username: str | None, caller_context: dict[str, Any] | None = None) -> None:
    """MLflow's ``check_budget_limit``: 429 while a REJECT policy's current window is spent, recorded as an
    error trace on the endpoint (``_create_budget_error_trace``)."""
    rejecting = [p for p in _policies(config, username) if p.get("budget_action") == "REJECT"]
    if not rejecting:
        return
    now = time.time()
    windows = {p["budget_policy_id"]: window_of(p, now) for p in rejecting}
    items = table.batch_get([_window_key(p, windows[p["budget_policy_id"]][0]) for p in rejecting])
    spent = {item["budget_policy_id"]: int(item.get("spend_nano_usd") or 0) / 1e9 for item in items}
    for policy in rejecting:
        amount = float(policy["budget_amount"])
        if spent.get(policy["budget_policy_id"], 0.0) >= amount:
            _, end = windows[policy["budget_policy_id"]]
            unit = policy["duration_unit"].lower()
            value = int(policy.get("duration_value") or 1)
            if value == 1:
                unit = unit.rstrip("s")
            reset = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(end))
            error = GatewayHTTPError(
                429,
                f"Budget limit exceeded. Limit: ${amount:.2f} USD per {value} {unit}. Budget resets at {reset}. Request rejected.",
                "HTTPException",
            )
            _error_trace(config, error, caller_context)
            raise error


def _error_trace(config: EndpointConfig, error: GatewayHTTPError, caller_context: dict[str, Any] | None) -> None:
    """A span ``gateway/<endpoint>`` (LLM) with the refusal recorded, and no request (MLflow's budget trace)."""
    trace = GatewayTrace(config, None, {}, {}, root_type="LLM")
    trace.metadata.clear()
    trace.caller_context = caller_context
    trace.root.status_message = f"{error.mlflow_type}: {error}"
    trace.finish(error=error)


def record_spend(config: EndpointConfig, username: str | None, cost: float) -> None:
    """Add a call's cost to the current window of every policy that covers it (MLflow's on_complete), and
    raise an ALERT policy's ``budget_policy.exceeded`` event from the one call that takes its window past the
    amount (the ADD is atomic, so exactly one call sees the crossing)."""
    if cost <= 0:
        return
    now = time.time()
    cost_nano = round(cost * 1e9)
    for policy in _policies(config, username):
        start, end = window_of(policy, now)
        after = table.update(
            _window_key(policy, start),
            f"ADD spend_nano_usd :c, calls :one SET budget_policy_id = :p, window_start = :s, window_end = :e, entity_type = :t, {TTL_ATTRIBUTE} = :x",
            values={
                ":c": cost_nano,
                ":one": 1,
                ":p": policy["budget_policy_id"],
                ":s": start,
                ":e": end,
                ":t": WINDOW.name,
                ":x": end + KEEP_SECONDS,
            },
            return_values="UPDATED_NEW",
        )
        if policy.get("budget_action") == "ALERT" and after is not None:
            _alert_if_crossed(policy, start, int(after["spend_nano_usd"]), int(after["calls"]), cost_nano)


def _alert_if_crossed(policy: dict[str, Any], window_start: int, spent_nano: int, calls: int, cost_nano: int) -> None:
    """MLflow's ``fire_budget_exceeded_webhooks`` for a window first reaching its amount: the event goes to the
    table's outbox, and the stream delivers it to webhooks and EventBridge (never from this request)."""
    amount_nano = round(float(policy["budget_amount"]) * 1e9)
    before = spent_nano - cost_nano
    if spent_nano < amount_nano or (before >= amount_nano and calls > 1):
        return
    payload = {
        "budget_policy_id": policy["budget_policy_id"],
        "budget_unit": policy["budget_unit"],
        "budget_amount": float(policy["budget_amount"]),
        "current_spend": spent_nano / 1e9,
        "duration_unit": policy["duration_unit"],
        "duration_value": int(policy["duration_value"]),
        "target_scope": policy["target_scope"],
        "workspace": records.current_workspace(),
        "target_value": policy.get("target_value"),
        "window_start": window_start * 1000,
    }
    try:
        table.put(registry_events.event_item("budget_policy", "exceeded", payload, "", workspace=records.current_workspace()))
    except Exception:
        # The call itself succeeded and is paid for: its answer must not fail on the alert (as in MLflow).
        log.exception("budget_policy.exceeded event for %s not recorded", policy["budget_policy_id"])
