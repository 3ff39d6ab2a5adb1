"""The providers the gateway runtime calls, as MLflow's gateway providers call them (``mlflow/gateway/providers``):
OpenAI and the OpenAI-compatible ones, Anthropic, Gemini, Amazon Bedrock (through the function's role) and
TypeSafe's System One. No mlflow import."""

from __future__ import annotations

import re

from serverless_mlflow.core.errors import invalid

from ..config import ModelConfig
from ..provider_filter import is_allowed, normalize
from ..upstream import GatewayHTTPError
from .anthropic import AnthropicProvider
from .base import (
    ANTHROPIC_MESSAGES,
    GEMINI_GENERATE,
    GEMINI_STREAM,
    OPENAI_CHAT,
    OPENAI_EMBEDDINGS,
    OPENAI_RESPONSES,
    OPENAI_RESPONSES_COMPACT,
    PASSTHROUGH_ROUTES,
    TYPESAFE_SYSTEM_ONE,
    Provider,
)
from .bedrock import BedrockProvider
from .gemini import GeminiProvider
from .openai import DEFAULT_BASES, OpenAIProvider
from .typesafe import TypeSafeProvider

__all__ = [
    "ANTHROPIC_MESSAGES",
    "GEMINI_GENERATE",
    "GEMINI_STREAM",
    "OPENAI_CHAT",
    "OPENAI_EMBEDDINGS",
    "OPENAI_RESPONSES",
    "OPENAI_RESPONSES_COMPACT",
    "PASSTHROUGH_ROUTES",
    "TYPESAFE_SYSTEM_ONE",
    "Provider",
    "provider_for",
    "supports_system_one",
]

_CLASSES: dict[str, type[Provider]] = {
    "anthropic": AnthropicProvider,
    "gemini": GeminiProvider,
    "bedrock": BedrockProvider,
    "typesafe": TypeSafeProvider,
    **dict.fromkeys(DEFAULT_BASES, OpenAIProvider),
}
# OpenRouter's Jev decision models route to System One (MLflow's _OPENROUTER_SYSTEM_ONE_MODEL_PATTERN).
_OPENROUTER_SYSTEM_ONE = re.compile(r"^~?typesafe/jev-(?:latest|\d+(?:\.\d+)*)$")


def supports_system_one(provider: str, model_name: str) -> bool:
    return provider == "typesafe" or (provider == "openrouter" and _OPENROUTER_SYSTEM_ONE.match(model_name) is not None)


def provider_for(model: ModelConfig, tracing: bool = False) -> Provider:
    """MLflow's ``_build_endpoint_config`` + ``get_provider`` over the providers served here."""
    if not is_allowed(model.provider):
        raise invalid(f"Provider '{model.provider}' is not allowed by the current gateway provider policy.")
    cls = _CLASSES.get(normalize(model.provider))
    if cls is None:
        raise GatewayHTTPError(
            501,
            f"Provider '{model.provider}' is not served by this gateway runtime "
            "(served: OpenAI and the OpenAI-compatible Groq, DeepSeek, xAI, OpenRouter and Ollama; Anthropic; Gemini; "
            "Amazon Bedrock; TypeSafe).",
        )
    return cls(model, tracing)
