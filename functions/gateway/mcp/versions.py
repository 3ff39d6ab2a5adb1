"""MCP server versions and their tags (``SqlAlchemyMCPServerRegistryMixin``'s version methods)."""

from __future__ import annotations

import json
from typing import Any

from serverless_mlflow.core import clock
from serverless_mlflow.core.deferred import deferred
from serverless_mlflow.core.errors import already_exists, invalid, not_found
from serverless_mlflow.storage import table

from . import records, semver, servers, views
from .records import DELETED, LATEST, Server

# The filter grammar (sqlparse) loads with the first search, not at cold start.
search = deferred("gateway.mcp.search")

# VALID_STATUS_TRANSITIONS
_TRANSITIONS = {"draft": {"active", "deleted"}, "active": {"draft", "deprecated"}, "deprecated": {"active", "deleted"}}


def _missing(name: str, version: str) -> Exception:
    return not_found(f"MCP server version '{name}' version '{version}' not found")


def _live(name: str, version: str) -> tuple[Server, dict[str, Any]]:
    server = records.load(name)
    item = server.live_version(version) if server is not None else None
    if server is None or item is None:
        raise _missing(name, version)
    return server, item


def _check_transition(current: str, new: str) -> None:
    allowed = _TRANSITIONS.get(current, set())
    if new not in allowed:
        raise invalid(f"Invalid status transition from '{current}' to '{new}'. Allowed transitions: {sorted(allowed)}")


def get(name: str, version: str) -> dict[str, Any]:
    server, item = _live(name, version)
    return views.version_json(server, item)


def get_by_alias(name: str, alias: str) -> dict[str, Any]:
    server = records.load(name)
    if alias == LATEST:
        if server is None:
            raise servers.missing_server(name)
        latest = server.latest()
        if latest is None:
            raise not_found(f"No resolved latest version found for MCP server '{name}'")
        return views.version_json(server, latest)
    if server is None or alias not in server.aliases:
        raise not_found(f"Alias '{alias}' not found for MCP server '{name}'")
    return get(name, server.aliases[alias])


def create(
    name: str, server_json: dict[str, Any], source: Any, status: str, tools: Any, connect_options: Any, created_by: str | None
) -> dict[str, Any]:
    version = server_json.get("version")
    if not server_json.get("name") or not version:
        raise invalid("server_json must contain 'name' and 'version' keys")
    servers.validate_name(name)
    if "icons" in server_json:
        server_json = {**server_json, "icons": _checked_icons(server_json["icons"])}
    key = semver.sort_key(version, "server_json.version")
    if status not in ("draft", "active"):
        raise invalid("Initial MCP server registration status must be 'draft' or 'active'.")
    now = clock.now_millis()
    try:
        table.put(servers.new_server_item(name, created_by, now), condition="attribute_not_exists(pk)")
    except table.ConditionFailed:
        pass  # the server exists: the version joins it
    item = records.version_item(
        {
            "name": name,
            "version": version,
            "semver": key,
            "server_json": json.dumps(server_json),
            "status": status,
            "tools": json.dumps(tools) if isinstance(tools, list) else None,
            "source": source,
            "connect_options": json.dumps(connect_options) if connect_options is not None else None,
            "created_by": created_by,
            "last_updated_by": created_by,
            "created_at": now,
            "last_updated_at": now,
        }
    )
    try:
        table.put(item, condition="attribute_not_exists(pk)")
    except table.ConditionFailed:
        raise already_exists(f"MCP server version '{name}' version '{version}' already exists") from None
    server = records.load(name) or Server(servers.new_server_item(name, created_by, now))
    return views.version_json(server, item)


def _checked_icons(icons: Any) -> Any:
    from . import wire

    return wire.strip_icon_sources(icons, "server_json.icons")


def update(name: str, version: str, changes: dict[str, Any], updated_by: str | None) -> dict[str, Any]:
    server, item = _live(name, version)
    item = dict(item)
    if "status" in changes:
        _check_transition(item["status"], changes["status"])
        item["status"] = changes["status"]
    if "tools" in changes:
        item["tools"] = json.dumps(changes["tools"]) if changes["tools"] is not None else None
    if "connect_options" in changes:
        item["connect_options"] = json.dumps(changes["connect_options"]) if changes["connect_options"] is not None else None
    item["last_updated_by"] = updated_by
    item["last_updated_at"] = clock.now_millis()
    try:
        table.put(item, condition="attribute_exists(pk)")
    except table.ConditionFailed:
        raise _missing(name, version) from None
    server.versions[version] = item
    if "status" in changes:
        _drop_unresolvable_latest_endpoints(server)
    return views.version_json(server, item)


def _drop_unresolvable_latest_endpoints(server: Server) -> None:
    """MLflow deletes the ``latest`` endpoints of a server whose latest no longer resolves."""
    if server.latest() is None:
        doomed = [records.endpoint_key(server.name, e["endpoint_id"]) for e in server.endpoints if e.get("server_alias") == LATEST]
        if doomed:
            table.batch_write(deletes=doomed)


def delete(name: str, version: str) -> None:
    server = records.load(name)
    item = server.versions.get(version) if server is not None else None
    if server is None or item is None:
        raise _missing(name, version)
    _check_transition(item["status"], DELETED)
    aliases = set(server.aliases_of(version))
    doomed = [records.alias_key(name, alias) for alias in sorted(aliases)]
    doomed += [
        records.endpoint_key(name, e["endpoint_id"])
        for e in server.endpoints
        if e.get("server_alias") in aliases or e.get("server_version") == version
    ]
    item = {**item, "status": DELETED, "last_updated_at": clock.now_millis()}
    table.put(item, condition="attribute_exists(pk)")
    if doomed:
        table.batch_write(deletes=doomed)
    server.versions[version] = item
    server.endpoints = [e for e in server.endpoints if table.key_of(e) not in doomed]
    _drop_unresolvable_latest_endpoints(server)


def search_versions(name: str, params: dict[str, Any]) -> dict[str, Any]:
    search.validate_max_results(params["max_results"])
    offset = search.start_offset(params["page_token"])
    comparisons = search.parse_filter(search.VersionGrammar, params["filter_string"])
    terms = search.parse_order_by(params["order_by"], {"version", "created_at", "last_updated_at"})
    if all(key != "created_at" for key, _ in terms):
        terms.append(("created_at", True))
    if all(key != "version" for key, _ in terms):
        terms.append(("raw_version", True))
    server = records.load(name)
    rows = [] if server is None else [item for item in server.versions.values() if item["status"] != DELETED]
    rows = [item for item in rows if _version_matches(item, comparisons)]
    ordered = search.sort(rows, terms, _version_order_value)
    page, token = search.page(ordered, offset, params["max_results"])
    return {"mcp_server_versions": [views.version_json(server, item) for item in page] if server else [], "next_page_token": token}


def _version_order_value(item: dict[str, Any], key: str) -> Any:
    if key == "version":
        return [int(part) for part in item["semver"][:3]] + [item["semver"][3]]
    if key == "raw_version":
        return item["version"]
    return int(item[key])


def _version_matches(item: dict[str, Any], comparisons: list[dict[str, Any]]) -> bool:
    for comparison in comparisons:
        if comparison["key"] == "version":
            if not search.version_comparison(comparison["comparator"], comparison["value"], item):
                return False
        elif not search.matches(
            [comparison], lambda c: int(item[c["key"]]) if c["key"] in ("created_at", "last_updated_at") else item.get(c["key"])
        ):
            return False
    return True


# --- version tags ----------------------------------------------------------------------------------------


def set_tag(name: str, version: str, key: str, value: str) -> None:
    _live(name, version)
    table.put(records.version_tag_item(name, version, key, value))


def delete_tag(name: str, version: str, key: str) -> None:
    _live(name, version)
    try:
        table.delete(records.version_tag_key(name, version, key), condition="attribute_exists(pk)")
    except table.ConditionFailed:
        raise not_found(f"Tag '{key}' not found on MCP server version '{name}' version '{version}'") from None
