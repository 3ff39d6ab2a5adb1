"""MLflow's provider policy (``mlflow/utils/provider_filter.py``): provider aliases, and the operator's
allow-list ``MLFLOW_GATEWAY_ALLOWED_PROVIDERS`` (comma-separated; unset or empty allows every provider),
which hides providers from the catalog and refuses their provider-config."""

from __future__ import annotations

import functools
import os

ALLOWED_PROVIDERS_ENV = "MLFLOW_GATEWAY_ALLOWED_PROVIDERS"

_ALIASES = {"amazon-bedrock": "bedrock", "databricks-model-serving": "databricks"}


def normalize(name: str) -> str:
    return _ALIASES.get(name, name)


@functools.lru_cache(maxsize=16)
def _parse(raw: str) -> frozenset[str] | None:
    names = frozenset(normalize(part.strip().lower()) for part in raw.split(",") if part.strip())
    return names or None


def _allowed() -> frozenset[str] | None:
    # Read per call, as MLflow does (its parse is cached by the raw value).
    return _parse(os.environ.get(ALLOWED_PROVIDERS_ENV) or "")


def is_allowed(provider: str) -> bool:
    allowed = _allowed()
    return allowed is None or normalize(provider.lower()) in allowed
