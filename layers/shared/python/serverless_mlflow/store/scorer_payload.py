"""MLflow's checks of a serialized scorer the server will store or run (``server/handlers._validate_serialized_scorer_payload``):
shared by scorer registration (functions/evaluation) and the invoke routes that hand a scorer to a job."""

from __future__ import annotations

import os
from typing import Any

from serverless_mlflow.core.errors import invalid
from serverless_mlflow.request import json_text
from serverless_mlflow.store import scorer_refs

# mlflow.genai.scorers.scorer_utils.DECORATOR_SCORER_REGISTRATION_NOT_SUPPORTED_ERROR
DECORATOR_SCORER_REGISTRATION_NOT_SUPPORTED_ERROR = (
    "Custom scorer registration (using @scorer decorator) is disabled by default "
    "outside of Databricks tracking environments due to security concerns. "
    "Custom scorers require arbitrary code execution during deserialization.\n\n"
    "To use custom scorers:\n"
    "1. Configure MLflow to use a Databricks tracking URI, or\n"
    "2. Manage your custom scorer code in a source code repository "
    "(e.g., GitHub) and import it directly, or\n"
    "3. On a self-managed MLflow server (or local environment) that you trust to run the "
    "scorer's code, set the MLFLOW_SERVER_ENABLE_CUSTOM_SCORERS environment variable to true, or\n"
    "4. Use built-in scorers or make_judge() scorers instead."
)
# mlflow.utils.validation.GATEWAY_DESTINATION_KEYS
_DESTINATION_KEYS = frozenset({"api_base", "base_url", "model_list", "fallbacks", "custom_llm_provider"})


def validate_payload(serialized_scorer: str) -> dict[str, Any]:
    try:
        data = json_text.loads(serialized_scorer)
    except ValueError:
        raise invalid("serialized_scorer must be valid JSON") from None
    if scorer_refs.has_call_source(data) and not _custom_scorers_enabled():
        raise invalid(DECORATOR_SCORER_REGISTRATION_NOT_SUPPORTED_ERROR)
    if (name := scorer_refs.custom_scorer_without_source(data)) is not None:
        raise invalid(_without_source_message(name))
    for third_party in _third_party_data(data):
        kwargs = third_party.get("kwargs")
        if kwargs is not None and not isinstance(kwargs, dict):
            raise invalid(f"third_party_scorer_data.kwargs must be a JSON object, got {type(kwargs).__name__}.")
        if found := sorted(_destination_keys(kwargs)):
            raise invalid(
                f"third_party_scorer_data.kwargs must not contain {', '.join(map(repr, found))}: "
                "these options choose where the scorer's LLM client sends requests. Configure "
                "the judge endpoint on the server instead, for example through a gateway "
                "endpoint ('gateway:/<name>') or the provider's environment variables."
            )
    if not isinstance(data, dict):
        # MLflow's store then fails on `.get` (a 500); a scorer is a JSON object.
        raise invalid("serialized_scorer must be a JSON object")
    return data


def _without_source_message(name: str) -> str:
    # mlflow.genai.scorers.scorer_utils.custom_scorer_without_source_error_message (3.18)
    return (
        f"Scorer '{name or '<unnamed>'}' has no source code: the body of its function is empty "
        "or could not be read. Common causes: a lambda (use `def` instead), a body with only a "
        "docstring (add the scoring code), an `async def` function (not supported), or a "
        "function defined with `exec`, in a REPL, or in a file that changed after it was "
        "imported (define it in a file or notebook cell, and register it before you change "
        "the file)."
    )


def _custom_scorers_enabled() -> bool:
    # The same operator opt-in as MLflow's server (an environment variable of the function).
    return os.environ.get("MLFLOW_SERVER_ENABLE_CUSTOM_SCORERS", "false").strip().lower() in ("true", "1")


def _third_party_data(value: Any) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    if isinstance(value, dict):
        data = value.get("third_party_scorer_data")
        if isinstance(data, dict):
            out.append(data)
        for nested in value.values():
            out += _third_party_data(nested)
    elif isinstance(value, list):
        for nested in value:
            out += _third_party_data(nested)
    return out


def _destination_keys(value: Any) -> set[str]:
    found: set[str] = set()
    if isinstance(value, dict):
        found |= _DESTINATION_KEYS & set(value)
        for nested in value.values():
            found |= _destination_keys(nested)
    elif isinstance(value, list):
        for nested in value:
            if isinstance(nested, list) and len(nested) == 2 and isinstance(nested[0], str):
                found |= _DESTINATION_KEYS & {nested[0]}
            found |= _destination_keys(nested)
    return found
