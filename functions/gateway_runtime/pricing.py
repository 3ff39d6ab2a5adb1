"""The cost of a call's tokens, as MLflow prices them (``calculate_cost_by_model_and_token_usage`` over
``mlflow.utils.providers.cost_per_token``): from the price table of MLflow's bundled model catalog, staged
beside this package at synth (``infra/gateway_catalog.py``, ``model_prices.json.gz``). Without the table
(never deployed so) calls are traced with their tokens and no cost, and budgets never trip."""

from __future__ import annotations

import functools
import gzip
import json
import os
from pathlib import Path
from typing import Any

PRICES_FILE = "model_prices.json.gz"
PRICES_ENV = "GATEWAY_MODEL_PRICES"
FORMAT = 1
_SKIP_PREFIXES = ("gateway:/", "endpoints:/")
# Columns of a price row (per token, USD; None when the catalog gives none).
INPUT, OUTPUT, CACHE_READ, CACHE_WRITE = range(4)


def prices_path() -> Path:
    return Path(os.environ.get(PRICES_ENV) or Path(__file__).parent / PRICES_FILE)


@functools.cache
def _table() -> dict[str, dict[str, list[float | None]]]:
    path = prices_path()
    if not path.exists():
        return {}
    data = json.loads(gzip.decompress(path.read_bytes()))
    if data.get("format") != FORMAT:
        raise RuntimeError(f"{path} is price table format {data.get('format')!r}, this code reads {FORMAT}")
    return data["providers"]


def _lookup(model: str, provider: str | None) -> list[float | None] | None:
    """MLflow's ``_lookup_model_info``: by the bare model name, in the provider's file or across all of them
    (a priced entry first)."""
    bare = model.split("/", 1)[-1]
    table = _table()
    if provider:
        return table.get(provider, {}).get(bare)
    fallback = None
    for name in sorted(table):
        if (row := table[name].get(bare)) is not None:
            if row[INPUT]:
                return row
            fallback = fallback or row
    return fallback


def _cost_per_token(row: list[float | None], prompt: int, completion: int, usage: dict[str, Any]) -> tuple[float, float]:
    input_rate = row[INPUT] or 0.0
    cache_read = usage.get("cache_read_input_tokens") or 0
    cache_write = usage.get("cache_creation_input_tokens") or 0
    cost = max(prompt - cache_read - cache_write, 0) * input_rate
    if cache_read > 0:
        cost += cache_read * (row[CACHE_READ] if row[CACHE_READ] is not None else input_rate)
    if cache_write > 0:
        cost += cache_write * (row[CACHE_WRITE] if row[CACHE_WRITE] is not None else input_rate)
    return cost, completion * (row[OUTPUT] or 0.0)


def cost(model: str | None, usage: dict[str, Any] | None, provider: str | None = None) -> dict[str, float] | None:
    """``{"input_cost", "output_cost", "total_cost"}`` in USD, or None when MLflow would give none."""
    if not model or not usage or model.startswith(_SKIP_PREFIXES):
        return None
    prompt, completion = usage.get("input_tokens", 0), usage.get("output_tokens", 0)
    if prompt == 0 and completion == 0:
        return None
    row = (_lookup(model, provider.lower()) if provider else None) or _lookup(model, None)
    if row is None:
        return None
    input_cost, output_cost = _cost_per_token(row, prompt, completion, usage)
    return {"input_cost": input_cost, "output_cost": output_cost, "total_cost": input_cost + output_cost}
