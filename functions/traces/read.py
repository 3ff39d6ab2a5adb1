"""Reading traces: info, whole traces with spans, batch get (search: ``search.py``; span decoding: ``span_decoding.py``)."""

from __future__ import annotations

from typing import Any

from google.protobuf.json_format import MessageToDict

from serverless_mlflow.core.validation import validate_max_results_param
from serverless_mlflow.store import experiments as experiment_store
from serverless_mlflow.store import traces as store

from . import search, span_decoding


def get_trace_info(trace_id: str) -> dict[str, Any]:
    return store.info_json(store.get_info_item(trace_id))


def _spans_json(info: dict[str, Any], items: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    return [MessageToDict(span, preserving_proto_field_name=True) for span in span_decoding.stored_spans(info, items)]


def get_trace(trace_id: str) -> dict[str, Any]:
    info, spans = store.info_and_spans(trace_id)
    return {"trace_info": store.info_json(info), "spans": _spans_json(info, spans)}


def batch_get_traces(trace_ids: list[str], experiment_ids: list[str] | None) -> list[dict[str, Any]]:
    infos = {item["trace_id"]: item for item in store.info_items(trace_ids)}
    out = []
    for trace_id in dict.fromkeys(trace_ids):
        info = infos.get(trace_id)
        if info is None or (experiment_ids is not None and info["experiment_id"] not in experiment_ids):
            continue
        out.append({"trace_info": store.info_json(info), "spans": _spans_json(info)})
    return out


def batch_get_trace_infos(trace_ids: list[str], experiment_ids: list[str] | None) -> list[dict[str, Any]]:
    infos = {item["trace_id"]: item for item in store.info_items(trace_ids)}
    return [
        store.info_json(infos[t])
        for t in dict.fromkeys(trace_ids)
        if t in infos and (experiment_ids is None or infos[t]["experiment_id"] in experiment_ids)
    ]


def search_traces(
    experiment_ids: list[str], filter_string: str | None, max_results: int | None, order_by: list[str] | None, page_token: str | None
) -> tuple[list[dict[str, Any]], str | None]:
    # SqlAlchemyStore.search_traces: a page of at least one trace (a negative size used to reach islice: a 500).
    validate_max_results_param(max_results, allow_null=True)
    normalized = [str(experiment_store.normalize_experiment_id(e)) for e in experiment_ids]
    items, token = search.search_traces(normalized, filter_string, max_results, order_by, page_token)
    return [store.info_json(item) for item in items], token
