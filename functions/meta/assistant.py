"""The UI's assistant panel and its gateway-proxy probe, answered as MLflow's server answers when nothing is configured.

MLflow's assistant runs a coding agent (Claude Code, Codex, a local Ollama, or an AI gateway endpoint) next to the
server process; a serverless deployment has none, so no provider is available and none is selected. The providers'
names, texts and capabilities are MLflow's (``mlflow.assistant.providers``), kept here as data because request
paths never import mlflow; a test compares them with the installed wheel.
"""

from __future__ import annotations

from typing import Any

# (name, display_name, description, allows_remote_access, client_tool_delivery), in MLflow's list_providers order.
PROVIDERS: tuple[tuple[str, str, str, bool, str], ...] = (
    ("claude_code", "Claude Code", "AI-powered assistant using Claude Code CLI", False, "structured"),
    ("codex", "Codex", "AI-powered assistant using the Codex CLI", False, "structured"),
    (
        "mlflow_gateway",
        "MLflow AI Gateway",
        "AI-powered assistant backed by an MLflow AI Gateway endpoint configured on this server.",
        True,
        "tool",
    ),
    ("ollama", "Ollama", "AI-powered assistant using a locally running Ollama server.", False, "tool"),
)
# The gateway vendors (and their default models) MLflow offers for an assistant backed by the AI gateway.
GATEWAY_VENDOR_OPTIONS: dict[str, list[str]] = {"openai": ["gpt-5.5"], "anthropic": ["claude-sonnet-5"], "gemini": ["gemini-3-pro"]}


def providers() -> dict[str, Any]:
    """``GET assistant/providers``: every provider unavailable and unselected, nothing resolved."""
    return {
        "providers": [
            {
                "name": name,
                "display_name": display_name,
                "description": description,
                "available": False,
                "selected": False,
                "requires_api_key": False,
                "has_api_key": False,
                "allows_remote_access": remote,
                "client_tool_delivery": delivery,
                "model_options": [],
            }
            for name, display_name, description, remote, delivery in PROVIDERS
        ],
        "resolved": None,
        "gateway_vendor_options": GATEWAY_VENDOR_OPTIONS,
    }


def config() -> dict[str, Any]:
    """``GET assistant/config`` with no provider configured or resolvable (a remote caller's view)."""
    return {"providers": {}, "projects": {}, "remote_access_allowed": False}


# MLflow's gateway-proxy without MLFLOW_DEPLOYMENTS_TARGET: "Pretend an empty gateway service is running".
EMPTY_GATEWAY = {"endpoints": []}
