"""MLflow's JSON for MCP servers, versions and access endpoints (``mcp_server_api``'s response models):
every declared field present, unset ones as null."""

from __future__ import annotations

import json
from typing import Any

from .records import Server, current_workspace

_TOOL_FIELDS = ("name", "title", "description", "inputSchema", "outputSchema", "annotations", "icons", "execution")


def _json(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str) else value


def _icon(icon: dict[str, Any]) -> dict[str, Any]:
    """``_BaseMCPIconPayload.serialize``: extra keys first, then src, sizes, mimeType, theme, source."""
    known = ("src", "sizes", "mimeType", "theme", "source")
    out = {key: value for key, value in icon.items() if key not in known}
    for key in known:
        if icon.get(key) is not None:
            out[key] = icon[key]
    return out


def _tool(tool: dict[str, Any]) -> dict[str, Any]:
    out = {name: tool.get(name) for name in _TOOL_FIELDS}
    if out["icons"] is not None:
        out["icons"] = [_icon(icon) for icon in out["icons"]]
    return out


def version_json(server: Server, item: dict[str, Any]) -> dict[str, Any]:
    version = item["version"]
    tools = _json(item.get("tools"))
    return {
        "name": item["name"],
        "version": version,
        "server_json": _json(item["server_json"]),
        "workspace": current_workspace(),
        "status": item["status"],
        "tools": [_tool(tool) for tool in tools or []],
        "aliases": server.aliases_of(version),
        "tags": dict(server.version_tags.get(version, {})),
        "connect_options": _json(item.get("connect_options")) or {},
        "source": item.get("source"),
        "created_by": item.get("created_by"),
        "last_updated_by": item.get("last_updated_by"),
        "creation_timestamp": int(item["created_at"]),
        "last_updated_timestamp": int(item["last_updated_at"]),
    }


def _endpoint_common(endpoint: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": endpoint["endpoint_id"],
        "server_name": endpoint["server_name"],
        "url": endpoint["url"],
        "transport_type": endpoint["transport_type"],
        "workspace": current_workspace(),
    }


def _endpoint_tail(endpoint: dict[str, Any], resolved: dict[str, Any] | None, server: Server) -> dict[str, Any]:
    return {
        "server_version": endpoint.get("server_version"),
        "server_alias": endpoint.get("server_alias"),
        "resolved_version": version_json(server, resolved) if resolved is not None else None,
        "created_by": endpoint.get("created_by"),
        "last_updated_by": endpoint.get("last_updated_by"),
        "creation_timestamp": int(endpoint["created_at"]),
        "last_updated_timestamp": int(endpoint["last_updated_at"]),
    }


def endpoint_json(server: Server, endpoint: dict[str, Any], resolved: dict[str, Any] | None) -> dict[str, Any]:
    """``MCPAccessEndpointResponse``: with the resolved version's tools."""
    tools = _json(resolved.get("tools")) if resolved is not None else None
    return {
        **_endpoint_common(endpoint),
        "tools": [_tool(tool) for tool in tools] if tools is not None else None,
        **_endpoint_tail(endpoint, resolved, server),
    }


def _resolved_icons(server_icons: Any, version_icons: Any) -> list[dict[str, Any]] | None:
    """``_resolve_mcp_server_icons``: the server's own icons, then the latest version's for other themes."""
    if server_icons is not None and len(server_icons) == 0:
        return []
    out = []
    themes = set()
    for icon in server_icons or []:
        if isinstance(icon, dict):
            themes.add(icon.get("theme"))
            out.append(_icon({**icon, "source": "server"}))
    for icon in version_icons or []:
        if isinstance(icon, dict) and icon.get("theme") not in themes:
            out.append(_icon({**icon, "source": "version"}))
    return out or None


def server_json(server: Server) -> dict[str, Any]:
    """``MCPServerResponse``: description and icons fall back to the latest version's server.json; endpoints
    whose target does not resolve are left out (MLflow's inner join)."""
    item = server.item
    latest = server.latest()
    latest_json = _json(latest["server_json"]) if latest is not None else None
    description = item.get("description")
    if description is None and latest_json is not None:
        description = latest_json.get("description")
    endpoints = []
    for endpoint in server.endpoints:
        resolved = server.endpoint_target(endpoint)
        if resolved is not None:
            endpoints.append({**_endpoint_common(endpoint), **_endpoint_tail(endpoint, resolved, server)})
    return {
        "name": item["name"],
        "display_name": item.get("display_name"),
        "description": description,
        "icons": _resolved_icons(_json(item.get("icons")), latest_json.get("icons") if latest_json else None),
        "workspace": current_workspace(),
        "status": latest["status"] if latest is not None else None,
        "access_endpoints": endpoints,
        "latest_version": latest["version"] if latest is not None else None,
        "aliases": [{"alias": alias, "version": version} for alias, version in sorted(server.aliases.items())],
        "tags": dict(server.tags),
        "created_by": item.get("created_by"),
        "last_updated_by": item.get("last_updated_by"),
        "creation_timestamp": int(item["created_at"]),
        "last_updated_timestamp": int(item["last_updated_at"]),
    }
