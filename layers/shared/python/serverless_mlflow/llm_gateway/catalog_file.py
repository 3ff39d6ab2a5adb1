"""MLflow's bundled model catalog as the functions ship it: one gzipped JSON file made at synth
(``infra/gateway_catalog.py``). The gateway API answers its provider/model lists from it, the runtime its
prices (MLflow's ``cost_per_token`` reads the same catalog). Read once per container, on first use.
"""

from __future__ import annotations

import functools
import gzip
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CATALOG_FILE = "model_catalog.json.gz"
CATALOG_ENV = "GATEWAY_MODEL_CATALOG"
FORMAT = 1


@dataclass(frozen=True)
class Catalog:
    mlflow_version: str
    providers: tuple[str, ...]
    models: tuple[dict[str, Any], ...]


def catalog_path(package_dir: Path) -> Path:
    """``GATEWAY_MODEL_CATALOG`` (the local runtime's copy) or the file staged beside the function's package."""
    return Path(os.environ.get(CATALOG_ENV) or package_dir / CATALOG_FILE)


@functools.cache
def load(path: Path) -> Catalog:
    data = json.loads(gzip.decompress(path.read_bytes()))
    if data.get("format") != FORMAT:
        raise RuntimeError(f"{path} is model catalog format {data.get('format')!r}, this code reads {FORMAT}")
    columns = data["columns"]
    return Catalog(
        mlflow_version=data["mlflow_version"],
        providers=tuple(data["providers"]),
        models=tuple(dict(zip(columns, row, strict=True)) for row in data["models"]),
    )
