"""MCP servers, their tags and aliases (``SqlAlchemyMCPServerRegistryMixin``'s server methods)."""

from __future__ import annotations

import json
import re
from typing import Any

from serverless_mlflow.core import clock
from serverless_mlflow.core.deferred import deferred
from serverless_mlflow.core.errors import already_exists, invalid, not_found
from serverless_mlflow.storage import table

from . import records, views
from .records import ACTIVE, LATEST, Server

# The filter grammar (sqlparse) loads with the first search, not at cold start.
search = deferred("gateway.mcp.search")

_NAMESPACE = re.compile(r"^[a-zA-Z0-9][a-zA-Z0-9.-]*[a-zA-Z0-9]$")
_SLUG = re.compile(r"^[a-zA-Z0-9][a-zA-Z0-9._-]*[a-zA-Z0-9]$")
_RESERVED_SLUGS = {"aliases", "endpoints", "tags", "versions"}
_BAD_NAME = "Invalid MCP server name. Expected '<reverse-dns namespace>/<server slug>' such as 'com.example/server-name'."


def validate_name(name: str) -> None:
    """``validate_mcp_server_name``."""
    if not name:
        raise invalid("MCP server name must not be empty")
    parts = name.split("/")
    if len(parts) != 2:
        raise invalid(_BAD_NAME)
    namespace, slug = parts
    if not namespace or not slug or slug in _RESERVED_SLUGS or not _NAMESPACE.fullmatch(namespace) or not _SLUG.fullmatch(slug):
        raise invalid(_BAD_NAME)


def missing_server(name: str) -> Exception:
    """``_get_entity_or_raise``'s 404."""
    return not_found(f"MCPServer not found (name='{name}')")


def require(name: str) -> Server:
    server = records.load(name)
    if server is None:
        raise missing_server(name)
    return server


def get(name: str) -> dict[str, Any]:
    server = records.load(name)
    if server is None:
        raise not_found(f"MCP server '{name}' not found")
    return views.server_json(server)


def new_server_item(name: str, created_by: str | None, now: int, description: Any = None, icons: Any = None) -> dict[str, Any]:
    return records.server_item(
        {
            "name": name,
            "display_name": None,
            "description": description,
            "icons": json.dumps(icons) if icons is not None else None,
            "created_by": created_by,
            "last_updated_by": created_by,
            "created_at": now,
            "last_updated_at": now,
        }
    )


def create(name: str, description: Any, icons: Any, created_by: str | None) -> dict[str, Any]:
    validate_name(name)
    item = new_server_item(name, created_by, clock.now_millis(), description, icons)
    try:
        table.put(item, condition="attribute_not_exists(pk)")
    except table.ConditionFailed:
        raise already_exists(f"MCP server with name '{name}' already exists") from None
    return views.server_json(Server(item))


def update(name: str, changes: dict[str, Any], updated_by: str | None) -> dict[str, Any]:
    server = require(name)
    item = dict(server.item)
    for field, value in changes.items():
        item[field] = json.dumps(value) if field == "icons" and value is not None else value
    item["last_updated_by"] = updated_by
    item["last_updated_at"] = clock.now_millis()
    try:
        table.put(item, condition="attribute_exists(pk)")
    except table.ConditionFailed:
        raise missing_server(name) from None
    server.item = item
    return views.server_json(server)


def delete(name: str) -> None:
    server = require(name)
    active = next((item for item in server.versions.values() if item["status"] == ACTIVE), None)
    if active is not None:
        raise invalid(
            f"Cannot delete MCP server '{name}' while it still has an active version ('{active['version']}'). "
            "Delete or deactivate the active version first."
        )
    # The header goes first: a concurrent write under a server that is gone is never read back.
    table.delete(records.server_key(name))
    table.batch_write(deletes=[key for key in records.item_keys(server)])


def search_servers(params: dict[str, Any]) -> dict[str, Any]:
    max_results = params["max_results"]
    search.validate_max_results(max_results)
    if max_results > search.SERVER_MAX_RESULTS:
        raise invalid(f"Invalid value for max_results. It must be at most {search.SERVER_MAX_RESULTS}, but got {max_results}")
    offset = search.start_offset(params["page_token"])
    comparisons = search.parse_filter(search.ServerGrammar, params["filter_string"], tags=True)
    for comparison in comparisons:
        if comparison["type"] == "attribute" and comparison["key"] == "has_access_endpoints":
            value = comparison["value"]
            if comparison["comparator"] != "=" or not isinstance(value, str) or value.lower() not in ("true", "false"):
                raise invalid("has_access_endpoints only supports '= true' or '= false'")
    terms = search.parse_order_by(params["order_by"], {"name", "created_at", "last_updated_at"})
    if all(key != "name" for key, _ in terms):
        terms.append(("name", True))
    servers = [server for server in records.load_all().values() if _server_matches(server, comparisons)]
    ordered = search.sort(servers, terms, _server_order_value)
    rows, token = search.page(ordered, offset, max_results)
    return {"mcp_servers": [views.server_json(server) for server in rows], "next_page_token": token}


def _server_order_value(server: Server, key: str) -> Any:
    return server.item["name"] if key == "name" else int(server.item[key])


def _server_matches(server: Server, comparisons: list[dict[str, Any]]) -> bool:
    def value_of(comparison: dict[str, Any]) -> Any:
        key = comparison["key"]
        if comparison["type"] == "tag":
            return server.tags.get(key)
        if key == "status":
            latest = server.latest()
            return latest["status"] if latest is not None else None
        value = server.item.get(key)
        return int(value) if key in ("created_at", "last_updated_at") else value

    def holds(comparison: dict[str, Any]) -> bool:
        if comparison["type"] == "attribute" and comparison["key"] == "has_access_endpoints":
            live = any(server.endpoint_target(endpoint) is not None for endpoint in server.endpoints)
            return live == (comparison["value"].lower() == "true")
        return search.matches([comparison], value_of)

    return all(holds(comparison) for comparison in comparisons)


# --- tags and aliases --------------------------------------------------------------------------------


def set_tag(name: str, key: str, value: str) -> None:
    require(name)
    table.put(records.tag_item(name, key, value))


def delete_tag(name: str, key: str) -> None:
    try:
        table.delete(records.tag_key(name, key), condition="attribute_exists(pk)")
    except table.ConditionFailed:
        raise not_found(f"Tag '{key}' not found on MCP server '{name}'") from None


def set_alias(name: str, alias: str, version: str) -> None:
    if alias == LATEST:
        raise invalid("The alias name 'latest' is reserved for automatic resolution")
    server = require(name)
    item = server.versions.get(version)
    if item is None:
        raise not_found(f"MCP server version '{name}' version '{version}' not found")
    if item["status"] == records.DELETED:
        raise invalid(f"Cannot set alias '{alias}' to deleted MCP server version '{name}' version '{version}'")
    table.put(records.alias_item(name, alias, version))


def delete_alias(name: str, alias: str) -> None:
    server = records.load(name)
    if server is None or alias not in server.aliases:
        raise not_found(f"Alias '{alias}' not found on MCP server '{name}'")
    bound = [records.endpoint_key(name, e["endpoint_id"]) for e in server.endpoints if e.get("server_alias") == alias]
    table.batch_write(deletes=[records.alias_key(name, alias), *bound])
