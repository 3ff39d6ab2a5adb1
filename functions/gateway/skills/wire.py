"""The skill registry's request bodies, path and query parameters, checked as MLflow's FastAPI models
(``skill_registry_api``: ``extra="forbid"`` Pydantic models) check them.

A failed model check answers INVALID_PARAMETER_VALUE ``Invalid request: <loc>: <message>``, every error of
the body joined with ``; `` in Pydantic's order (declared fields, then the extra ones).
"""

from __future__ import annotations

import math
import urllib.parse
from typing import Any

from serverless_mlflow.core.errors import invalid
from serverless_mlflow.http.api import Request
from serverless_mlflow.request import json_text

from ..mcp import wire as mcp_wire

MISSING = mcp_wire._MISSING
MAX_ICONS = 100
MAX_BULK_REGISTER = 500
_NOT_A_DICT = "Input should be a valid dictionary or object to extract fields from"


def rejected(*errors: str) -> Exception:
    return invalid(f"Invalid request: {'; '.join(errors)}")


def body(req: Request) -> dict[str, Any]:
    raw = req.raw_body or b""
    if not raw.strip():
        raise rejected("Field required")
    try:
        parsed = json_text.loads(raw)
    except json_text.TooDeep:
        raise invalid(f"The request body is not valid: its JSON is nested more than {json_text.MAX_DEPTH} levels deep.") from None
    except ValueError:
        raise rejected("0: JSON decode error") from None
    if not isinstance(parsed, dict):
        raise rejected(_NOT_A_DICT)
    return parsed


def body_or_none(req: Request) -> Any:
    """The JSON value of a body (any type), None when it is not JSON: the registration route reads it itself."""
    try:
        return json_text.loads(req.raw_body or b"")
    except json_text.TooDeep:
        raise invalid(f"The request body is not valid: its JSON is nested more than {json_text.MAX_DEPTH} levels deep.") from None
    except ValueError:
        return None


def content_type(req: Request) -> str:
    value = next((value for key, value in req.headers.items() if key.lower() == "content-type"), "")
    return value.split(";", 1)[0].strip().lower()


class Model:
    """One Pydantic model's check of a JSON object: ``fields`` name -> kind, in declaration order.

    Kinds: ``str`` (nullable when ``?``), ``int``, ``list``, ``icons``. Errors are collected, then raised together."""

    def __init__(self, fields: dict[str, str], required: tuple[str, ...] = ()) -> None:
        self.fields = fields
        self.required = required

    def parse(self, data: dict[str, Any], location: str = "") -> dict[str, Any]:
        errors: list[str] = []
        out: dict[str, Any] = {}
        for name, kind in self.fields.items():
            where = f"{location}{name}"
            if name not in data:
                if name in self.required:
                    errors.append(f"{where}: Field required")
                continue
            value = data[name]
            nullable = kind.endswith("?")
            kind = kind.rstrip("?")
            if value is None and nullable:
                out[name] = None
            elif kind == "str":
                if isinstance(value, str):
                    out[name] = value
                else:
                    errors.append(f"{where}: Input should be a valid string")
            elif kind == "int":
                parsed = _integer(value)
                if parsed is None:
                    errors.append(f"{where}: {_integer_error(value)}")
                else:
                    out[name] = parsed
            elif kind == "list":
                if isinstance(value, list):
                    out[name] = value
                else:
                    errors.append(f"{where}: Input should be a valid list")
            elif kind == "icons":
                out[name] = value  # checked by ``icons`` after the model (MLflow's field validators)
        for name in data:
            if name not in self.fields:
                errors.append(f"{location}{name}: Extra inputs are not permitted")
        if errors:
            raise rejected(*errors)
        return out


# MLflow's registration route answers Pydantic's own text (``str(ValidationError)``), which links the errors'
# documentation of the Pydantic release MLflow runs with.
_PYDANTIC_DOCS = "https://errors.pydantic.dev/2.14/v"


def pydantic_errors(model: str, errors: list[tuple[str, str, str, Any]]) -> Exception:
    """``Invalid registration metadata: <str(ValidationError)>``: (location, message, type, input) each."""
    count = len(errors)
    lines = [f"{count} validation error{'s' if count != 1 else ''} for {model}"]
    for location, message, kind, value in errors:
        if location:
            lines.append(location)
        lines.append(f"  {message} [type={kind}, input_value={value!r}, input_type={type(value).__name__}]")
        lines.append(f"    For further information visit {_PYDANTIC_DOCS}/{kind}")
    return invalid("Invalid registration metadata: " + "\n".join(lines))


def _integer(value: Any) -> int | None:
    """Pydantic's lax ``int``: ints, integral floats, and strings of digits."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            return None
    return None


def _integer_error(value: Any) -> str:
    if isinstance(value, float):
        if not math.isfinite(value):
            return "Input should be a finite number"
        return "Input should be a valid integer, got a number with a fractional part"
    if isinstance(value, str):
        return "Input should be a valid integer, unable to parse string as an integer"
    return "Input should be a valid integer"


def icons(data: dict[str, Any]) -> Any:
    """``list[SkillIconRequestPayload] | None`` (at most 100): MLflow's icon URL and mimeType checks."""
    return mcp_wire.icons(data)


# --- path and query parameters ------------------------------------------------------------------------


def path(req: Request, name: str) -> str:
    return urllib.parse.unquote(req.path_params[name])


def path_name(req: Request) -> str:
    """``SkillNamePath``: a segment that does not begin with ``@`` (which marks an organization)."""
    name = path(req, "name")
    if not name or name.startswith("@") or "/" in name:
        raise rejected("path.name: String should match pattern '^[^@/][^/]*$'")
    return name


def path_version(req: Request) -> int:
    raw = path(req, "version")
    try:
        return int(raw.strip())
    except ValueError:
        raise rejected("path.version: Input should be a valid integer, unable to parse string as an integer") from None


def search_params(req: Request) -> dict[str, Any]:
    """``filter_string``, ``max_results`` (default 100), ``order_by`` (repeated), ``page_token``."""
    query = req.query
    out: dict[str, Any] = {name: (query[name][-1] if name in query else None) for name in ("filter_string", "page_token")}
    out["order_by"] = query.get("order_by") or None
    out["include_skill_identities"] = query.get("include_skill_identities")
    raw_max = query["max_results"][-1] if "max_results" in query else "100"
    try:
        out["max_results"] = int(raw_max.strip())
    except ValueError:
        raise rejected("query.max_results: Input should be a valid integer, unable to parse string as an integer") from None
    return out
