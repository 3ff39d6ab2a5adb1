"""A trace info leaves out what its keys and its experiment already say, so a typical info stays under 1 KB:
each of its writes (about three per trace, each with three LSI entries projecting ALL) costs one write unit per
image, not two. What is left out reads back unchanged."""

from __future__ import annotations

from serverless_mlflow.storage.item_size import item_bytes
from serverless_mlflow.storage.table import from_item, to_item
from serverless_mlflow.store import trace_writes

TRACE_ID = "tr-" + "5c1fec251de791d086e297cca3b42c8d"
METADATA = {
    "mlflow.trace_schema.version": "3",
    "mlflow.source.git.repoURL": "",
    "mlflow.source.git.branch": "main",
    "mlflow.source.git.commit": "50251cddcb6f11744067926087d2ca0697f29c55",
    "mlflow.trace.infoFinalized": "true",
    "mlflow.traceInputs": '{"question": "q5"}',
    "mlflow.traceOutputs": '{"answer": "a5"}',
    "mlflow.source.type": "LOCAL",
    "mlflow.trace.sizeBytes": "5999",
    "mlflow.trace.sizeStats": '{"total_size_bytes": 5999, "num_spans": 10, "max": 519, "p25": 519, "p50": 519, "p75": 519}',
    "mlflow.source.name": "tools/partition_heat.py",
    "mlflow.user": "root",
}


def _info() -> dict:
    return trace_writes.info_item(
        {
            "trace_id": TRACE_ID,
            "experiment_id": "1",
            "request_time": 1796668515097,
            "execution_duration": 7971,
            "state": "OK",
            "request_preview": '{"question": "q5"}',
            "response_preview": '{"answer": "a5"}',
            "trace_name": "agent-5",
            "trace_metadata": METADATA,
            "tags": {"mlflow.trace.spansLocation": "TRACKING_STORE"},
            "rev": 2,
        }
    )


def test_a_typical_info_is_stored_under_one_kilobyte() -> None:
    raw = to_item(_info())
    assert item_bytes(raw) < 1024
    assert not {"trace_id", "request_time", "experiment_id"} & set(raw)


def test_what_is_left_out_reads_back() -> None:
    item = _info()
    assert from_item(to_item(item)) == item


def test_an_info_stored_with_its_key_fields_reads_the_same() -> None:
    item = _info()
    stored = {**to_item(item), "trace_id": {"S": TRACE_ID}, "request_time": {"N": "1796668515097"}, "experiment_id": {"S": "1"}}
    assert from_item(stored) == item


def test_a_field_its_keys_do_not_say_is_kept() -> None:
    item = {**_info(), "trace_id": "tr-other"}
    assert to_item(item)["trace_id"] == {"S": "tr-other"}
    assert from_item(to_item(item))["trace_id"] == "tr-other"
