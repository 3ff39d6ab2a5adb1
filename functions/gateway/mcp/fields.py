"""The fields of each MCP registry request, as ``Message`` declarations: what the fuzz suite and the docs read.

These routes are not protobuf messages in MLflow (FastAPI/Pydantic models); ``wire`` parses them. The kinds
here only say what each field holds.
"""

from __future__ import annotations

from serverless_mlflow.request import Message

_SEARCH = {"filter_string": "string", "max_results": "int32", "order_by": "[string]", "page_token": "string"}
_ENDPOINT_SEARCH = {**_SEARCH, "server_version": "string", "server_alias": "string"}
_TAG = Message({"key": "string", "value": "string"})

MESSAGES: dict[str, Message] = {
    "create_mcp_server": Message({"name": "string", "description": "string", "icons": "[message]"}),
    "search_mcp_servers": Message(_SEARCH),
    "get_mcp_server": Message({}),
    "update_mcp_server": Message({"display_name": "string", "description": "string", "icons": "[message]"}),
    "delete_mcp_server": Message({}),
    "create_mcp_server_version": Message(
        {"server_json": "message", "status": "string", "source": "string", "tools": "[message]", "connect_options": "map"}
    ),
    "search_mcp_server_versions": Message(_SEARCH),
    "get_mcp_server_version": Message({}),
    "update_mcp_server_version": Message({"status": "string", "tools": "[message]", "connect_options": "map"}),
    "delete_mcp_server_version": Message({}),
    "get_mcp_server_version_by_alias": Message({}),
    "set_mcp_server_tag": _TAG,
    "delete_mcp_server_tag": Message({}),
    "set_mcp_server_version_tag": _TAG,
    "delete_mcp_server_version_tag": Message({}),
    "set_mcp_server_alias": Message({"alias": "string", "version": "string"}),
    "delete_mcp_server_alias": Message({}),
    "create_mcp_access_endpoint": Message(
        {"url": "string", "transport_type": "string", "server_version": "string", "server_alias": "string"}
    ),
    "get_mcp_access_endpoint": Message({}),
    "update_mcp_access_endpoint": Message(
        {"url": "string", "transport_type": "string", "server_version": "string", "server_alias": "string"}
    ),
    "delete_mcp_access_endpoint": Message({}),
    "search_mcp_access_endpoints": Message(_ENDPOINT_SEARCH),
    "search_all_mcp_access_endpoints": Message(_ENDPOINT_SEARCH),
}
