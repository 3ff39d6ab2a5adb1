"""A mergeable, subtractable summary of a metric's values: what a rollup item holds per metric.

* ``n``, ``sum``: exact, so COUNT, SUM and AVG are exact.
* ``values``: the values themselves while a summary holds at most ``EXACT_LIMIT`` of them: every aggregation,
  percentiles included, is then exact (MLflow's linear interpolation, numpy's default).
* ``sketch``: DDSketch-style log buckets, always kept: bucket ``i`` holds the values in
  ``(gamma**(i-1), gamma**i]`` with ``gamma = (1 + ALPHA) / (1 - ALPHA)``, each read back as
  ``2 * gamma**i / (gamma + 1)``: within a relative error of ``ALPHA`` of any value in the bucket. Zero and
  negative values have their own buckets (mirrored). A percentile is interpolated between the two ranks
  MLflow interpolates between, each read back from its bucket, so it is within ``ALPHA`` (1%) of MLflow's
  exact answer for non-negative data (tests/traces/test_metrics_summary.py checks the bound).
* ``low``/``high``: exact while values are only added. Removing the current extreme makes them unknown
  (``extremes_known`` false) until the summary is rebuilt; MIN/MAX then come from raw rows.

Everything is JSON-serializable (bucket indexes as string keys) so a rollup item stores it as text.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

EXACT_LIMIT = 64
ALPHA = 0.01
GAMMA = (1 + ALPHA) / (1 - ALPHA)
_LOG_GAMMA = math.log(GAMMA)
ZERO_BUCKET = "z"
NEGATIVE = "n"  # a negative value's bucket: "n" + the index of its magnitude


def bucket_of(value: float) -> str:
    if value == 0:
        return ZERO_BUCKET
    index = math.ceil(math.log(abs(value)) / _LOG_GAMMA)
    # The sign has its own mark: an index is negative for any magnitude below 1 (costs, scores).
    return f"{NEGATIVE if value < 0 else ''}{index}"


def bucket_value(bucket: str) -> float:
    if bucket == ZERO_BUCKET:
        return 0.0
    negative = bucket.startswith(NEGATIVE)
    index = int(bucket.removeprefix(NEGATIVE))
    magnitude = 2 * GAMMA**index / (GAMMA + 1)
    return -magnitude if negative else magnitude


@dataclass
class Summary:
    n: int = 0
    sum: float = 0
    low: float | None = None
    high: float | None = None
    extremes_known: bool = True
    values: list[float] | None = field(default_factory=list)
    sketch: dict[str, int] = field(default_factory=dict)

    # --- building --------------------------------------------------------------------------------

    @classmethod
    def of(cls, values: Iterable[float]) -> Summary:
        out = cls()
        for value in values:
            out.add(value)
        return out

    def add(self, value: float) -> None:
        self.n += 1
        self.sum += value
        if self.extremes_known:
            self.low = value if self.low is None else min(self.low, value)
            self.high = value if self.high is None else max(self.high, value)
        if self.values is not None:
            self.values.append(value)
            if len(self.values) > EXACT_LIMIT:
                self.values = None
        bucket = bucket_of(value)
        self.sketch[bucket] = self.sketch.get(bucket, 0) + 1

    def remove(self, value: float) -> None:
        """Take one occurrence of ``value`` out (it must have been added)."""
        self.n -= 1
        self.sum -= value
        if self.values is not None:
            self.values.remove(value)
        bucket = bucket_of(value)
        left = self.sketch.get(bucket, 0) - 1
        if left > 0:
            self.sketch[bucket] = left
        else:
            self.sketch.pop(bucket, None)
        if self.n == 0:
            self.sum, self.low, self.high, self.extremes_known, self.values, self.sketch = 0, None, None, True, [], {}
        elif self.values is not None:
            self.low, self.high, self.extremes_known = min(self.values), max(self.values), True
        elif value in (self.low, self.high):
            self.extremes_known = False

    def merge(self, other: Summary) -> None:
        self.n += other.n
        self.sum += other.sum
        self.extremes_known = self.extremes_known and other.extremes_known
        if self.extremes_known:
            lows = [v for v in (self.low, other.low) if v is not None]
            highs = [v for v in (self.high, other.high) if v is not None]
            self.low, self.high = (min(lows) if lows else None), (max(highs) if highs else None)
        if self.values is not None and other.values is not None and len(self.values) + len(other.values) <= EXACT_LIMIT:
            self.values = self.values + other.values
        else:
            self.values = None
        for bucket, count in other.sketch.items():
            self.sketch[bucket] = self.sketch.get(bucket, 0) + count

    # --- reading ---------------------------------------------------------------------------------

    def exact_values(self) -> list[float] | None:
        return sorted(self.values) if self.values is not None else None

    def percentile(self, p: float) -> float | None:
        """MLflow's percentile (linear interpolation at rank p/100 * (n-1)): exact from values, else from the sketch."""
        if self.n == 0:
            return None
        position = p / 100 * (self.n - 1)
        lower, fraction = math.floor(position), position - math.floor(position)
        ranked = self.exact_values()
        if ranked is not None:
            at = ranked
        else:
            at = _SketchRanks(self.sketch, self.low if self.extremes_known else None, self.high if self.extremes_known else None)
        low = at[lower]
        high = at[min(lower + 1, self.n - 1)]
        return low + (high - low) * fraction

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"n": self.n, "sum": self.sum, "sketch": self.sketch}
        if self.values is not None:
            out["values"] = self.values
        if self.extremes_known:
            out["low"], out["high"] = self.low, self.high
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Summary:
        known = "low" in data
        return cls(
            n=int(data["n"]),
            sum=data["sum"],
            low=data.get("low"),
            high=data.get("high"),
            extremes_known=known,
            values=list(data["values"]) if "values" in data else None,
            sketch={str(k): int(v) for k, v in data["sketch"].items()},
        )


class _SketchRanks:
    """The k-th smallest value as the sketch reads it back (the exact extremes at the two ends, when known)."""

    def __init__(self, sketch: dict[str, int], low: float | None, high: float | None) -> None:
        self.buckets = sorted(sketch.items(), key=lambda kv: bucket_value(kv[0]))
        self.total = sum(count for _, count in self.buckets)
        self.low, self.high = low, high

    def __getitem__(self, rank: int) -> float:
        if rank == 0 and self.low is not None:
            return self.low
        if rank == self.total - 1 and self.high is not None:
            return self.high
        seen = 0
        for bucket, count in self.buckets:
            seen += count
            if rank < seen:
                return bucket_value(bucket)
        return bucket_value(self.buckets[-1][0])
