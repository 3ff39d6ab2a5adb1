"""JSON values in a request, checked the same way on every route: NaN or Infinity where no protobuf double reads
it, strings that are not Unicode text (a lone surrogate), and the answer side's guard for what older releases
stored before these checks.

Protobuf's JSON parser reads a bare ``NaN``/``Infinity`` (or a number past float64, ``1e309``) only into a double
field, and even there MLflow's client sends the quoted forms. Anywhere else (free-form JSON a route stores: job
parameters, issue categories, an assessment's value, server.json) such a value is stored and then cannot be
answered as JSON: MLflow's server fails (500) on every later read. Here it is refused before anything is written.
Integers past their proto type's range are refused by the request parser (``request.proto.int_in_range``) and,
should one reach a key, by the key encoders (``keys.OutOfRange``).
"""

from __future__ import annotations

import math
from typing import Any

from serverless_mlflow.core.errors import invalid

NON_FINITE_MESSAGE = "NaN and Infinity are not JSON values (JSON numbers are finite)"


def non_finite_at(value: Any, path: str = "") -> str | None:
    """The path of the first number in ``value`` that is not finite (``a.b[2]``), or None. Iterative: a hostile
    document nested deep cannot exhaust the stack."""
    stack: list[tuple[Any, str]] = [(value, path)]
    while stack:
        current, where = stack.pop()
        if isinstance(current, float):
            if not math.isfinite(current):
                return where
        elif isinstance(current, dict):
            stack.extend((child, f"{where}.{key}" if where else str(key)) for key, child in current.items())
        elif isinstance(current, list):
            stack.extend((child, f"{where}[{index}]") for index, child in enumerate(current))
    return None


def lone_surrogate_at(value: Any, path: str = "") -> str | None:
    """The path of the first string (a value or a key) in ``value`` holding a lone UTF-16 surrogate (JSON text may
    write ``"\\ud800"``; it is not Unicode text: no UTF-8 encoder, DynamoDB or upstream API takes it), or None."""
    stack: list[tuple[Any, str]] = [(value, path)]
    while stack:
        current, where = stack.pop()
        if isinstance(current, str):
            if not _utf8(current):
                return where
        elif isinstance(current, dict):
            for key, child in current.items():
                if isinstance(key, str) and not _utf8(key):
                    return where or "(a key)"
                stack.append((child, f"{where}.{key}" if where else str(key)))
        elif isinstance(current, list):
            stack.extend((child, f"{where}[{index}]") for index, child in enumerate(current))
    return None


def _utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def validate_finite_json(value: Any, path: str = "") -> None:
    """Refuse (INVALID_PARAMETER_VALUE) JSON holding a NaN or an infinity anywhere: nothing is stored."""
    where = non_finite_at(value, path)
    if where is not None:
        name = f" for parameter '{where}'" if where else ""
        raise invalid(f"Invalid value{name} supplied: {NON_FINITE_MESSAGE}.")


def protobuf_json_floats(value: Any) -> Any:
    """``value`` with each non-finite float written as protobuf's JSON writes a double (``"NaN"``, ``"Infinity"``,
    ``"-Infinity"``): what an answer carries when an item stored before the checks above holds one."""
    if isinstance(value, float):
        if math.isfinite(value):
            return value
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, dict):
        return {key: protobuf_json_floats(child) for key, child in value.items()}
    if isinstance(value, (list, tuple)):
        return [protobuf_json_floats(child) for child in value]
    return value


def float_json(value: float) -> float | str:
    """Protobuf JSON for a double: NaN and infinities travel as strings."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    return value
