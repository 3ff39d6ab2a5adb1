"""A table written before the rollup shards: its rollups on the one key ``ROLLUP#<exp>`` and contribution records
with the full parts and no shard. traces/metrics reads that key as one more shard; a trace recorded there stays
there when it changes, and leaves it when deleted; new traces go to the shards. No migration step is needed.
"""

from __future__ import annotations

import json
import time
from typing import Any

import mlflow
import pytest
from mlflow import MlflowClient
from mlflow.entities.trace_metrics import AggregationType, MetricAggregation, MetricViewType

from serverless_mlflow.index.trace_aggregates import RECORD, recorded_shares
from serverless_mlflow.index.trace_metrics import rollups
from serverless_mlflow.storage import table
from tests.conftest import unique

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("tracing")]


def _trace(name: str) -> str:
    with mlflow.start_span(name=name) as root:
        with mlflow.start_span(name="step"):
            pass
    return root.trace_id


def _counts(experiment_id: str) -> dict[str, float]:
    """Trace count by trace name over whole hours (read from rollups only: no partial hour is read raw)."""
    store = MlflowClient()._tracing_client.store
    hour = int(time.time() * 1000) // 3_600_000 * 3_600_000
    points = store.query_trace_metrics(
        experiment_ids=[experiment_id],
        view_type=MetricViewType.TRACES,
        metric_name="trace_count",
        aggregations=[MetricAggregation(aggregation_type=AggregationType.COUNT)],
        dimensions=["trace_name"],
        start_time_ms=hour - 23 * 3_600_000,
        end_time_ms=hour + 3_600_000 - 1,
    )
    return {p.dimensions["trace_name"]: p.values["COUNT"] for p in points}


def _as_written_before_shards(experiment_id: str, trace_id: str) -> None:
    """Move the trace's rollup items to the unsharded key and rewrite its record as earlier code wrote it."""
    record = table.get(RECORD.key(trace_id=trace_id))
    assert record is not None and record.get("shard") is not None
    legacy_pk = rollups.partition(experiment_id, rollups.LEGACY_SHARD)
    sharded_pk = rollups.partition(experiment_id, int(record["shard"]))
    parts = {}
    for sk, (count, values) in recorded_shares(record).items():
        fields = rollups.ROLLUP.parse(sk, fields=("family", "bucket", "group_bucket"))
        parts[sk] = {"f": fields["family"], "b": fields["bucket"], "g": fields["group_bucket"], "d": {}, "n": count, "v": values}
        item = table.get({"pk": sharded_pk, "sk": sk})
        assert item is not None
        table.put({**item, "pk": legacy_pk, "entity_type": "metric_rollup"})
        table.delete({"pk": sharded_pk, "sk": sk})
    legacy = {k: v for k, v in record.items() if k not in ("parts_z", "shard", "span_ids")}
    table.put({**legacy, "parts": json.dumps(parts)})


def _legacy_items(experiment_id: str) -> list[dict[str, Any]]:
    return table.query(rollups.partition(experiment_id, rollups.LEGACY_SHARD), "T")


def test_rollups_of_the_previous_release_read_as_a_shard(server: str) -> None:
    mlflow.set_tracking_uri(server)  # not whichever server an earlier test of this worker left set
    experiment_id = mlflow.create_experiment(unique("legacy-rollups"))
    mlflow.set_experiment(experiment_id=experiment_id)
    old = _trace("old")
    assert _counts(experiment_id) == {"old": 1.0}
    _as_written_before_shards(experiment_id, old)
    assert _legacy_items(experiment_id)
    assert _counts(experiment_id) == {"old": 1.0}  # read from the unsharded key

    _trace("new")
    assert _counts(experiment_id) == {"old": 1.0, "new": 1.0}
    # The old trace renamed: its share moves between slices of the unsharded key, where its record says it is.
    MlflowClient().set_trace_tag(old, "mlflow.traceName", "renamed")
    assert _counts(experiment_id) == {"renamed": 1.0, "new": 1.0}
    assert table.get(RECORD.key(trace_id=old)).get("shard") is None
    MlflowClient().delete_traces(experiment_id, trace_ids=[old])
    assert _counts(experiment_id) == {"new": 1.0}
    assert _legacy_items(experiment_id) == []  # every share taken out: the items are gone
