"""The MCP server registry (MLflow 3.15+, ``/api/3.0/mlflow/mcp-servers``): the real client's MCP methods against
the local runtime, and every route compared with MLflow's own server (its FastAPI app on sqlite,
``tests/mlflow_reference.asgi_reference_server``) request by request: status and body, with the ids and times
that differ by construction masked."""

from __future__ import annotations

import json
import re
import urllib.parse
from dataclasses import dataclass, field
from typing import Any

import pytest
import requests
from mlflow import MlflowClient
from mlflow.entities.mcp_server import MCPStatus, MCPTool
from mlflow.exceptions import MlflowException

from tests.conftest import unique
from tests.mlflow_reference import asgi_reference_server

pytestmark = pytest.mark.e2e

MCP = "/api/3.0/mlflow/mcp-servers"
AJAX_MCP = "/ajax-api/3.0/mlflow/mcp-servers"
ICON = "https://93.184.216.34/icon.png"  # a public address: MLflow resolves icon hosts, and tests have no DNS


def _path(name: str) -> str:
    return urllib.parse.quote(name, safe="")


@dataclass
class Session:
    """One server's view of a scenario: its endpoint ids by the label a step gave them."""

    url: str
    ids: dict[str, str] = field(default_factory=dict)

    def send(self, method: str, path: str, body: Any = None, query: Any = None, raw: str | None = None) -> tuple[int, Any]:
        path = re.sub(r"<(\w+)>", lambda m: self.ids.get(m.group(1), m.group(1)), path)
        if raw is not None:
            response = requests.request(method, self.url + path, data=raw, headers={"Content-Type": "application/json"}, timeout=60)
        else:
            response = requests.request(method, self.url + path, json=body, params=query, timeout=60)
        return response.status_code, response.json() if response.content else None


def _masked(body: Any, ids: dict[str, str]) -> Any:
    """Times as 0, endpoint ids as their labels."""
    labels = {value: f"<{label}>" for label, value in ids.items()}
    text = json.dumps(body, sort_keys=True)
    text = re.sub(r'"(creation|last_updated)_timestamp": \d+', r'"\1_timestamp": 0', text)
    text = re.sub(r"ae-[0-9a-f]{32}", lambda m: labels.get(m.group(0), "<new-endpoint>"), text)
    masked = json.loads(text)
    _endpoints_unordered(masked)
    if isinstance(masked, dict) and "error_code" in masked:
        # Python sets in messages ("Valid keys are '{...}'") print in each process's hash order.
        masked["message"] = re.sub(r"\{('[^{}]*')\}", lambda m: "{" + ", ".join(sorted(m.group(1).split(", "))) + "}", masked["message"])
    return masked


def _endpoints_unordered(value: Any) -> None:
    """Endpoints are ordered by id, and ids are random on each server: lists of them compare as sets here
    (``test_the_client_registers_and_pages`` checks our order)."""
    if isinstance(value, dict):
        for key, inner in value.items():
            if key in ("access_endpoints", "mcp_access_endpoints") and isinstance(inner, list):
                inner.sort(key=lambda endpoint: json.dumps(endpoint, sort_keys=True))
            _endpoints_unordered(inner)
    elif isinstance(value, list):
        for inner in value:
            _endpoints_unordered(inner)


def _same(ours: Session, theirs: Session, step: tuple[Any, ...], label: str | None = None) -> Any:
    """Send one step to both servers; their answers must agree. ``label`` names the endpoint a step creates."""
    method, path, *rest = step
    body = rest[0] if rest else None
    query = rest[1] if len(rest) > 1 else None
    raw = rest[2] if len(rest) > 2 else None
    our_status, our_body = ours.send(method, path, body, query, raw)
    their_status, their_body = theirs.send(method, path, body, query, raw)
    if label is not None:
        assert our_status == their_status == 200, (step, our_body, their_body)
        ours.ids[label], theirs.ids[label] = our_body["id"], their_body["id"]
    assert (our_status, _masked(our_body, ours.ids)) == (their_status, _masked(their_body, theirs.ids)), step
    return our_body


@pytest.fixture
def pair(server: str) -> tuple[Session, Session]:
    return Session(server), Session(asgi_reference_server().url)


def test_every_route_answers_as_mlflow(pair: tuple[Session, Session]) -> None:
    """Servers, versions (SemVer latest resolution, status transitions), tags, aliases and access endpoints:
    each route with good and bad input, on both prefixes, answered as MLflow's server answers."""
    ours, theirs = pair
    namespace = f"com.{unique('mcp')}"
    name, other = f"{namespace}/weather", f"{namespace}/search"
    server, versions = f"{MCP}/{_path(name)}", f"{MCP}/{_path(name)}/versions"
    icons = [{"src": ICON, "mimeType": "IMAGE/PNG", "theme": "dark", "x-extra": 1}]
    tool = {"name": "forecast", "description": "d", "inputSchema": {"type": "object"}, "icons": [{"src": ICON, "sizes": ["48x48"]}]}

    def same(*step: Any, label: str | None = None) -> Any:
        return _same(ours, theirs, step, label)

    # servers: create, its errors, get, update
    same("POST", MCP, {"name": name, "description": "Weather", "icons": icons})
    same("POST", MCP, {"name": name})
    for bad in ({}, {"name": 3}, {"name": "no-slash"}, {"name": "a/versions"}, {"name": "a/b/c"}, {"name": ""}):
        same("POST", MCP, bad)
    same("POST", MCP, {"name": other, "icons": [{"src": "http://93.184.216.34/i.png"}]})
    same("POST", MCP, {"name": other, "icons": [{"src": "https://127.0.0.1/i.png"}]})
    same("POST", MCP, {"name": other, "icons": [{"src": "https://127.1/i.png"}]})
    same("POST", MCP, {"name": other, "icons": [{"src": "https://[::ffff:10.0.0.1]/i.png"}]})
    same("POST", MCP, {"name": other, "icons": [{"src": "https://u:p@93.184.216.34/i.png"}]})
    same("POST", MCP, {"name": other, "icons": [{"src": ICON, "mimeType": "text/plain"}]})
    same("POST", MCP, {"name": other, "icons": [{"mimeType": "image/png"}]})
    same("POST", MCP, None, None, "[1, 2]")
    same("POST", MCP, {"name": other})
    same("GET", server)
    same("GET", f"{MCP}/{_path(namespace + '/missing')}")
    same("PATCH", server, {"display_name": "Weather!", "icons": [{"src": ICON, "source": "server"}]})
    same("PATCH", server, {"icons": [{"src": ICON, "source": "version"}]})
    same("PATCH", server, {"latest_version": "1.0.0"})
    same("PATCH", f"{MCP}/{_path(namespace + '/missing')}", {"description": "x"})

    # versions: SemVer, initial status, envelope, tools, connect options
    same(
        "POST",
        versions,
        {"server_json": {"name": name, "version": "1.0.0", "description": "v1", "icons": [{"src": ICON}]}, "tools": [tool]},
    )
    same("POST", versions, {"server_json": {"name": name, "version": "1.0.0"}})
    same("POST", versions, {"server": {"name": name, "version": "1.0.1"}})
    same("POST", versions, {"server_json": {"server": {"name": name, "version": "1.2.0-rc.1"}}, "status": "active", "source": "hub"})
    same("POST", versions, {"server_json": {"name": name, "version": "1.10.0-alpha"}, "connect_options": {"env": {"hidden": True}}})
    same("POST", versions, {"server_json": {"name": name, "version": "v2"}})
    same("POST", versions, {"server_json": {"name": name, "version": "2.0.0"}, "status": "deprecated"})
    same("POST", versions, {"server_json": {"name": name, "version": "2.0.0"}, "status": "gone"})
    same("POST", versions, {"server_json": {"name": other, "version": "2.0.0"}})
    same("POST", versions, {"server_json": {"name": name}})
    same("POST", versions, {"server_json": {"name": name, "version": "2.0.0"}, "tools": [{"title": "no name"}]})
    same("POST", versions, {"server_json": {"name": name, "version": "2.0.0"}, "tools": None})
    # NaN in server.json: MLflow stores it and then fails (500) to answer it; refused here, nothing stored.
    raw = json.dumps({"server_json": {"name": name, "version": "3.0.0", "_meta": {"x": float("nan")}}})
    status, refused = ours.send("POST", versions, raw=raw)
    assert (status, refused["error_code"]) == (400, "INVALID_PARAMETER_VALUE")
    assert ours.send("GET", f"{versions}/3.0.0")[0] == 404
    same("GET", server)  # the active prerelease is latest: its status, its server.json's icons after the server's
    same("GET", f"{versions}/1.0.0")
    same("GET", f"{versions}/9.9.9")
    same("PATCH", f"{versions}/1.0.0", {"status": "active", "tools": [], "connect_options": None})
    same("PATCH", f"{versions}/1.0.0", {"status": None})
    same("PATCH", f"{versions}/1.0.0", {"status": "deleted"})
    same("PATCH", f"{versions}/1.0.0", {"status": "bogus"})
    same("GET", server)  # two active versions: the higher SemVer wins

    # tags and aliases
    same("POST", f"{server}/tags", {"key": "team", "value": "maps"})
    same("POST", f"{server}/tags", {"key": "team"})
    same("DELETE", f"{server}/tags/nope")
    same("POST", f"{versions}/1.0.0/tags", {"key": "k", "value": "v"})
    same("POST", f"{versions}/9.9.9/tags", {"key": "k", "value": "v"})
    same("DELETE", f"{versions}/1.0.0/tags/nope")
    same("POST", f"{server}/aliases", {"alias": "prod", "version": "1.0.0"})
    same("POST", f"{server}/aliases", {"alias": "beta", "version": "1.10.0-alpha"})
    same("POST", f"{server}/aliases", {"alias": "latest", "version": "1.0.0"})
    same("POST", f"{server}/aliases", {"alias": "x", "version": "9.9.9"})
    same("GET", f"{server}/aliases/prod")
    same("GET", f"{server}/aliases/latest")
    same("GET", f"{server}/aliases/nope")
    same("GET", f"{versions}/1.0.0")
    same("GET", f"{MCP}/{_path(other)}/aliases/latest")

    # access endpoints: by version, by alias, by latest; searches across servers
    same("POST", f"{server}/endpoints", {"url": "https://mcp.example/a", "server_version": "1.0.0"}, label="by_version")
    same("POST", f"{server}/endpoints", {"url": "https://mcp.example/b", "server_alias": "beta", "transport_type": "sse"}, label="by_alias")
    same("POST", f"{server}/endpoints", {"url": "https://mcp.example/c", "server_alias": "latest"}, label="by_latest")
    same("POST", f"{server}/endpoints", {"url": "https://mcp.example/d", "server_version": "1.0.0", "server_alias": "prod"})
    same("POST", f"{server}/endpoints", {"url": " ", "server_version": "1.0.0"})
    same("POST", f"{server}/endpoints", {"url": "https://mcp.example/e", "server_version": "1.0.0", "transport_type": "ws"})
    same("POST", f"{server}/endpoints", {"url": "https://mcp.example/f", "server_alias": "nope"})
    same("POST", f"{MCP}/{_path(other)}/endpoints", {"url": "https://mcp.example/g", "server_alias": "latest"})
    same("GET", f"{server}/endpoints/<by_alias>")
    same("GET", f"{MCP}/{_path(other)}/endpoints/<by_alias>")
    same("GET", f"{server}/endpoints/ae-0")
    same("PATCH", f"{server}/endpoints/<by_version>", {"url": "https://mcp.example/a2", "transport_type": "sse"})
    same("PATCH", f"{server}/endpoints/<by_version>", {"server_version": "1.0.0", "server_alias": "prod"})
    same("PATCH", f"{server}/endpoints/<by_version>", {"url": None})
    same("GET", server)
    same("GET", f"{server}/endpoints")
    same("GET", f"{server}/endpoints", None, {"server_alias": "latest"})
    same("GET", f"{server}/endpoints", None, {"order_by": ["server_name", "created_at DESC"], "filter_string": "transport_type = 'sse'"})
    same("GET", f"{MCP}/endpoints", None, {"filter_string": f"server_name IN ('{name}', '{other}') AND status = 'active'"})
    same("GET", f"{MCP}/endpoints", None, {"filter_string": "url = 'x'"})

    # server searches (scoped to this test's namespace): filters, order, pages
    scoped = f"name LIKE '{namespace}/%'"
    same("GET", MCP, None, {"filter_string": scoped})
    same("GET", MCP, None, {"filter_string": f"{scoped} AND status = 'active'"})
    same("GET", MCP, None, {"filter_string": f"{scoped} AND has_access_endpoints = true"})
    same("GET", MCP, None, {"filter_string": f"{scoped} AND has_access_endpoints = false"})
    same("GET", MCP, None, {"filter_string": f"{scoped} AND tags.team = 'maps'"})
    same("GET", MCP, None, {"filter_string": f"{scoped} AND display_name ILIKE 'weather%'"})
    same("GET", MCP, None, {"filter_string": f"{scoped} AND has_access_endpoints != true"})
    same("GET", MCP, None, {"filter_string": "bogus = 'x'"})
    same("GET", MCP, None, {"filter_string": scoped, "order_by": "name DESC"})
    same("GET", MCP, None, {"filter_string": scoped, "order_by": ["created_at DESC", "created_at"]})
    same("GET", MCP, None, {"filter_string": scoped, "order_by": "rank"})
    page = same("GET", MCP, None, {"filter_string": scoped, "max_results": 1})
    same("GET", MCP, None, {"filter_string": scoped, "max_results": 1, "page_token": page["next_page_token"]})
    for max_results in ("0", "1001", "x"):
        same("GET", MCP, None, {"max_results": max_results})
    same("GET", MCP, None, {"page_token": "!!"})

    # version searches: SemVer order and comparisons
    same("GET", versions)
    same("GET", versions, None, {"order_by": "version"})
    same("GET", versions, None, {"order_by": ["last_updated_at DESC"]})
    same("GET", versions, None, {"filter_string": "version >= '1.2.0-rc.1'"})
    same("GET", versions, None, {"filter_string": "status = 'active' AND version != '1.0.0'"})
    same("GET", versions, None, {"filter_string": "version LIKE '1%'"})
    same("GET", versions, None, {"filter_string": "version > 'one'"})
    same("GET", versions, None, {"max_results": 2})
    same("GET", f"{MCP}/{_path(namespace + '/missing')}/versions")

    # a name far past what a key holds (keys keep a digest of it) round-trips whole
    long_name = f"{namespace}/{'x' * 1500}"
    same("POST", f"{MCP}/{_path(long_name)}/versions", {"server_json": {"name": long_name, "version": "1.0.0"}})
    same("POST", f"{MCP}/{_path(long_name)}/tags", {"key": "k" * 250, "value": "v"})
    same("POST", f"{MCP}/{_path(long_name)}/versions/1.0.0/tags", {"key": "k", "value": "v"})
    # A key of long parts together past DynamoDB's 1,024 bytes is refused, clearly, where sqlite stores it.
    status, refused = ours.send("POST", f"{MCP}/{_path(long_name)}/versions/1.0.0/tags", {"key": "k" * 900, "value": "v"})
    assert (status, refused["error_code"]) == (400, "INVALID_PARAMETER_VALUE") and "too long to store" in refused["message"]
    same("GET", f"{MCP}/{_path(long_name)}/versions/1.0.0")
    same("GET", MCP, None, {"filter_string": f"name = '{long_name}'"})
    same("DELETE", f"{MCP}/{_path(long_name)}")

    # the UI's prefix
    same("GET", f"{AJAX_MCP}/{_path(name)}")
    same("GET", f"{AJAX_MCP}/{_path(name)}/versions/1.0.0")

    # deletes: an active version cannot go; deleting a version drops its aliases and their endpoints
    same("DELETE", f"{versions}/1.0.0")
    same("DELETE", server)
    same("DELETE", f"{versions}/1.10.0-alpha")
    same("DELETE", f"{versions}/1.10.0-alpha")
    same("GET", f"{server}/aliases/beta")
    same("GET", f"{server}/endpoints/<by_alias>")
    same("DELETE", f"{server}/aliases/prod")
    same("DELETE", f"{server}/aliases/prod")
    same("DELETE", f"{server}/endpoints/<by_version>")
    same("DELETE", f"{MCP}/{_path(other)}/endpoints/<by_latest>")
    same("DELETE", f"{server}/tags/team")
    same("DELETE", f"{versions}/1.0.0/tags/k")
    same("GET", server)
    same("PATCH", f"{versions}/1.2.0-rc.1", {"status": "deprecated"})
    same("PATCH", f"{versions}/1.0.0", {"status": "draft"})
    same("DELETE", f"{versions}/1.0.0")
    same("DELETE", f"{versions}/1.2.0-rc.1")
    same("DELETE", f"{versions}/1.0.1")
    same("GET", f"{server}/endpoints")  # the latest endpoint went with the last live version
    same("GET", server)
    same("DELETE", server)
    same("GET", server)
    same("DELETE", f"{MCP}/{_path(other)}")


def test_the_client_registers_and_pages(client: MlflowClient) -> None:
    """MlflowClient's MCP methods over HTTP: what it reads back is what it wrote, and pages walk the whole list."""
    namespace = f"io.{unique('mcp')}"
    names = [f"{namespace}/s{i}" for i in range(5)]
    for name in names:
        client.create_mcp_server(name, description=f"about {name}")
    version = client.create_mcp_server_version(
        {"name": names[0], "version": "0.1.0", "description": "first"}, status=MCPStatus.ACTIVE, tools=[MCPTool(name="t", title="T")]
    )
    assert (version.version, version.status, [t.name for t in version.tools]) == ("0.1.0", MCPStatus.ACTIVE, ["t"])
    client.create_mcp_server_version({"name": names[0], "version": "0.2.0-beta"})
    client.set_mcp_server_alias(names[0], "stable", "0.1.0")
    client.set_mcp_server_tag(names[0], "owner", "me")
    endpoint = client.create_mcp_access_endpoint(names[0], "https://mcp.example/x", server_alias="stable")
    assert endpoint.resolved_version.version == "0.1.0"
    assert client.get_mcp_access_endpoint(names[0], endpoint.id).url == "https://mcp.example/x"
    assert client.get_latest_mcp_server_version(names[0]).version == "0.1.0"  # active beats a higher draft
    got = client.get_mcp_server(names[0])
    assert (got.latest_version, got.status, got.aliases, got.tags) == ("0.1.0", MCPStatus.ACTIVE, {"stable": "0.1.0"}, {"owner": "me"})
    assert [e.id for e in got.access_endpoints] == [endpoint.id]
    second = client.create_mcp_access_endpoint(names[0], "https://mcp.example/y", server_version="0.2.0-beta")
    ids = [e.id for e in client.get_mcp_server(names[0]).access_endpoints]
    assert ids == sorted([endpoint.id, second.id])  # MLflow's relationship orders them by id
    assert [e.id for e in client.search_mcp_access_endpoints(server_name=names[0])] == ids
    assert [e.id for e in client.search_mcp_access_endpoints(server_name=names[0], order_by=["id DESC"])] == ids[::-1]
    client.delete_mcp_access_endpoint(names[0], second.id)

    seen, token = [], None
    while True:
        page = client.search_mcp_servers(
            filter_string=f"name LIKE '{namespace}/%'", max_results=2, order_by=["name DESC"], page_token=token
        )
        seen += [server.name for server in page]
        token = page.token
        if not token:
            break
    assert seen == sorted(names, reverse=True)
    assert [s.name for s in client.search_mcp_servers(filter_string=f"name LIKE '{namespace}/%' AND status = 'active'")] == [names[0]]

    client.update_mcp_server_version(names[0], "0.1.0", status=MCPStatus.DEPRECATED)
    client.delete_mcp_server_version(names[0], "0.1.0")  # deprecated -> deleted; its alias and endpoint go too
    assert client.search_mcp_access_endpoints(server_name=names[0]).to_list() == []
    with pytest.raises(MlflowException, match="Alias 'stable' not found") as raised:
        client.get_mcp_server_version_by_alias(names[0], "stable")
    assert raised.value.error_code == "RESOURCE_DOES_NOT_EXIST"
    for name in names:
        client.delete_mcp_server(name)
    with pytest.raises(MlflowException, match="not found"):
        client.get_mcp_server(names[0])
