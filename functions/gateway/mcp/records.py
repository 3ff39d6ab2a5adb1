"""MCP registry items of a workspace's ``MCP#<workspace>`` partition, read back as one in-memory registry.

A registry is a few hundred small items (servers are curated by people), so a read is one strongly
consistent Query: the whole partition for a search, one server's ``S#<name>`` prefix otherwise. What
MLflow's SQL resolves with joins (a server's latest version and status, an endpoint's target version) is
resolved here from those items.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from serverless_mlflow.request.workspace import current as current_workspace
from serverless_mlflow.storage import table
from serverless_mlflow.storage.schema import ENTITY

SERVER = ENTITY["mcp_server"]
SERVER_TAG = ENTITY["mcp_server_tag"]
ALIAS = ENTITY["mcp_server_alias"]
VERSION = ENTITY["mcp_server_version"]
VERSION_TAG = ENTITY["mcp_server_version_tag"]
ENDPOINT = ENTITY["mcp_access_endpoint"]

LATEST = "latest"
DELETED = "deleted"
ACTIVE = "active"


@dataclass
class Server:
    item: dict[str, Any]
    tags: dict[str, str] = field(default_factory=dict)
    aliases: dict[str, str] = field(default_factory=dict)  # alias -> version
    versions: dict[str, dict[str, Any]] = field(default_factory=dict)  # every version, deleted ones too
    version_tags: dict[str, dict[str, str]] = field(default_factory=dict)
    endpoints: list[dict[str, Any]] = field(default_factory=list)  # by id, as MLflow's relationship orders them

    @property
    def name(self) -> str:
        return str(self.item["name"])

    def live_version(self, version: str) -> dict[str, Any] | None:
        item = self.versions.get(version)
        return item if item is not None and item["status"] != DELETED else None

    def latest(self) -> dict[str, Any] | None:
        """MLflow's latest resolution: active versions first, then the highest SemVer, then the newest row."""
        live = [item for item in self.versions.values() if item["status"] != DELETED]
        if not live:
            return None
        return max(
            live,
            key=lambda item: (item["status"] == ACTIVE, *item["semver"][:3], item["semver"][3], int(item["created_at"]), item["version"]),
        )

    def alias_target(self, alias: str) -> dict[str, Any] | None:
        """The live version an alias (or ``latest``) points at."""
        if alias == LATEST:
            return self.latest()
        version = self.aliases.get(alias)
        return self.live_version(version) if version is not None else None

    def endpoint_target(self, endpoint: dict[str, Any]) -> dict[str, Any] | None:
        if endpoint.get("server_version") is not None:
            return self.live_version(endpoint["server_version"])
        if endpoint.get("server_alias") is not None:
            return self.alias_target(endpoint["server_alias"])
        return None

    def aliases_of(self, version: str) -> list[str]:
        return [alias for alias, target in sorted(self.aliases.items()) if target == version]


def _partition() -> str:
    return SERVER.pk.render({"workspace": current_workspace()})


def _build(items: list[dict[str, Any]]) -> dict[str, Server]:
    servers: dict[str, Server] = {}
    pending: list[dict[str, Any]] = []
    for item in items:
        if item.get("entity_type") == SERVER.name:
            servers[item["name"]] = Server(item)
        else:
            pending.append(item)
    for item in pending:
        kind = item.get("entity_type")
        # Names are read from attributes, not keys: a long name is only a digest in its key.
        server = servers.get(item["server_name"])
        if server is None:
            continue  # a write of a server being deleted; MLflow's foreign keys would have refused it
        if kind == SERVER_TAG.name:
            server.tags[item["key"]] = item["value"]
        elif kind == ALIAS.name:
            server.aliases[item["alias"]] = item["version"]
        elif kind == VERSION.name:
            server.versions[item["version"]] = item
        elif kind == VERSION_TAG.name:
            server.version_tags.setdefault(item["version"], {})[item["key"]] = item["value"]
        elif kind == ENDPOINT.name:
            server.endpoints.append(item)
    for server in servers.values():
        server.endpoints.sort(key=lambda endpoint: endpoint["endpoint_id"])
    return servers


def load_all() -> dict[str, Server]:
    return _build(table.query(**SERVER.query("in_workspace", workspace=current_workspace())))


def load(name: str) -> Server | None:
    """One server whole, or None."""
    return _build(table.query(**SERVER.query("whole_server", workspace=current_workspace(), name=name))).get(name)


def server_key(name: str) -> dict[str, str]:
    return SERVER.key(workspace=current_workspace(), name=name)


def server_item(attributes: dict[str, Any]) -> dict[str, Any]:
    return SERVER.item(attributes, workspace=current_workspace(), name=attributes["name"])


def tag_key(name: str, key: str) -> dict[str, str]:
    return SERVER_TAG.key(workspace=current_workspace(), name=name, key=key)


def tag_item(name: str, key: str, value: str) -> dict[str, Any]:
    return SERVER_TAG.item({"server_name": name, "key": key, "value": value}, workspace=current_workspace(), name=name, key=key)


def alias_key(name: str, alias: str) -> dict[str, str]:
    return ALIAS.key(workspace=current_workspace(), name=name, alias=alias)


def alias_item(name: str, alias: str, version: str) -> dict[str, Any]:
    return ALIAS.item({"server_name": name, "alias": alias, "version": version}, workspace=current_workspace(), name=name, alias=alias)


def version_key(name: str, version: str) -> dict[str, str]:
    return VERSION.key(workspace=current_workspace(), name=name, version=version)


def version_item(attributes: dict[str, Any]) -> dict[str, Any]:
    return VERSION.item(
        {**attributes, "server_name": attributes["name"]},
        workspace=current_workspace(),
        name=attributes["name"],
        version=attributes["version"],
    )


def version_tag_key(name: str, version: str, key: str) -> dict[str, str]:
    return VERSION_TAG.key(workspace=current_workspace(), name=name, version=version, key=key)


def version_tag_item(name: str, version: str, key: str, value: str) -> dict[str, Any]:
    attributes = {"server_name": name, "version": version, "key": key, "value": value}
    return VERSION_TAG.item(attributes, workspace=current_workspace(), name=name, version=version, key=key)


def endpoint_key(name: str, endpoint_id: str) -> dict[str, str]:
    return ENDPOINT.key(workspace=current_workspace(), name=name, endpoint_id=endpoint_id)


def endpoint_item(attributes: dict[str, Any]) -> dict[str, Any]:
    return ENDPOINT.item(attributes, workspace=current_workspace(), name=attributes["server_name"], endpoint_id=attributes["endpoint_id"])


def item_keys(server: Server) -> list[dict[str, str]]:
    """Every item of a server (for its delete)."""
    return [table.key_of(item) for item in table.query(**SERVER.query("whole_server", workspace=current_workspace(), name=server.name))]
