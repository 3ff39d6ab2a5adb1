"""Trace infos written into an hour the archival pass may have passed: the indexer rewinds the experiment's cursor.

The pass walks an experiment's trace hours from a cursor that only moves forward (``store.trace_archival``), so an
info whose request time lies in an earlier hour than its write (a trace that started before the hour turned, an
import of old traces) could land behind it and never be archived. The indexer sees every new info key (an INSERT
record), after its write: for each experiment, the earliest such hour of the batch rewinds the cursor once. A
trace of the hour its record was written in never needs it: the cursor never passes the current hour.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from serverless_mlflow.core.deferred import deferred
from serverless_mlflow.storage.schema import ENTITY_TYPE, PK, trace_bucket
from serverless_mlflow.store import trace_partitions
from serverless_mlflow.store import traces as store

# The pass and its settings (experiments, workspaces, S3): loaded only by a batch that has a cursor to rewind.
trace_archival = deferred("serverless_mlflow.store.trace_archival")
config = deferred("serverless_mlflow.store.trace_archival_config")


def past_hours(records: Iterable[dict[str, Any]]) -> dict[str, tuple[int, list[str]]]:
    """Experiment -> (the earliest hour an info was written into after that hour had ended, the sequence numbers
    of those records)."""
    out: dict[str, tuple[int, list[str]]] = {}
    for record in records:
        ddb = record.get("dynamodb") or {}
        image = ddb.get("NewImage")
        if record.get("eventName") != "INSERT" or not image or image.get(ENTITY_TYPE, {}).get("S") != store.TRACE.name:
            continue
        pk = str(image.get(PK, {}).get("S", ""))
        if not pk.startswith(store.TRACE.pk.prefix({})):
            continue  # a layout 1 info: the migration moves it into its hour
        partition = trace_partitions.of_item({PK: pk})
        written = ddb.get("ApproximateCreationDateTime")
        if written is None or partition.bucket >= trace_bucket(int(float(written) * 1000)):
            continue
        earliest, sequences = out.get(partition.experiment_id, (partition.bucket, []))
        out[partition.experiment_id] = (min(earliest, partition.bucket), [*sequences, str(ddb.get("SequenceNumber", ""))])
    return out


def rewind(records: Iterable[dict[str, Any]]) -> set[str]:
    """Rewind the cursors the records call for (only while archival is on); the sequence numbers of the records
    whose rewind failed (Lambda delivers them again)."""
    behind = past_hours(records)
    if not behind or not config.enabled():
        return set()
    failed: set[str] = set()
    for experiment_id, (bucket, sequences) in behind.items():
        try:
            trace_archival.rewind(experiment_id, bucket)
        except Exception:
            failed.update(sequences)
    return failed


__all__ = ["past_hours", "rewind"]
