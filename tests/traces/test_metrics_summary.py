"""The percentile bound of trace-metric rollups (``serverless_mlflow.index.trace_metrics.summary``): past the values a
summary keeps exactly, a percentile is read from DDSketch-style log buckets and must stay within ``ALPHA`` (1%)
relative error of MLflow's exact answer (linear interpolation, numpy's default), after merges (rollup items
of many hours and slices), removals (deleted traces) and a JSON round trip (what a rollup item stores)."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest

from serverless_mlflow.index.trace_metrics.summary import ALPHA, EXACT_LIMIT, Summary, bucket_of, bucket_value

PERCENTILES = (0.0, 1.0, 25.0, 50.0, 75.0, 90.0, 95.0, 99.0, 99.9, 100.0)


def _latencies(rng: random.Random, n: int) -> list[float]:
    return [float(int(rng.lognormvariate(6, 1.2))) for _ in range(n)]  # milliseconds, heavy tail, zeros possible


def _tokens(rng: random.Random, n: int) -> list[float]:
    return [float(rng.randint(1, 200_000)) for _ in range(n)]


def _costs(rng: random.Random, n: int) -> list[float]:
    return [rng.uniform(1e-7, 0.05) for _ in range(n)]


def _scores(rng: random.Random, n: int) -> list[float]:
    return [rng.choice((0.0, 0.25, 0.5, 0.75, 1.0)) for _ in range(n)]


def _merged(values: list[float], parts: int) -> Summary:
    """As a query sees it: one summary per rollup item, merged, each stored as JSON in between."""
    out = Summary()
    for i in range(parts):
        part = Summary.of(values[i::parts])
        out.merge(Summary.from_json(json.loads(json.dumps(part.to_json()))))
    return out


@pytest.mark.parametrize("make", [_latencies, _tokens, _costs, _scores], ids=["latency", "tokens", "cost", "scores"])
def test_sketch_percentiles_are_within_alpha_of_mlflows(make) -> None:
    rng = random.Random(24)
    values = make(rng, 20_000)
    summary = _merged(values, parts=37)
    assert summary.exact_values() is None  # past EXACT_LIMIT: the sketch answers
    for p in PERCENTILES:
        exact = float(np.percentile(values, p))
        got = summary.percentile(p)
        assert got is not None and abs(got - exact) <= ALPHA * abs(exact) + 1e-12, (p, got, exact)
    assert summary.n == len(values) and summary.sum == pytest.approx(sum(values))


def test_bound_holds_after_removals() -> None:
    rng = random.Random(7)
    values = _latencies(rng, 5_000)
    summary = Summary.of(values)
    removed = rng.sample(range(len(values)), 1_500)
    for index in removed:
        summary.remove(values[index])
    kept = [v for i, v in enumerate(values) if i not in set(removed)]
    for p in PERCENTILES:
        exact = float(np.percentile(kept, p))
        assert abs(summary.percentile(p) - exact) <= ALPHA * abs(exact) + 1e-12, p


def test_small_groups_are_exact() -> None:
    values = [3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0, 6.0]
    summary = _merged(values, parts=3)
    assert len(values) <= EXACT_LIMIT
    for p in PERCENTILES:
        assert summary.percentile(p) == pytest.approx(float(np.percentile(values, p)), rel=0, abs=1e-12)


@pytest.mark.parametrize("value", [1e-9, 3e-4, 0.3, 0.999, 1.0, 1.5, 250.0, 7e7])
def test_every_bucket_reads_back_within_alpha_with_its_sign(value: float) -> None:
    for signed in (value, -value):
        read = bucket_value(bucket_of(signed))
        assert abs(read - signed) <= ALPHA * abs(signed) * (1 + 1e-9), (signed, read)
