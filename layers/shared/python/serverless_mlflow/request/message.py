"""A request message declared once (proto field types + the handler's checks) and parsed like MLflow.

MLflow first parses the request JSON into its protobuf message; only when that fails does it run the
handler's type checks, then it always runs the presence and range checks
(``server/handlers._get_request_message`` / ``_validate_param_against_schema``). A feature lists its
operations' ``Message``s in one table and its handlers call ``req.message(MESSAGES[operation])``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from serverless_mlflow.core.validation.json_values import validate_finite_json

from .answers import type_error
from .checks import Check, validate
from .proto import INT_RANGES, int_in_range, parse, string_map


@dataclass(frozen=True)
class Message:
    """One operation's request.

    ``fields``: the proto message's fields and kinds (see ``proto``); ``None`` when MLflow's handler reads
    the raw JSON without a proto message (``_get_validated_flask_request_json``).
    ``checks``: the handler's ``schema``; ``None`` when it parses without one.
    ``run_id_alias``: ``run_id`` falls back to ``run_uuid`` (old clients send only that), as MLflow's
    schema check and handlers do.

    On every route an int32/int64 value outside its type's range is refused (MLflow's server lets protobuf leave
    such a field at its default and goes on, storing a wrong number or failing later), and a raw-JSON route's
    body may hold no NaN or infinity (``validation.json_values``): no protobuf double reads it there.
    """

    fields: Mapping[str, str] | None
    checks: Mapping[str, Sequence[Check]] | None = None
    run_id_alias: bool = False

    @property
    def repeated(self) -> tuple[str, ...]:
        return tuple(name for name, kind in (self.fields or {}).items() if kind.startswith("["))

    @property
    def booleans(self) -> tuple[str, ...]:
        return tuple(name for name, kind in (self.fields or {}).items() if kind == "bool")


def parse_message(raw: Mapping[str, Any], spec: Message) -> dict[str, Any]:
    """Parse and check a request like MLflow: only the fields that were sent come back, typed."""
    if spec.fields is None:
        validate(raw, spec.checks or {}, proto_ok=False)
        validate_finite_json(raw)
        return dict(raw)
    raw = dict(raw)
    if spec.run_id_alias and raw.get("run_id") in (None, "") and raw.get("run_uuid") not in (None, ""):
        raw["run_id"] = raw["run_uuid"]
    parsed, ok = parse(raw, spec.fields)
    if spec.checks:
        validate(raw, spec.checks, ok)
    if not ok:
        # Types that the handler schema did not check still fail protobuf parsing in MLflow.
        for name in spec.fields:
            if name in raw and name not in parsed and raw[name] is not None:
                raise type_error(name, raw[name])
    for name, kind in spec.fields.items():
        if name not in parsed:
            continue
        if kind in INT_RANGES:
            parsed[name] = int_in_range(parsed[name], name, raw[name], kind)
        elif kind.strip("[]") in INT_RANGES and kind.startswith("["):
            parsed[name] = [int_in_range(item, name, raw[name], kind.strip("[]")) for item in parsed[name]]
        elif kind == "map":
            parsed[name] = string_map(name, parsed[name])
    return parsed
