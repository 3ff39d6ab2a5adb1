"""Request bodies as MLflow's gateway reads them: the JSON body, the ``model`` that names the endpoint, and
the unified chat / embeddings payloads (MLflow's pydantic ``chat.RequestPayload`` / ``embeddings.RequestPayload``),
checked with pydantic's messages for the constraints MLflow declares and dumped as its traces dump them
(``exclude_none``, fields in declaration order)."""

from __future__ import annotations

import json
from typing import Any

from serverless_mlflow.core.validation.json_values import NON_FINITE_MESSAGE, lone_surrogate_at, non_finite_at
from serverless_mlflow.llm_gateway.upstream import GatewayHTTPError

# pydantic's documentation links name its minor version (the pinned wheel's pydantic).
PYDANTIC_DOCS = "https://errors.pydantic.dev/2.14/v"
# chat.RequestPayload's fields in declaration order (BaseRequestPayload, then ChatCompletionRequest).
CHAT_FIELDS = (
    "n",
    "stop",
    "max_tokens",
    "max_completion_tokens",
    "stream",
    "stream_options",
    "model",
    "response_format",
    "temperature",
    "top_p",
    "presence_penalty",
    "frequency_penalty",
    "top_k",
    "messages",
    "tools",
    "tool_choice",
)
# Numeric bounds (field: (low, high, inclusive-low name)).
_BOUNDS: dict[str, tuple[float | None, float | None]] = {
    "n": (1, None),
    "max_tokens": (1, None),
    "max_completion_tokens": (1, None),
    "temperature": (0, 2),
    "top_p": (0, 1),
    "presence_penalty": (-2, 2),
    "frequency_penalty": (-2, 2),
    "top_k": (1, None),
}


def body(raw: bytes) -> dict[str, Any]:
    """MLflow's ``_get_request_body``. A body that is JSON but not an object is refused here (MLflow's
    handlers would fail on it with a 500)."""
    try:
        parsed = json.loads(raw or b"")
    except ValueError as error:
        raise GatewayHTTPError(400, f"Invalid JSON payload: {error}", "HTTPException") from None
    if not isinstance(parsed, dict):
        raise GatewayHTTPError(400, "Invalid JSON payload: the body must be a JSON object", "HTTPException")
    # Neither can travel on to a provider as JSON text (MLflow's gateway fails on them with a 500).
    if (where := lone_surrogate_at(parsed)) is not None:
        raise GatewayHTTPError(400, f"Invalid JSON payload: '{where}' holds a lone surrogate (not Unicode text)", "HTTPException")
    if (where := non_finite_at(parsed)) is not None:
        raise GatewayHTTPError(400, f"Invalid JSON payload: '{where}': {NON_FINITE_MESSAGE}", "HTTPException")
    return parsed


# Passthrough routes forward the body as it is; the fields a provider reads first must have the provider's shape,
# or the provider's refusal (or failure) would come back as this gateway's 5xx.
_PASSTHROUGH_SHAPES: dict[str, tuple[str, tuple[type, ...], str]] = {
    "messages": ("messages", (list,), "a list of messages"),
    "input": ("input", (str, list), "a string or a list"),
}


def passthrough_shape(fields: tuple[str, ...], payload: dict[str, Any]) -> None:
    """Refuse (400) a passthrough body whose ``fields`` are present with the wrong JSON type."""
    for name in fields:
        field, kinds, what = _PASSTHROUGH_SHAPES[name]
        if field in payload and not isinstance(payload[field], kinds):
            raise GatewayHTTPError(400, f"Invalid payload: '{field}' must be {what}, got {type(payload[field]).__name__}", "HTTPException")


def pop_model(payload: dict[str, Any]) -> str:
    """MLflow's ``_extract_endpoint_name_from_model`` then ``body.pop("model")``."""
    name = payload.get("model")
    if not name:
        raise GatewayHTTPError(400, "Missing required 'model' parameter in request body", "HTTPException")
    payload.pop("model")
    return str(name)


def _error(location: str, message: str, kind: str, value: Any) -> str:
    return f"{location}\n  {message} [type={kind}, input_value={value!r}, input_type={type(value).__name__}]\n    For further information visit {PYDANTIC_DOCS}/{kind}"


def _number_errors(payload: dict[str, Any]) -> list[str]:
    errors = []
    for name, (low, high) in _BOUNDS.items():
        value = payload.get(name)
        if value is None or isinstance(value, bool) or not isinstance(value, int | float):
            continue
        if low is not None and value < low:
            errors.append(_error(name, f"Input should be greater than or equal to {low}", "greater_than_equal", value))
        elif high is not None and value > high:
            errors.append(_error(name, f"Input should be less than or equal to {high}", "less_than_equal", value))
    return errors


def _message_errors(messages: Any) -> list[str]:
    if not isinstance(messages, list):
        return [_error("messages", "Input should be a valid list", "list_type", messages)]
    if not messages:
        return [_error("messages", "List should have at least 1 item after validation, not 0", "too_short", messages)]
    errors = []
    for index, message in enumerate(messages):
        if not isinstance(message, dict):
            errors.append(
                _error(f"messages.{index}", "Input should be a valid dictionary or instance of RequestMessage", "model_type", message)
            )
        elif "role" not in message:
            errors.append(_error(f"messages.{index}.role", "Field required", "missing", message))
    return errors


def _validated(model: str, errors: list[str]) -> None:
    if errors:
        count = f"{len(errors)} validation error{'s' if len(errors) > 1 else ''} for {model}"
        raise GatewayHTTPError(400, "Invalid chat payload: " + "\n".join([count, *errors]), "HTTPException")


def chat(payload: dict[str, Any]) -> dict[str, Any]:
    """``chat.RequestPayload(**payload).model_dump(exclude_none=True)``: ``n`` defaults to 1, unset fields
    (``stream`` among them) stay out, unknown fields follow in their order."""
    _validated("RequestPayload", _message_errors(payload.get("messages")) + _number_errors(payload))
    known = {name: payload[name] for name in CHAT_FIELDS if payload.get(name) is not None}
    known.setdefault("n", 1)
    ordered = {name: known[name] for name in CHAT_FIELDS if name in known}
    return ordered | {k: v for k, v in payload.items() if k not in CHAT_FIELDS and v is not None}


def embeddings(payload: dict[str, Any]) -> dict[str, Any]:
    """``embeddings.RequestPayload(**payload).model_dump(exclude_none=True)``."""
    value = payload.get("input")
    if not isinstance(value, str | list):
        raise GatewayHTTPError(
            400,
            f"Invalid embeddings payload: 1 validation error for RequestPayload\n{_error('input', 'Input should be a valid string', 'string_type', value)}",
            "HTTPException",
        )
    return {"input": value} | {k: v for k, v in payload.items() if k != "input" and v is not None}


# --- chat.RequestPayload(...).model_dump(): what MLflow's guardrails see and trace --------------------


def chat_dump(payload: dict[str, Any]) -> dict[str, Any]:
    """``chat.RequestPayload(**payload).model_dump()`` of a validated chat payload: every declared field (None
    when unset) with nested models' defaults, then the extra fields. MLflow's guardrails judge this form and
    their spans record it."""
    out: dict[str, Any] = {name: payload.get(name) for name in CHAT_FIELDS}
    out["n"] = payload.get("n", 1)
    out["messages"] = [_message(m) for m in payload["messages"]]
    if isinstance(payload.get("tools"), list):
        out["tools"] = [_tool(t) for t in payload["tools"]]
    if isinstance(payload.get("response_format"), dict):
        rf = payload["response_format"]
        spec = rf.get("json_schema")
        spec = (
            {"name": spec.get("name"), "schema": spec.get("schema"), "strict": spec.get("strict", True)}
            | _extra(spec, ("name", "schema", "strict"))
            if isinstance(spec, dict)
            else None
        )
        out["response_format"] = {"type": rf.get("type"), "json_schema": spec}
    if isinstance(payload.get("tool_choice"), dict):
        choice = payload["tool_choice"]
        out["tool_choice"] = {"type": choice.get("type"), "function": {"name": (choice.get("function") or {}).get("name")}}
    return out | _extra(payload, CHAT_FIELDS)


def without_none(value: Any) -> Any:
    """A dumped payload as MLflow's providers send it (``exclude_none`` at every level)."""
    if isinstance(value, dict):
        return {k: without_none(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [without_none(v) for v in value]
    return value


def _extra(value: dict[str, Any], declared: tuple[str, ...]) -> dict[str, Any]:
    return {k: v for k, v in value.items() if k not in declared}


def _message(message: dict[str, Any]) -> dict[str, Any]:
    content = message.get("content")
    if isinstance(content, list):
        content = [_part(part) for part in content]
    calls = message.get("tool_calls")
    if isinstance(calls, list):
        calls = [_tool_call(call) for call in calls]
    return {
        "role": message.get("role"),
        "content": content,
        "tool_calls": calls,
        "refusal": message.get("refusal"),
        "tool_call_id": message.get("tool_call_id"),
    }


def _part(part: Any) -> Any:
    if not isinstance(part, dict):
        return part
    kind = part.get("type")
    if kind == "text":
        return {"type": kind, "text": part.get("text")}
    if kind == "image_url":
        image = part.get("image_url") or {}
        return {"type": kind, "image_url": {"url": image.get("url"), "detail": image.get("detail")}}
    if kind == "input_audio":
        audio = part.get("input_audio") or {}
        return {"type": kind, "input_audio": {"data": audio.get("data"), "format": audio.get("format")}}
    return part  # reasoning parts allow extra fields: dumped as given


def _tool_call(call: dict[str, Any]) -> dict[str, Any]:
    function = call.get("function") or {}
    out = {
        "id": call.get("id"),
        "type": call.get("type", "function"),
        "function": {"name": function.get("name"), "arguments": function.get("arguments")},
    }
    if call.get("thought_signature") is not None:  # MLflow's serializer leaves it out when unset
        out["thought_signature"] = call["thought_signature"]
    return out


def _tool(tool: dict[str, Any]) -> dict[str, Any]:
    function = tool.get("function")
    if isinstance(function, dict):
        parameters = function.get("parameters")
        if isinstance(parameters, dict):
            parameters = {
                "properties": {k: _param(v) for k, v in (parameters.get("properties") or {}).items()},
                "type": parameters.get("type", "object"),
                "required": parameters.get("required"),
                "additionalProperties": parameters.get("additionalProperties"),
            }
        function = {
            "name": function.get("name"),
            "description": function.get("description"),
            "parameters": parameters,
            "strict": function.get("strict"),
        }
    uc = tool.get("uc_function")
    return {"type": tool.get("type"), "function": function, "uc_function": uc} | _extra(tool, ("type", "function", "uc_function"))


def _param(param: Any) -> Any:
    if not isinstance(param, dict):
        return param
    items = param.get("items")
    return {
        "type": param.get("type"),
        "description": param.get("description"),
        "enum": param.get("enum"),
        "items": _param(items) if items is not None else None,
    }
