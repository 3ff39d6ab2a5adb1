"""Trace archival settings at MLflow's three levels, resolved with MLflow's precedence.

* Server: MLflow reads a YAML file (``MLFLOW_TRACE_ARCHIVAL_CONFIG``: ``enabled``, ``location``, ``retention``,
  ``long_retention_allowlist``, ``interval_seconds``, ``max_traces_per_pass``). A Lambda has no such file; the
  stack sets the same values as environment (``TRACE_ARCHIVAL_RETENTION`` enables it; ``TRACE_ARCHIVAL_LOCATION``,
  default the artifact root ``s3://<bucket>/<artifacts prefix>``; ``TRACE_ARCHIVAL_LONG_RETENTION_ALLOWLIST``;
  ``TRACE_ARCHIVAL_INTERVAL_SECONDS``, 300 by default, passes run on the monitor's minute ticks at most that
  often; ``TRACE_ARCHIVAL_MAX_TRACES_PER_PASS``). An invalid value disables archival, as MLflow's scheduler ignores an
  invalid config.
* Workspace: its ``trace_archival_config`` (location, retention) replaces the server's; without its own location
  the server's gets ``/workspaces/<name>`` appended (MLflow's ``append_workspace_prefix``).
* Experiment: the ``mlflow.trace.archivalRetention`` tag (``{"type": "duration", "value": "30d"}``) may shorten
  the broader retention; a longer one holds only for experiments in the allowlist. A malformed tag is ignored.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from serverless_mlflow.core.validation import (
    TRACE_ARCHIVAL_RETENTION_TAG,
    TRACE_ARCHIVE_NOW_TAG,
    parse_trace_archival_duration_config,
    validate_trace_archival_location,
    validate_trace_archival_retention_string,
)
from serverless_mlflow.request import workspace as request_workspace
from serverless_mlflow.store import artifact_locations, workspaces

UNIT_MILLIS = {"m": 60_000, "h": 3_600_000, "d": 86_400_000}
# MLflow's interval_seconds: default and bound.
DEFAULT_INTERVAL_SECONDS = 300
MAX_INTERVAL_SECONDS = 86_400


@dataclass(frozen=True)
class ServerConfig:
    location: str
    retention: str
    long_retention_allowlist: frozenset[str]
    max_traces_per_pass: int | None
    interval_seconds: int = 300


@dataclass(frozen=True)
class ScopeConfig:
    """A workspace's resolved settings (the default scope when workspaces are off)."""

    location: str
    retention: str


def millis(duration: str) -> int:
    text = validate_trace_archival_retention_string(duration)
    return int(text[:-1]) * UNIT_MILLIS[text[-1]]


def server_config() -> ServerConfig | None:
    """The server-level settings, or None when archival is off (or configured wrongly)."""
    retention = os.environ.get("TRACE_ARCHIVAL_RETENTION", "").strip()
    if not retention:
        return None
    try:
        retention = validate_trace_archival_retention_string(retention, parameter_name="trace_archival.retention")
        default_root = artifact_locations.artifacts_root_uri()
        location = validate_trace_archival_location(
            os.environ.get("TRACE_ARCHIVAL_LOCATION") or default_root, parameter_name="trace_archival.location"
        )
        allowlist = frozenset(
            part.strip() for part in os.environ.get("TRACE_ARCHIVAL_LONG_RETENTION_ALLOWLIST", "").split(",") if part.strip()
        )
        limit = os.environ.get("TRACE_ARCHIVAL_MAX_TRACES_PER_PASS", "").strip()
        max_traces = int(limit) if limit else None
        interval = int(os.environ.get("TRACE_ARCHIVAL_INTERVAL_SECONDS", "").strip() or DEFAULT_INTERVAL_SECONDS)
        if (max_traces is not None and max_traces < 1) or not 1 <= interval <= MAX_INTERVAL_SECONDS:
            return None
    except Exception:
        return None
    return ServerConfig(location.rstrip("/"), retention, allowlist, max_traces, interval)


def enabled() -> bool:
    return server_config() is not None


def scope_config(server: ServerConfig, workspace: str | None) -> ScopeConfig:
    """MLflow's ``resolve_trace_archival_config(...).with_broader_defaults(...)`` for one workspace."""
    if workspace is None or not request_workspace.enabled():
        return ScopeConfig(server.location, server.retention)
    item = workspaces.read(workspace) or {}
    own_location = item.get("trace_archival_location")
    location = own_location or artifact_locations.append_to_uri_path(server.location, workspaces.WORKSPACES_DIR, workspace)
    return ScopeConfig(location.rstrip("/"), item.get("trace_archival_retention") or server.retention)


def experiment_retention(tag_value: str | None) -> str | None:
    """The experiment's own retention from its tag; None when unset or malformed (MLflow ignores it then)."""
    try:
        return parse_trace_archival_duration_config(tag_value, duration_key="value", expected_type="duration")
    except Exception:
        return None


def effective_retention(experiment_id: str, tags: dict[str, str], broader: str, allowlist: frozenset[str]) -> str:
    """MLflow's ``_resolve_effective_trace_archival_retention``: the experiment's if not longer than the broader
    one, or if the experiment is allowed long retention; else the broader one."""
    own = experiment_retention(tags.get(TRACE_ARCHIVAL_RETENTION_TAG))
    if own is None:
        return broader
    if millis(own) <= millis(broader) or experiment_id in allowlist:
        return own
    return broader


def archive_now_millis(tag_value: str | None) -> tuple[bool, int | None]:
    """(requested, older_than in ms or None for "everything") from ``mlflow.trace.archiveNow``; a malformed value
    is no request (MLflow logs and ignores it)."""
    if tag_value is None:
        return False, None
    try:
        older_than = parse_trace_archival_duration_config(tag_value, duration_key="older_than", allow_missing_duration=True)
    except Exception:
        return False, None
    return True, (None if older_than is None else millis(older_than))


def effective_for_experiment(experiment: dict[str, Any], scopes: dict[str, ScopeConfig] | None = None) -> str | None:
    """``Experiment.effective_trace_archival_retention`` as MLflow's store fills it (None: archival is off).
    ``scopes``: workspace settings already read (filled here)."""
    server = server_config()
    if server is None:
        return None
    workspace = str(experiment.get("workspace") or workspaces.DEFAULT_WORKSPACE)
    scopes = {} if scopes is None else scopes
    if workspace not in scopes:
        scopes[workspace] = scope_config(server, workspace)
    scope = scopes[workspace]
    tags = {t["key"]: t["value"] for t in experiment.get("tags") or []}
    return effective_retention(str(experiment["experiment_id"]), tags, scope.retention, server.long_retention_allowlist)


__all__ = [
    "TRACE_ARCHIVAL_RETENTION_TAG",
    "TRACE_ARCHIVE_NOW_TAG",
    "ScopeConfig",
    "ServerConfig",
    "archive_now_millis",
    "effective_for_experiment",
    "effective_retention",
    "enabled",
    "scope_config",
    "server_config",
]
