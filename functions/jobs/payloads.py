"""The jobs routes' request bodies checked as MLflow's pydantic models check them (``SubmitJobPayload``,
``SearchJobPayload``): a wrong body is FastAPI's 422 with pydantic's error list, never a 500."""

from __future__ import annotations

import math
from typing import Any

from serverless_mlflow.core.validation import validate_finite_json
from serverless_mlflow.http.api import Request, json_response
from serverless_mlflow.store.jobs import STATUSES

# field -> (required, kind)
Fields = dict[str, tuple[bool, str]]
SUBMIT_FIELDS: Fields = {"job_name": (True, "str"), "params": (True, "dict"), "timeout": (False, "float")}
SEARCH_FIELDS: Fields = {"job_name": (False, "str"), "params": (False, "dict"), "statuses": (False, "statuses")}

_ENUM_TEXT = ", ".join(f"'{status}'" for status in STATUSES[:-1]) + f" or '{STATUSES[-1]}'"


def validated(req: Request, fields: Fields) -> dict[str, Any] | Any:
    """The payload's fields, or the 422 response to answer. A NaN or an infinity anywhere is refused first (400):
    a job stored with one could not be answered as JSON, and every later search would fail."""
    body = req.json
    validate_finite_json(body)
    errors: list[dict[str, Any]] = []
    out: dict[str, Any] = {}
    for name, (required, kind) in fields.items():
        if name not in body:
            if required:
                errors.append({"type": "missing", "loc": ["body", name], "msg": "Field required", "input": body})
            continue
        value = body[name]
        if value is None and not required:
            continue
        checked = _check(name, kind, value, errors)
        if checked is not None:
            out[name] = checked
    if errors:
        return json_response({"detail": errors}, 422)
    return out


def _check(name: str, kind: str, value: Any, errors: list[dict[str, Any]]) -> Any:
    loc = ["body", name]
    if kind == "str":
        if isinstance(value, str):
            return value
        errors.append({"type": "string_type", "loc": loc, "msg": "Input should be a valid string", "input": value})
    elif kind == "dict":
        if isinstance(value, dict):
            return value
        errors.append({"type": "dict_type", "loc": loc, "msg": "Input should be a valid dictionary", "input": value})
    elif kind == "float":
        number = _lax_float(value)
        if number is not None:
            return number
        errors.append(
            {"type": "float_parsing" if isinstance(value, str) else "float_type", "loc": loc, "msg": _float_message(value), "input": value}
        )
    elif kind == "statuses":
        if not isinstance(value, list):
            errors.append({"type": "list_type", "loc": loc, "msg": "Input should be a valid list", "input": value})
            return None
        bad = False
        for index, status in enumerate(value):
            if status not in STATUSES:
                bad = True
                errors.append(
                    {
                        "type": "enum",
                        "loc": [*loc, index],
                        "msg": f"Input should be {_ENUM_TEXT}",
                        "input": status,
                        "ctx": {"expected": _ENUM_TEXT},
                    }
                )
        return None if bad else value
    return None


def _lax_float(value: Any) -> float | None:
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, int | float):
        return float(value) if math.isfinite(float(value)) else None
    if isinstance(value, str):
        try:
            return float(value.strip())
        except ValueError:
            return None
    return None


def _float_message(value: Any) -> str:
    if isinstance(value, str):
        return "Input should be a valid number, unable to parse string as a number"
    return "Input should be a valid number"
