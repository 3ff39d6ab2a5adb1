"""Rollup items: per experiment, family, hour and slice of dimension values, a summary per metric.

Families (``FAMILY``): ``T`` trace rows by request hour; ``S`` span rows for span count/latency, by the
trace's request hour (MLflow's time range for them) and grouped by the span's start hour (its time bucket);
``C`` span costs by the span's start hour (range and bucket); ``A`` valid assessments by the trace's hour.
A slice is one combination of the dimensions (and filterable fields) a family answers, so a query reads
``hours x slices`` items and filters and groups them in memory.

Coarser *levels* keep the same rows again with fewer dimensions, so the common charts (trace count, latency,
tokens: no grouping, no filter) read one item per hour whatever the number of names and statuses: each family
also has an ungrouped slice per hour (key family ``<F>0``) and per minute (``<F>0m``, bucket = minute, group
bucket still the hour) for the partial hours at a range's edges; traces also have a per-status slice per hour
(``Ts``) and per minute (``Tsm``) for status grouping and filtering. A level's key family is its family letter and suffix (``LEVELS``).

The indexer keeps them exact and replay-safe with a contribution record per trace (``trace_contribution``,
in the trace's own partition): what the trace currently adds to which rollup items, and on which shard.
Recomputing a trace gives its target contribution; the difference to the recorded one is applied to the rollup
items and the record replaced, all in one transaction conditioned on the revisions read. Replaying any record
re-derives the same target, finds no difference and writes nothing.

Shards: an experiment's rollups are spread over ``ROLLUP_SHARDS`` partition keys, so that the items of the
current hour and minute (which every trace moves) are not all on one key. An indexer transaction puts the
traces it aggregates for the first time on one shard (each process takes the shards in turn from a random
start: the traces of one transaction still share their items, one write for all); a trace stays on its shard (its record names it). A reader sums every
shard and the unsharded key of tables written before shards (``ROLLUP_V1``, where older traces' shares stay).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from serverless_mlflow.core import parallel
from serverless_mlflow.index.trace_metrics.rows import AssessmentRow, SpanRow, TraceRow
from serverless_mlflow.index.trace_metrics.summary import Summary
from serverless_mlflow.storage import table
from serverless_mlflow.storage.schema import LEGACY, ROLLUP_SHARDS, TRACE_BUCKET_MS, entity

ROLLUP = entity("metric_rollup")
ROLLUP_V1 = LEGACY["metric_rollup"]
META = entity("rollup_meta")
LEGACY_SHARD = None  # a record without a shard: its parts are on the unsharded key (ROLLUP_V1)
TRACE_ROWS, SPAN_ROWS, COST_ROWS, ASSESSMENT_ROWS = "T", "S", "C", "A"
FAMILY_DIMENSIONS = {
    TRACE_ROWS: ("trace_name", "trace_status"),
    SPAN_ROWS: ("span_name", "span_type", "span_status", "span_model_name", "span_model_provider", "trace_status"),
    COST_ROWS: ("span_name", "span_type", "span_status", "span_model_name", "span_model_provider", "trace_status"),
    ASSESSMENT_ROWS: ("assessment_name", "assessment_value", "assessment_type", "trace_status"),
}
COUNT = "count"
MINUTE_MS = 60_000
FULL, BY_STATUS, UNGROUPED, UNGROUPED_MINUTE, BY_STATUS_MINUTE = "", "s", "0", "0m", "sm"
# Level suffix -> (dimensions kept: None for all of the family's, time unit of its bucket).
LEVEL_SHAPES: dict[str, tuple[tuple[str, ...] | None, int]] = {
    FULL: (None, TRACE_BUCKET_MS),
    BY_STATUS: (("trace_status",), TRACE_BUCKET_MS),
    UNGROUPED: ((), TRACE_BUCKET_MS),
    UNGROUPED_MINUTE: ((), MINUTE_MS),
    BY_STATUS_MINUTE: (("trace_status",), MINUTE_MS),
}
# An hourly level -> its per-minute twin, read for the whole minutes of a range's partial edge hours.
MINUTE_LEVEL = {UNGROUPED: UNGROUPED_MINUTE, BY_STATUS: BY_STATUS_MINUTE}
LEVELS = {
    TRACE_ROWS: (FULL, BY_STATUS, UNGROUPED, UNGROUPED_MINUTE, BY_STATUS_MINUTE),
    SPAN_ROWS: (FULL, UNGROUPED, UNGROUPED_MINUTE),
    COST_ROWS: (FULL, UNGROUPED, UNGROUPED_MINUTE),
    ASSESSMENT_ROWS: (FULL, UNGROUPED, UNGROUPED_MINUTE),
}


def partition(experiment_id: str, shard: int | None) -> str:
    """The partition key of one rollup shard of an experiment (``LEGACY_SHARD``: the unsharded key)."""
    if shard is LEGACY_SHARD:
        return ROLLUP_V1.pk.render({"experiment_id": experiment_id})
    return ROLLUP.pk.render({"experiment_id": experiment_id, "shard": shard})


def items_in_range(experiment_id: str, family: str, first: int | None, last: int | None) -> list[dict[str, Any]]:
    """Every rollup item of one key family (level) of an experiment with a bucket in [first, last], from every
    shard and the unsharded key (one Query each, in parallel): a slice has an item per shard it was written to."""

    def one(shard: int | None) -> list[dict[str, Any]]:
        entity, values = (ROLLUP_V1, {}) if shard is LEGACY_SHARD else (ROLLUP, {"shard": shard})
        key_query = entity.query("in_hours", experiment_id=experiment_id, family=family, **values)
        return list(table.iter_query(**key_query.range({"bucket": first}, {"bucket": last})))

    shards: list[int | None] = [LEGACY_SHARD, *range(ROLLUP_SHARDS)]
    return [item for items in parallel.parallel_map(one, shards, workers=len(shards)) for item in items]


def hour(ms: int) -> int:
    return int(ms) // TRACE_BUCKET_MS


def level_for(family: str, needed: set[str]) -> str:
    """The coarsest level of ``family`` that keeps every dimension in ``needed`` (grouped by or filtered on)."""
    for level in (UNGROUPED, BY_STATUS):
        kept = LEVEL_SHAPES[level][0] or ()
        if level in LEVELS[family] and needed <= set(kept):
            return level
    return FULL


@dataclass
class Part:
    """One rollup item's share of a trace: dimension values, row count, and values per metric (``family`` is
    the key family: the family letter and its level's suffix)."""

    family: str
    bucket: int
    group_bucket: int
    dims: dict[str, str | None]
    count: int = 0
    values: dict[str, list[float]] = field(default_factory=dict)

    @property
    def slice_id(self) -> str:
        return hashlib.sha256(json.dumps([self.family, self.dims], sort_keys=True).encode()).hexdigest()[:16]

    def sort_key(self) -> str:
        return ROLLUP.sk.render({"family": self.family, "bucket": self.bucket, "group_bucket": self.group_bucket, "slice": self.slice_id})

    def add(self, values: dict[str, float | int | None]) -> None:
        self.count += 1
        for metric, value in values.items():
            if value is not None:
                self.values.setdefault(metric, []).append(value)

    def to_json(self) -> dict[str, Any]:
        return {"f": self.family, "b": self.bucket, "g": self.group_bucket, "d": self.dims, "n": self.count, "v": self.values}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Part:
        return cls(data["f"], int(data["b"]), int(data["g"]), data["d"], int(data["n"]), {k: list(v) for k, v in data["v"].items()})


def contribution(trace: TraceRow | None, spans: Iterable[SpanRow], assessments: Iterable[AssessmentRow]) -> dict[str, Part]:
    """What one trace adds to the rollups, by rollup sort key (nothing while it has no info)."""
    if trace is None:
        return {}
    parts: dict[str, Part] = {}

    def add(family: str, range_ms: int, group_ms: int, dims: dict[str, str | None], values: dict[str, Any]) -> None:
        """One row, into its slice at every level of its family (``range_ms``: the time a range selects on)."""
        for level in LEVELS[family]:
            kept, unit = LEVEL_SHAPES[level]
            level_dims = dims if kept is None else {d: dims[d] for d in kept}
            candidate = Part(family + level, int(range_ms) // unit, hour(group_ms), level_dims)
            parts.setdefault(candidate.sort_key(), candidate).add(values)

    trace_ms = trace.timestamp_ms
    add(
        TRACE_ROWS, trace_ms, trace_ms, {"trace_name": trace.name, "trace_status": trace.status}, {"latency": trace.latency, **trace.tokens}
    )
    for span in spans:
        dims = {
            "span_name": span.name,
            "span_type": span.type,
            "span_status": span.status,
            "span_model_name": span.model_name,
            "span_model_provider": span.model_provider,
            "trace_status": trace.status,
        }
        add(SPAN_ROWS, trace_ms, span.start_ms, dims, {"latency": span.latency})
        if span.costs:
            add(COST_ROWS, span.start_ms, span.start_ms, dims, dict(span.costs))
    for row in assessments:
        dims = {"assessment_name": row.name, "assessment_value": row.value, "assessment_type": row.type, "trace_status": trace.status}
        add(ASSESSMENT_ROWS, trace_ms, trace_ms, dims, {"assessment_value": row.numeric})
    return parts


# --- rollup items --------------------------------------------------------------------------------


@dataclass
class Rollup:
    """A rollup item's content: row count and a summary per metric."""

    family: str
    bucket: int
    group_bucket: int
    dims: dict[str, str | None]
    count: int = 0
    metrics: dict[str, Summary] = field(default_factory=dict)

    def apply(self, part: Part, sign: int) -> None:
        self.apply_share(part.count, part.values, sign)

    def apply_share(self, count: int, values_by_metric: dict[str, list[float]], sign: int) -> None:
        """Add (``sign`` 1) or take out (-1) one trace's share: its row count and values per metric."""
        self.count += sign * count
        for metric, values in values_by_metric.items():
            summary = self.metrics.setdefault(metric, Summary())
            for value in values:
                if sign > 0:
                    summary.add(value)
                else:
                    summary.remove(value)
            if summary.n == 0:
                self.metrics.pop(metric)

    @classmethod
    def of_item(cls, item: dict[str, Any]) -> Rollup:
        data = json.loads(item["data"])
        return cls(
            item["family"], int(item["bucket"]), int(item["group_bucket"]), data["dims"], int(data["count"]),
            {name: Summary.from_json(value) for name, value in data["metrics"].items()},
        )  # fmt: skip

    @classmethod
    def of_part(cls, part: Part) -> Rollup:
        return cls(part.family, part.bucket, part.group_bucket, dict(part.dims))

    def item(self, experiment_id: str, shard: int | None, slice_id: str, rev: int) -> dict[str, Any]:
        data = {"dims": self.dims, "count": self.count, "metrics": {name: s.to_json() for name, s in self.metrics.items()}}
        attributes = {"family": self.family, "bucket": self.bucket, "group_bucket": self.group_bucket, "data": json.dumps(data), "rev": rev}
        entity, values = (ROLLUP_V1, {}) if shard is LEGACY_SHARD else (ROLLUP, {"shard": shard})
        keys = {"family": self.family, "bucket": self.bucket, "group_bucket": self.group_bucket, "slice": slice_id}
        return entity.item(attributes, experiment_id=experiment_id, **keys, **values)
