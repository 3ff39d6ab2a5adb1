"""Server-wide settings, kept in the table's ``CONFIG`` partition (``CFG#settings``).

One item holds every setting an operator may change without a redeploy (``python -m tools.settings set``).
A function reads it with one GetItem the first time it needs a setting and keeps it for
``MAX_AGE_SECONDS`` (so a container that lives for hours still sees a change). A setting the item does not
hold falls back to the function's environment, under the same names ``mlflow server`` reads
(``MLFLOW_WEBHOOK_ALLOWED_SCHEMES``, ...), and then to MLflow's default.
"""

from __future__ import annotations

import logging
import os
import re
import threading
import time
from dataclasses import dataclass
from typing import Any

from serverless_mlflow.storage import schema, table

log = logging.getLogger(__name__)
CONFIG = schema.entity("config")
SETTINGS_KEY = CONFIG.key(key="settings")
MAX_AGE_SECONDS = 300.0


@dataclass(frozen=True)
class Setting:
    name: str  # the environment variable (MLflow's name where MLflow has one)
    default: Any
    kind: str  # "list", "bool", "int", "url"
    description: str


SETTINGS: dict[str, Setting] = {
    setting.name: setting
    for setting in (
        Setting("MLFLOW_WEBHOOK_ALLOWED_SCHEMES", ["https"], "list", "URL schemes a webhook may use (MLflow's setting)"),
        Setting(
            "MLFLOW_WEBHOOK_ALLOW_PRIVATE_IPS", False, "bool",
            "Allow webhook targets that resolve to private, loopback or link-local addresses (MLflow's setting)",
        ),
        Setting("MLFLOW_WEBHOOK_REQUEST_TIMEOUT", 30, "int", "Seconds a webhook delivery waits for the receiver (MLflow's setting)"),
        Setting(
            "MLFLOW_DEPLOYMENTS_TARGET", "", "url",
            "An MLflow deployments server the web UI's gateway-proxy forwards to (MLflow's setting; empty: none)",
        ),
    )
}  # fmt: skip

_lock = threading.Lock()
_cached: tuple[float, dict[str, Any]] | None = None


def stored_values() -> dict[str, Any]:
    """The settings item's values, read now (one GetItem)."""
    value = (table.get(SETTINGS_KEY) or {}).get("value")
    return dict(value) if isinstance(value, dict) else {}


def _stored() -> dict[str, Any]:
    global _cached
    now = time.monotonic()
    max_age = float(os.environ.get("SETTINGS_MAX_AGE_SECONDS", MAX_AGE_SECONDS))
    with _lock:
        if _cached is not None and now - _cached[0] < max_age:
            return _cached[1]
    values = stored_values()
    with _lock:
        _cached = (now, values)
    return values


def reset_cache() -> None:
    global _cached
    with _lock:
        _cached = None


def parse(name: str, raw: Any) -> Any:
    """A setting's value from its text (environment) or stored form; ValueError when it cannot be one."""
    kind = SETTINGS[name].kind
    if kind == "list":
        items = raw if isinstance(raw, list) else str(raw).split(",")
        return [str(item).strip() for item in items if str(item).strip()]
    if kind == "bool":
        if isinstance(raw, bool):
            return raw
        text = str(raw).strip().lower()
        if text not in ("true", "false", "1", "0"):
            raise ValueError(f"{name} must be true or false, got {raw!r}")
        return text in ("true", "1")
    if kind == "url":
        text = str(raw).strip().rstrip("/")
        if text and not re.fullmatch(r"https?://[^\s/?#]+(/[^\s?#]*)?", text):
            raise ValueError(f"{name} must be an http(s) URL, got {raw!r}")
        return text
    value = int(raw)
    if value < 0:
        raise ValueError(f"{name} must not be negative, got {raw!r}")
    return value


def get(name: str) -> Any:
    """The setting's value: the stored one, else the environment's, else MLflow's default. A value that does
    not parse (written by hand, or by older code) is skipped, never an error for the request that reads it."""
    for source, values in (("CONFIG", _stored()), ("environment", os.environ)):
        if name in values:
            try:
                return parse(name, values[name])
            except ValueError:
                log.warning("ignoring the %s value of %s: %r", source, name, values[name])
    return SETTINGS[name].default


def store(values: dict[str, Any]) -> dict[str, Any]:
    """Merge ``values`` into the stored settings (an operator command); a None value removes one."""
    for name, value in values.items():
        if name not in SETTINGS:
            raise KeyError(f"unknown setting {name!r}; known: {', '.join(sorted(SETTINGS))}")
        if value is not None:
            parse(name, value)
    current = stored_values()
    for name, value in values.items():
        if value is None:
            current.pop(name, None)
        else:
            current[name] = value
    table.put(CONFIG.item({"value": current}, key="settings"))
    reset_cache()
    return current
