"""Token prices from MLflow's bundled model catalog (MLflow's ``cost_per_token``): the same file the gateway
API answers its model lists from, staged beside this package at synth."""

from __future__ import annotations

from pathlib import Path

from serverless_mlflow.llm_gateway import catalog_file


def _prices() -> dict[tuple[str, str], tuple[float, float]]:
    path = catalog_file.catalog_path(Path(__file__).parent)
    if not path.exists():
        return {}  # no catalog staged: calls are traced with their tokens but without a cost
    catalog = catalog_file.load(path)
    out: dict[tuple[str, str], tuple[float, float]] = {}
    for row in catalog.models:
        key = (row["provider"], row["model"])
        if key not in out and (row.get("input_cost_per_token") is not None or row.get("output_cost_per_token") is not None):
            out[key] = (float(row.get("input_cost_per_token") or 0.0), float(row.get("output_cost_per_token") or 0.0))
    return out


_cache: dict[tuple[str, str], tuple[float, float]] | None = None


def cost(provider: str, model: str, usage: dict[str, int]) -> dict[str, float] | None:
    """``{"input_cost", "output_cost", "total_cost"}`` in USD, or None for a model the catalog does not price."""
    global _cache
    if _cache is None:
        _cache = _prices()
    prices = _cache.get((provider, model)) or next((p for (_, m), p in _cache.items() if m == model), None)
    if prices is None or not (usage.get("input_tokens") or usage.get("output_tokens")):
        return None
    input_cost = usage.get("input_tokens", 0) * prices[0]
    output_cost = usage.get("output_tokens", 0) * prices[1]
    return {"input_cost": input_cost, "output_cost": output_cost, "total_cost": input_cost + output_cost}
