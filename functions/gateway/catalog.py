"""The providers and models the gateway can be configured with: MLflow's bundled model catalog
(``mlflow/utils/model_catalog/*.json``), reduced at build time to the rows MLflow's ``get_models`` answers.

The catalog ships with this function only, as one gzipped JSON file beside this module (written into the
function's asset at synth by ``infra/gateway_catalog.py``; locally ``GATEWAY_MODEL_CATALOG`` names the copy the
runtime generates). The file holds ``providers`` (every provider ``get_all_providers`` lists, unfiltered) and
``models`` as rows of ``columns`` in MLflow's order (sorted provider files, then each file's order) after
MLflow's mode filter, prefix stripping and de-duplication. Only the operator's provider policy and the
request's provider filter are left to apply per request.

It is read lazily, once per container: the first catalog request pays ~50 ms, no other route or cold start does.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from serverless_mlflow.llm_gateway import catalog_file, provider_filter
from serverless_mlflow.llm_gateway.catalog_file import CATALOG_ENV, CATALOG_FILE, FORMAT, Catalog

__all__ = ["CATALOG_ENV", "CATALOG_FILE", "FORMAT", "Catalog", "load", "supported_models", "supported_providers"]


def catalog_path() -> Path:
    return catalog_file.catalog_path(Path(__file__).parent)


def load() -> Catalog:
    return catalog_file.load(catalog_path())


def supported_providers() -> list[str]:
    """``get_all_providers``: every catalog provider the policy allows, sorted."""
    return sorted(provider for provider in load().providers if provider_filter.is_allowed(provider))


def supported_models(provider: str | None) -> list[dict[str, Any]]:
    """``get_models(provider)``: a falsy filter means every provider; the filter matches names exactly."""
    return [
        model
        for model in load().models
        if (not provider or model["provider"] == provider) and provider_filter.is_allowed(model["provider"])
    ]
