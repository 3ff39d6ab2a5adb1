"""The MCP server registry's routes (``/api/3.0/mlflow/mcp-servers/...``, MLflow's ``mcp_server_api``): read the
path and body as its FastAPI models do, call one domain function, answer its response model's JSON."""

from __future__ import annotations

import urllib.parse
from typing import Any

from serverless_mlflow.http.api import Request

from . import endpoints, servers, versions, wire


def _path(req: Request, name: str) -> str:
    return urllib.parse.unquote(req.path_params[name])


def _caller(req: Request) -> str | None:
    """``request.state.username``: set by MLflow's auth app, None without it."""
    return getattr(req.identity, "username", None) if req.identity is not None else None


# --- servers ---------------------------------------------------------------------------------------------


def create_mcp_server(req: Request) -> dict[str, Any]:
    data = wire.body(req)
    name = wire.string(data, "name", required=True)
    description = wire.or_none(wire.string(data, "description"))
    icons = wire.or_none(wire.icons(data))
    servers.validate_name(name)
    return servers.create(name, description, wire.strip_icon_sources(icons), _caller(req))


def search_mcp_servers(req: Request) -> dict[str, Any]:
    return servers.search_servers(wire.search_params(req))


def get_mcp_server(req: Request) -> dict[str, Any]:
    return servers.get(_path(req, "name"))


def update_mcp_server(req: Request) -> dict[str, Any]:
    data = wire.body(req)
    if "latest_version" in data:
        raise wire.rejected(
            wire.Invalid("", "Value error, latest_version is read-only; it is resolved automatically from semantic-version ordering")
        )
    changes: dict[str, Any] = {}
    for field in ("display_name", "description"):
        value = wire.string(data, field)
        if wire.present(value):
            changes[field] = value
    icons = wire.icons(data)
    if wire.present(icons):
        changes["icons"] = wire.strip_icon_sources(icons)
    return servers.update(_path(req, "name"), changes, _caller(req))


def delete_mcp_server(req: Request) -> dict[str, Any]:
    servers.delete(_path(req, "name"))
    return {}


# --- versions ----------------------------------------------------------------------------------------------


def _server_json(data: dict[str, Any]) -> dict[str, Any]:
    raw = data.get("server_json")
    # A registry response envelope ({"server": {...}}) is unwrapped when the raw shape is not there.
    if isinstance(raw, dict) and not ("name" in raw and "version" in raw) and "server" in raw:
        inner = raw["server"]
        if not isinstance(inner, dict):
            raise wire.rejected(wire.Invalid("", "Value error, server_json.server: Input should be a valid dictionary"))
        if "name" in inner and "version" in inner:
            raw = inner
    if "server_json" not in data:
        raise wire.rejected(wire.Invalid("server_json", "Field required"))
    if not isinstance(raw, dict):
        raise wire.rejected(wire.Invalid("server_json", "Input should be a valid dictionary or object to extract fields from"))
    wire.string(raw, "name", "server_json.", required=True)
    wire.string(raw, "version", "server_json.", required=True)
    for field in ("title", "description", "websiteUrl"):
        wire.string(raw, field, "server_json.")
    for field in ("packages", "remotes"):
        wire.array(raw, field, "server_json.")
    out = dict(raw)
    icons = wire.icons(raw, "icons", "server_json.")
    if isinstance(icons, list):
        out["icons"] = icons
    return out


def create_mcp_server_version(req: Request) -> dict[str, Any]:
    data = wire.body(req)
    server_json = _server_json(data)
    status = wire.string(data, "status", nullable=False)
    source = wire.or_none(wire.string(data, "source"))
    tools = wire.tools(data)
    connect_options = wire.or_none(wire.connect_options(data))
    name = _path(req, "name")
    servers.validate_name(server_json["name"])
    servers.validate_name(name)
    if server_json["name"] != name:
        raise wire.invalid(f"server_json.name '{server_json['name']}' does not match path parameter '{name}'")
    status = wire.status("draft" if not wire.present(status) else status)
    return versions.create(name, server_json, source, status, None if not wire.present(tools) else tools, connect_options, _caller(req))


def search_mcp_server_versions(req: Request) -> dict[str, Any]:
    return versions.search_versions(_path(req, "name"), wire.search_params(req))


def get_mcp_server_version(req: Request) -> dict[str, Any]:
    return versions.get(_path(req, "name"), _path(req, "version"))


def update_mcp_server_version(req: Request) -> dict[str, Any]:
    data = wire.body(req)
    changes: dict[str, Any] = {}
    status = wire.string(data, "status")
    tools = wire.tools(data)
    connect_options = wire.connect_options(data)
    if wire.present(status):
        if status is None:
            raise wire.invalid("status cannot be null; omit the field to leave it unchanged")
        changes["status"] = wire.status(status)
    if wire.present(tools):
        changes["tools"] = tools
    if wire.present(connect_options):
        changes["connect_options"] = connect_options
    return versions.update(_path(req, "name"), _path(req, "version"), changes, _caller(req))


def delete_mcp_server_version(req: Request) -> dict[str, Any]:
    versions.delete(_path(req, "name"), _path(req, "version"))
    return {}


def get_mcp_server_version_by_alias(req: Request) -> dict[str, Any]:
    return versions.get_by_alias(_path(req, "name"), _path(req, "alias"))


# --- tags and aliases -----------------------------------------------------------------------------------------


def _key_value(req: Request, first: str, second: str) -> tuple[str, str]:
    data = wire.body(req)
    return wire.string(data, first, required=True), wire.string(data, second, required=True)


def set_mcp_server_tag(req: Request) -> dict[str, Any]:
    key, value = _key_value(req, "key", "value")
    servers.set_tag(_path(req, "name"), key, value)
    return {}


def delete_mcp_server_tag(req: Request) -> dict[str, Any]:
    servers.delete_tag(_path(req, "name"), _path(req, "key"))
    return {}


def set_mcp_server_version_tag(req: Request) -> dict[str, Any]:
    key, value = _key_value(req, "key", "value")
    versions.set_tag(_path(req, "name"), _path(req, "version"), key, value)
    return {}


def delete_mcp_server_version_tag(req: Request) -> dict[str, Any]:
    versions.delete_tag(_path(req, "name"), _path(req, "version"), _path(req, "key"))
    return {}


def set_mcp_server_alias(req: Request) -> dict[str, Any]:
    alias, version = _key_value(req, "alias", "version")
    servers.set_alias(_path(req, "name"), alias, version)
    return {}


def delete_mcp_server_alias(req: Request) -> dict[str, Any]:
    servers.delete_alias(_path(req, "name"), _path(req, "alias"))
    return {}


# --- access endpoints -------------------------------------------------------------------------------------------


def create_mcp_access_endpoint(req: Request) -> dict[str, Any]:
    data = wire.body(req)
    version = wire.or_none(wire.string(data, "server_version"))
    alias = wire.or_none(wire.string(data, "server_alias"))
    url = wire.string(data, "url", required=True)
    transport = wire.string(data, "transport_type", nullable=False)
    transport = wire.transport("streamable-http" if not wire.present(transport) else transport)
    return endpoints.create(_path(req, "name"), url, transport, version, alias, _caller(req))


def get_mcp_access_endpoint(req: Request) -> dict[str, Any]:
    return endpoints.get(_path(req, "name"), _path(req, "endpoint_id"))


def update_mcp_access_endpoint(req: Request) -> dict[str, Any]:
    data = wire.body(req)
    changes: dict[str, Any] = {}
    for field in ("server_version", "server_alias", "url", "transport_type"):
        value = wire.string(data, field)
        if wire.present(value):
            changes[field] = value
    if changes.get("transport_type") is not None:
        changes["transport_type"] = wire.transport(changes["transport_type"])
    return endpoints.update(_path(req, "name"), _path(req, "endpoint_id"), changes, _caller(req))


def delete_mcp_access_endpoint(req: Request) -> dict[str, Any]:
    endpoints.delete(_path(req, "name"), _path(req, "endpoint_id"))
    return {}


def search_mcp_access_endpoints(req: Request) -> dict[str, Any]:
    return endpoints.search_endpoints(_path(req, "name"), wire.search_params(req, ("server_version", "server_alias")))


def search_all_mcp_access_endpoints(req: Request) -> dict[str, Any]:
    return endpoints.search_endpoints(None, wire.search_params(req, ("server_version", "server_alias")))


OPERATIONS = {
    name: function
    for name, function in globals().items()
    if callable(function) and not name.startswith("_") and "mcp" in name and function.__module__ == __name__
}
