"""The MCP registry's request bodies and query parameters, checked as MLflow's FastAPI models check them.

MLflow declares these requests as Pydantic models and answers a failed check with INVALID_PARAMETER_VALUE
``Invalid request: <field>: <pydantic message>`` (``mcp_server_api._request_validation_error_response``);
the messages here are Pydantic's for the cases a client can send.
"""

from __future__ import annotations

import math
from typing import Any

from serverless_mlflow.core import public_url
from serverless_mlflow.core.errors import invalid
from serverless_mlflow.http.api import Request
from serverless_mlflow.request import json_text

MAX_ICONS = 100
MAX_TOOLS = 1000
STATUSES = ("draft", "active", "deprecated", "deleted")
TRANSPORTS = ("streamable-http", "sse")

_MISSING = object()


class Invalid(Exception):
    """One Pydantic-style error: its location and message."""

    def __init__(self, location: str, message: str) -> None:
        super().__init__(f"{location}: {message}" if location else message)


def rejected(error: Invalid) -> Exception:
    return invalid(f"Invalid request: {error}")


def body(req: Request) -> dict[str, Any]:
    """The JSON object a create/update route reads (FastAPI answers a missing or non-object body itself)."""
    raw = req.raw_body or b""
    if not raw.strip():
        raise rejected(Invalid("", "Field required"))
    try:
        parsed = json_text.loads(raw)
    except json_text.TooDeep:
        raise invalid(f"The request body is not valid: its JSON is nested more than {json_text.MAX_DEPTH} levels deep.") from None
    except ValueError:
        raise rejected(Invalid("", "JSON decode error")) from None
    if not isinstance(parsed, dict):
        raise rejected(Invalid("", "Input should be a valid dictionary or object to extract fields from"))
    if not _finite(parsed):
        # MLflow stores NaN inside server.json or a tool schema, then fails (500) to answer it back as JSON.
        raise invalid("Invalid request: NaN and Infinity are not JSON values; the body holds one.")
    return parsed


def _finite(value: Any) -> bool:
    stack = [value]
    while stack:
        current = stack.pop()
        if isinstance(current, float) and not math.isfinite(current):
            return False
        if isinstance(current, dict):
            stack.extend(current.values())
        elif isinstance(current, list):
            stack.extend(current)
    return True


def string(data: dict[str, Any], field: str, location: str = "", *, required: bool = False, nullable: bool = True) -> Any:
    """A ``str`` field: ``_MISSING`` when absent (and not required), None when null and nullable."""
    where = f"{location}{field}"
    if field not in data:
        if required:
            raise rejected(Invalid(where, "Field required"))
        return _MISSING
    value = data[field]
    if value is None and nullable and not required:
        return None
    if not isinstance(value, str):
        raise rejected(Invalid(where, "Input should be a valid string"))
    return value


def present(value: Any) -> bool:
    return value is not _MISSING


def or_none(value: Any) -> Any:
    return None if value is _MISSING else value


def mapping(data: dict[str, Any], field: str, location: str = "") -> Any:
    if field not in data:
        return _MISSING
    value = data[field]
    if value is not None and not isinstance(value, dict):
        raise rejected(Invalid(f"{location}{field}", "Input should be a valid dictionary"))
    return value


def array(data: dict[str, Any], field: str, location: str = "", max_length: int | None = None) -> Any:
    if field not in data:
        return _MISSING
    value = data[field]
    if value is None:
        return None
    if not isinstance(value, list):
        raise rejected(Invalid(f"{location}{field}", "Input should be a valid list"))
    if max_length is not None and len(value) > max_length:
        raise rejected(Invalid(f"{location}{field}", f"List should have at most {max_length} items after validation, not {len(value)}"))
    return value


# --- icons -------------------------------------------------------------------------------------------


def icons(data: dict[str, Any], field: str = "icons", location: str = "") -> Any:
    """``list[MCPIconRequestPayload] | None``: each icon's src is a public https URL, its mimeType image/*."""
    raw = array(data, field, location, MAX_ICONS)
    if raw is _MISSING or raw is None:
        return raw
    out = []
    for index, icon in enumerate(raw):
        where = f"{location}{field}.{index}."
        if not isinstance(icon, dict):
            raise rejected(Invalid(f"{location}{field}.{index}", "Input should be a valid dictionary or object to extract fields from"))
        src = string(icon, "src", where, required=True)
        sizes = array(icon, "sizes", where)
        if isinstance(sizes, list) and any(not isinstance(size, str) for size in sizes):
            position = next(i for i, size in enumerate(sizes) if not isinstance(size, str))
            raise rejected(Invalid(f"{where}sizes.{position}", "Input should be a valid string"))
        mime_type = string(icon, "mimeType", where)
        string(icon, "theme", where)
        public_url.validate_icon_url(src)
        cleaned = dict(icon)
        if isinstance(mime_type, str):
            normalized = mime_type.strip().lower()
            if not normalized.startswith("image/") or normalized == "image/":
                raise invalid(f"Invalid icon mimeType {mime_type!r}. Allowed values must use the 'image/*' media type.")
            cleaned["mimeType"] = normalized
        # ``model_dump(exclude_none=True)``: unset optional fields drop out, extra keys stay.
        out.append({key: value for key, value in cleaned.items() if value is not None})
    return out


def strip_icon_sources(raw: Any, field: str = "icons") -> Any:
    """``_strip_mcp_icon_response_fields``: an echoed ``source="server"`` is dropped, ``"version"`` refused."""
    if not isinstance(raw, list):
        return raw
    out = []
    for index, icon in enumerate(raw):
        if isinstance(icon, dict):
            if icon.get("source") == "version":
                raise invalid(
                    f"Invalid {field}[{index}].source: 'version' is response-only and cannot be written. Writing it would "
                    "persist a version-resolved icon as a server override. Omit source, or send source='server' when "
                    "echoing a server icon."
                )
            icon = {key: value for key, value in icon.items() if key != "source"}
        out.append(icon)
    return out


# --- tools and connect options --------------------------------------------------------------------------

_TOOL_STRINGS = ("title", "description")
_TOOL_OBJECTS = ("inputSchema", "outputSchema", "annotations", "execution")


def tools(data: dict[str, Any], location: str = "") -> Any:
    """``list[MCPToolRequestPayload] | None``, as ``MCPTool.to_dict()`` keeps them (unset fields dropped)."""
    raw = array(data, "tools", location, MAX_TOOLS)
    if raw is _MISSING or raw is None:
        return raw
    out = []
    for index, tool in enumerate(raw):
        where = f"{location}tools.{index}."
        if not isinstance(tool, dict):
            raise rejected(Invalid(f"{location}tools.{index}", "Input should be a valid dictionary or object to extract fields from"))
        name = string(tool, "name", where, required=True)
        kept: dict[str, Any] = {"name": name}
        for field in _TOOL_STRINGS:
            value = string(tool, field, where)
            if isinstance(value, str):
                kept[field] = value
        for field in _TOOL_OBJECTS:
            value = mapping(tool, field, where)
            if isinstance(value, dict):
                kept[field] = value
        tool_icons = icons(tool, "icons", where)
        if isinstance(tool_icons, list):
            kept["icons"] = strip_icon_sources(tool_icons, f"tools[{index}].icons")
        # MCPTool.to_dict's key order
        out.append({key: kept[key] for key in ("name", "title", "description", *_TOOL_OBJECTS[:3], "icons", "execution") if key in kept})
    return out


def connect_options(data: dict[str, Any], location: str = "") -> Any:
    """``dict[str, ConnectOptionSettings] | None``: each value ``{"hidden": bool}``."""
    raw = mapping(data, "connect_options", location)
    if raw is _MISSING or raw is None:
        return raw
    out = {}
    for key, value in raw.items():
        where = f"{location}connect_options.{key}"
        if not isinstance(value, dict):
            raise rejected(Invalid(where, "Input should be a valid dictionary or instance of ConnectOptionSettings"))
        hidden = value.get("hidden", False)
        if isinstance(hidden, str) and hidden.lower() in ("true", "false", "1", "0", "yes", "no", "on", "off", "t", "f", "y", "n"):
            hidden = hidden.lower() in ("true", "1", "yes", "on", "t", "y")
        elif hidden in (0, 1) and not isinstance(hidden, float | bool):
            hidden = bool(hidden)
        if not isinstance(hidden, bool):
            raise rejected(Invalid(f"{where}.hidden", "Input should be a valid boolean"))
        out[key] = {"hidden": hidden}
    return out


# --- enums -------------------------------------------------------------------------------------------------


def status(value: Any) -> str:
    if value not in STATUSES:
        raise invalid(f"Invalid status: '{value}'")
    return value


def transport(value: Any) -> str:
    if value not in TRANSPORTS:
        raise invalid(f"Invalid transport_type: '{value}'")
    return value


# --- search parameters -------------------------------------------------------------------------------------


def search_params(req: Request, extra: tuple[str, ...] = ()) -> dict[str, Any]:
    """``filter_string``, ``max_results`` (default 100), ``order_by`` (repeated), ``page_token`` and ``extra``."""
    query = req.query
    out: dict[str, Any] = {name: (query[name][-1] if name in query else None) for name in ("filter_string", "page_token", *extra)}
    out["order_by"] = query.get("order_by") or None
    raw_max = query["max_results"][-1] if "max_results" in query else "100"
    try:
        out["max_results"] = int(raw_max.strip())
    except ValueError:
        raise rejected(Invalid("query.max_results", "Input should be a valid integer, unable to parse string as an integer")) from None
    return out
