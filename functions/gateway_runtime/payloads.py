"""Request bodies as MLflow's gateway reads them: the JSON body, the ``model`` that names the endpoint, and
the unified chat / embeddings payloads (MLflow's pydantic ``chat.RequestPayload`` / ``embeddings.RequestPayload``),
checked with pydantic's messages for the constraints MLflow declares and dumped as its traces dump them
(``exclude_none``, fields in declaration order)."""

from __future__ import annotations

import json
from typing import Any

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
    return parsed


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
