"""Dataset records as documents: validation, MLflow's insert and merge rules, schema inference, API shape.

Pure functions (no table access). A record document is what MLflow's ``evaluation_dataset_records`` row
holds: ``inputs``, ``outputs`` (``None`` or the value; MLflow wraps it as ``{"mlflow_wrapped": v}``),
``expectations``, ``tags``, ``source`` plus the scalar columns kept on the item.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from serverless_mlflow.core.errors import invalid

MLFLOW_USER = "mlflow.user"
SOURCE_TYPES = ("UNSPECIFIED", "TRACE", "HUMAN", "DOCUMENT", "CODE")


def input_hash(inputs: Any) -> str:
    """MLflow's record identity: sha256 of ``json.dumps(inputs, sort_keys=True)``."""
    return hashlib.sha256(json.dumps(inputs, sort_keys=True).encode()).hexdigest()


def validate(records: Any) -> list[dict[str, Any]]:
    """Refuse (400) what MLflow's store cannot store, before anything is written."""
    if not isinstance(records, list):
        raise invalid("Invalid value for 'records': must be a JSON list of record objects")
    for index, record in enumerate(records):
        if not isinstance(record, dict):
            raise invalid(f"Invalid record at index {index}: each record must be a JSON object")
        inputs = record.get("inputs", {})
        if inputs is None:
            # MLflow's DatasetRecord refuses it ("inputs must be provided"); stored, no client could read it back.
            raise invalid(f"Invalid record at index {index}: 'inputs' must be provided")
        if inputs and not isinstance(inputs, dict):
            raise invalid(f"Invalid record at index {index}: 'inputs' must be a JSON object")
        for field in ("expectations", "tags"):
            value = record.get(field)
            if value is not None and not isinstance(value, dict):
                raise invalid(f"Invalid record at index {index}: '{field}' must be a JSON object")
        source = record.get("source")
        if source:
            _parse_source(source)
    return records


def _parse_source(source: Any) -> dict[str, Any]:
    """``DatasetRecordSource.from_dict(...).to_dict()``: source_type standardized, source_data a dict."""
    if not isinstance(source, dict):
        raise invalid("Invalid value for 'source': must be a JSON object with 'source_type' and 'source_data'")
    source_type = source.get("source_type")
    if not isinstance(source_type, str) or source_type.upper() not in SOURCE_TYPES:
        shown = source_type.upper() if isinstance(source_type, str) else source_type
        raise invalid(f"Invalid dataset record source type: {shown}. Valid source types: {list(SOURCE_TYPES)}")
    source_data = source.get("source_data")
    if source_data is None:
        source_data = {}
    if not isinstance(source_data, dict):
        raise invalid("Invalid value for 'source.source_data': must be a JSON object")
    return {"source_type": source_type.upper(), "source_data": source_data}


def new_document(record: dict[str, Any], now: int) -> dict[str, Any]:
    """The row MLflow inserts for a record whose inputs are new."""
    tags = record.get("tags") or {}
    user = tags.get(MLFLOW_USER) if record.get("tags") else None
    source = _parse_source(record["source"]) if record.get("source") else None
    source_id = source_type = None
    if source is not None:
        data = source["source_data"]
        source_id = data.get("trace_id") if source["source_type"] == "TRACE" else data.get("source_id")
        source_type = source["source_type"]
    return {
        "inputs": record.get("inputs", {}),
        # `record.get("outputs", {})`: a record without outputs reads back {} (only an explicit null stays null).
        "outputs": record.get("outputs", {}),
        "expectations": record.get("expectations"),
        "tags": tags,
        "source": source,
        "source_id": source_id,
        "source_type": source_type,
        "created_time": now,
        "last_update_time": now,
        "created_by": user,
        "last_updated_by": user,
    }


def merge(document: dict[str, Any], record: dict[str, Any], now: int) -> dict[str, Any]:
    """``SqlEvaluationDatasetRecord.merge``: outputs replaced when given, expectations and tags updated key by
    key, created_* and source kept."""
    merged = dict(document)
    if "outputs" in record:
        merged["outputs"] = record["outputs"]
    if new_expectations := record.get("expectations"):
        merged["expectations"] = {**(merged.get("expectations") or {}), **new_expectations}
    if new_tags := record.get("tags"):
        merged["tags"] = {**(merged.get("tags") or {}), **new_tags}
    merged["last_update_time"] = now
    if new_tags and MLFLOW_USER in new_tags:
        merged["last_updated_by"] = new_tags[MLFLOW_USER]
    return merged


def to_api(document: dict[str, Any], dataset_id: str, record_id: str) -> dict[str, Any]:
    """``DatasetRecord.to_dict()`` as the server returns it in GetDatasetRecords."""
    out: dict[str, Any] = {"dataset_record_id": record_id, "dataset_id": dataset_id, "inputs": document["inputs"]}
    if document.get("outputs") is not None:
        out["outputs"] = document["outputs"]
    if document.get("expectations") is not None:
        out["expectations"] = document["expectations"]
    out["tags"] = document.get("tags") or {}
    if document.get("source") is not None:
        out["source"] = document["source"]
    if document.get("source_id") is not None:
        out["source_id"] = document["source_id"]
    if document.get("source_type") is not None:
        out["source_type"] = document["source_type"]
    for field in ("created_by", "last_updated_by"):
        if document.get(field) is not None:
            out[field] = document[field]
    out["created_time"] = document["created_time"]
    out["last_update_time"] = document["last_update_time"]
    return out


def _infer_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return "unknown"


def update_schema(existing: str | None, records: list[dict[str, Any]]) -> dict[str, Any] | None:
    """``SqlAlchemyStore._update_dataset_schema``: new field names of the upserted records, first type wins."""
    if not records and not existing:
        return None
    schema = json.loads(existing) if existing else {"inputs": {}, "outputs": {}, "expectations": {}, "version": "1.0"}
    for record in records:
        if inputs := record.get("inputs"):
            for key, value in inputs.items():
                schema["inputs"].setdefault(key, _infer_type(value))
        if (outputs := record.get("outputs")) is not None:
            if isinstance(outputs, dict):
                # MLflow fails (500) when scalar outputs came first and dict outputs follow: keep the first shape.
                if isinstance(schema["outputs"], dict):
                    for key, value in outputs.items():
                        schema["outputs"].setdefault(key, _infer_type(value))
            elif not schema["outputs"]:
                schema["outputs"] = _infer_type(outputs)
        if expectations := record.get("expectations"):
            for key, value in expectations.items():
                schema["expectations"].setdefault(key, _infer_type(value))
    return schema
