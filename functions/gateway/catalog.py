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

import functools
import gzip
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import provider_filter

CATALOG_FILE = "model_catalog.json.gz"
CATALOG_ENV = "GATEWAY_MODEL_CATALOG"
FORMAT = 1


@dataclass(frozen=True)
class Catalog:
    mlflow_version: str
    providers: tuple[str, ...]
    models: tuple[dict[str, Any], ...]


def catalog_path() -> Path:
    return Path(os.environ.get(CATALOG_ENV) or Path(__file__).with_name(CATALOG_FILE))


@functools.cache
def load() -> Catalog:
    path = catalog_path()
    data = json.loads(gzip.decompress(path.read_bytes()))
    if data.get("format") != FORMAT:
        raise RuntimeError(f"{path} is model catalog format {data.get('format')!r}, this code reads {FORMAT}")
    columns = data["columns"]
    return Catalog(
        mlflow_version=data["mlflow_version"],
        providers=tuple(data["providers"]),
        models=tuple(dict(zip(columns, row, strict=True)) for row in data["models"]),
    )


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
