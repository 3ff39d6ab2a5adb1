"""MCP access endpoints: a URL bound to a version or an alias of its server (``SqlAlchemyMCPServerRegistryMixin``'s
endpoint methods). An endpoint answers only while its target resolves to a live version (MLflow's join)."""

from __future__ import annotations

import uuid
from typing import Any

from serverless_mlflow.core import clock
from serverless_mlflow.core.deferred import deferred
from serverless_mlflow.core.errors import invalid, not_found
from serverless_mlflow.storage import table

from . import records, servers, views
from .records import DELETED, LATEST, Server

# The filter grammar (sqlparse) loads with the first search, not at cold start.
search = deferred("gateway.mcp.search")


def _validate_url(url: Any) -> None:
    if not isinstance(url, str) or not url.strip():
        raise invalid(f"MCP access endpoint url cannot be empty or just whitespace: {url!r}")


def _check_alias(server: Server, alias: str) -> None:
    """``_get_alias_target_version_or_raise``."""
    name = server.name
    if alias == LATEST:
        if server.latest() is None:
            raise not_found(f"No resolved latest version found for MCP server '{name}'")
        return
    if alias not in server.aliases:
        raise not_found(f"Alias '{alias}' not found for MCP server '{name}'")
    target = server.versions.get(server.aliases[alias])
    if target is None:
        raise invalid(f"Alias '{alias}' for MCP server '{name}' points to missing version '{server.aliases[alias]}'")
    if target["status"] == DELETED:
        raise invalid(f"Alias '{alias}' for MCP server '{name}' points to deleted version '{server.aliases[alias]}'")


def _check_version(server: Server, version: str, verb: str) -> None:
    item = server.versions.get(version)
    if item is None:
        raise not_found(f"MCP server version '{server.name}' version '{version}' not found")
    if item["status"] == DELETED:
        raise invalid(f"Cannot {verb} MCP access endpoint to deleted MCP server version '{server.name}' version '{version}'")


def create(name: str, url: Any, transport: str, server_version: Any, server_alias: Any, created_by: str | None) -> dict[str, Any]:
    if (server_version is None) == (server_alias is None):
        raise invalid("Exactly one of server_version or server_alias must be provided")
    _validate_url(url)
    server = servers.require(name)
    if server_version is not None:
        _check_version(server, server_version, "create")
    if server_alias is not None:
        _check_alias(server, server_alias)
    now = clock.now_millis()
    item = records.endpoint_item(
        {
            "endpoint_id": f"ae-{uuid.uuid4().hex}",
            "server_name": name,
            "server_version": server_version,
            "server_alias": server_alias,
            "url": url,
            "transport_type": transport,
            "created_by": created_by,
            "last_updated_by": created_by,
            "created_at": now,
            "last_updated_at": now,
        }
    )
    table.put(item, condition="attribute_not_exists(pk)")
    return views.endpoint_json(server, item, server.endpoint_target(item))


def _find(endpoint_id: str) -> tuple[Server, dict[str, Any]] | None:
    """An endpoint by id in any server (MLflow's ids are global; its errors tell the two misses apart)."""
    for server in records.load_all().values():
        for endpoint in server.endpoints:
            if endpoint["endpoint_id"] == endpoint_id:
                return server, endpoint
    return None


def _owned(name: str, endpoint_id: str, found: tuple[Server, dict[str, Any]] | None, missing: str) -> tuple[Server, dict[str, Any]]:
    if found is None:
        raise not_found(missing)
    if found[0].name != name:
        raise not_found(f"MCPAccessEndpoint {endpoint_id} does not belong to server '{name}'")
    return found


def get(name: str, endpoint_id: str) -> dict[str, Any]:
    found = _find(endpoint_id)
    if found is not None and found[0].endpoint_target(found[1]) is None:
        found = None
    server, endpoint = _owned(name, endpoint_id, found, f"MCPAccessEndpoint {endpoint_id} not found")
    return views.endpoint_json(server, endpoint, server.endpoint_target(endpoint))


def update(name: str, endpoint_id: str, changes: dict[str, Any], updated_by: str | None) -> dict[str, Any]:
    if changes.get("server_version") is not None and changes.get("server_alias") is not None:
        raise invalid("Cannot set both server_version and server_alias in a single update")
    server, endpoint = _owned(name, endpoint_id, _find(endpoint_id), f"MCPAccessEndpoint not found (id='{endpoint_id}')")
    endpoint = dict(endpoint)
    if changes.get("server_version") is not None:
        _check_version(server, changes["server_version"], "update")
        endpoint["server_version"], endpoint["server_alias"] = changes["server_version"], None
    if changes.get("server_alias") is not None:
        _check_alias(server, changes["server_alias"])
        endpoint["server_alias"], endpoint["server_version"] = changes["server_alias"], None
    if "url" in changes:
        if changes["url"] is None:
            raise invalid("MCP access endpoint url cannot be None")
        _validate_url(changes["url"])
        endpoint["url"] = changes["url"]
    if changes.get("transport_type") is not None:
        endpoint["transport_type"] = changes["transport_type"]
    endpoint["last_updated_by"] = updated_by
    endpoint["last_updated_at"] = clock.now_millis()
    try:
        table.put(endpoint, condition="attribute_exists(pk)")
    except table.ConditionFailed:
        raise not_found(f"MCPAccessEndpoint not found (id='{endpoint_id}')") from None
    return views.endpoint_json(server, endpoint, server.endpoint_target(endpoint))


def delete(name: str, endpoint_id: str) -> None:
    _, endpoint = _owned(name, endpoint_id, _find(endpoint_id), f"MCPAccessEndpoint not found (id='{endpoint_id}')")
    table.delete(table.key_of(endpoint))


def search_endpoints(name: str | None, params: dict[str, Any]) -> dict[str, Any]:
    search.validate_max_results(params["max_results"])
    offset = search.start_offset(params["page_token"])
    version, alias = params.get("server_version"), params.get("server_alias")
    if name is not None:
        server = records.load(name)
        registry = [server] if server is not None else []
    else:
        registry = list(records.load_all().values())
    comparisons = search.parse_filter(search.EndpointGrammar, params["filter_string"])
    terms = search.parse_order_by(params["order_by"], {"id", "server_name", "created_at", "last_updated_at"})
    if all(key != "id" for key, _ in terms):
        terms.append(("id", True))
    rows = []
    for server in registry:
        for endpoint in server.endpoints:
            if not _selected(endpoint, version, alias):
                continue
            resolved = server.endpoint_target(endpoint)
            if resolved is None or not _endpoint_matches(endpoint, resolved, comparisons):
                continue
            rows.append((server, endpoint, resolved))
    ordered = search.sort(rows, terms, lambda row, key: _endpoint_order_value(row[1], key))
    page, token = search.page(ordered, offset, params["max_results"])
    return {"mcp_access_endpoints": [views.endpoint_json(*row) for row in page], "next_page_token": token}


def _selected(endpoint: dict[str, Any], version: str | None, alias: str | None) -> bool:
    """MLflow's query branches: a version selects direct endpoints, an alias alias-bound ones, both nothing."""
    if version is not None and alias is not None:
        return False
    if version is not None:
        return endpoint.get("server_version") == version
    if alias is not None:
        return endpoint.get("server_alias") == alias
    return True


def _endpoint_order_value(endpoint: dict[str, Any], key: str) -> Any:
    return {"id": endpoint["endpoint_id"], "server_name": endpoint["server_name"]}.get(key) or int(endpoint.get(key, 0))


def _endpoint_matches(endpoint: dict[str, Any], resolved: dict[str, Any], comparisons: list[dict[str, Any]]) -> bool:
    def value_of(comparison: dict[str, Any]) -> Any:
        key = comparison["key"]
        if key == "status":
            return resolved["status"]
        if key in ("created_at", "last_updated_at"):
            return int(endpoint[key])
        return endpoint.get(key)

    return search.matches(comparisons, value_of)
