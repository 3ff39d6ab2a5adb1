"""Request messages of the trace routes: proto field types (service.proto) and the handler's
``_get_request_message(..., schema=...)`` checks, one entry per operation."""

from __future__ import annotations

from serverless_mlflow.request import (
    Message,
    array,
    intlike,
    item_type_string,
    less_than_or_equal,
    map_key_present,
    required,
    string,
)

_IDS = Message(
    {"trace_ids": "[string]", "experiment_ids": "[string]"},
    {"trace_ids": [array, required, item_type_string], "experiment_ids": [array, item_type_string]},
)

MESSAGES: dict[str, Message] = {
    "start_trace": Message({"trace": "message"}, {"trace": [required]}),
    "get_trace": Message({"trace_id": "string", "allow_partial": "bool"}, {"trace_id": [string, required]}),
    "batch_get_traces": _IDS,
    "batch_get_trace_infos": _IDS,
    "search_traces": Message(
        {"locations": "[message]", "filter": "string", "max_results": "int32", "order_by": "[string]", "page_token": "string"},
        {
            "locations": [array, required],
            "filter": [string],
            "max_results": [intlike, less_than_or_equal(500)],
            "order_by": [array, item_type_string],
            "page_token": [string],
        },
    ),
    "query_trace_metrics": Message(
        {
            "experiment_ids": "[string]",
            "view_type": "enum",
            "metric_name": "string",
            "aggregations": "[message]",
            "dimensions": "[string]",
            "filters": "[string]",
            "time_interval_seconds": "int64",
            "start_time_ms": "int64",
            "end_time_ms": "int64",
            "max_results": "int32",
            "page_token": "string",
        },
        {
            "experiment_ids": [array, required, item_type_string],
            "view_type": [required],
            "metric_name": [string, required],
            "aggregations": [array, required],
            "dimensions": [array, item_type_string],
            "filters": [array, item_type_string],
            "time_interval_seconds": [intlike],
            "start_time_ms": [intlike],
            "end_time_ms": [intlike],
            "max_results": [intlike],
            "page_token": [string],
        },
    ),
    "calculate_trace_filter_correlation": Message(
        {"experiment_ids": "[string]", "filter_string1": "string", "filter_string2": "string", "base_filter": "string"},
        {
            "experiment_ids": [array, required, item_type_string],
            "filter_string1": [string, required],
            "filter_string2": [string, required],
            "base_filter": [string],
        },
    ),
    "set_trace_tag": Message({"key": "string", "value": "string"}, {"key": [string, required], "value": [string]}),
    "delete_trace_tag": Message({"key": "string"}, {"key": [string, required]}),
    "delete_traces": Message(
        {"experiment_id": "string", "max_timestamp_millis": "int64", "max_traces": "int32", "request_ids": "[string]"},
        {
            "experiment_id": [string, required],
            "max_timestamp_millis": [intlike],
            "max_traces": [intlike],
            "request_ids": [array, item_type_string],
        },
    ),
    "link_traces_to_run": Message(
        {"trace_ids": "[string]", "run_id": "string"}, {"trace_ids": [array, required, item_type_string], "run_id": [string, required]}
    ),
    "link_prompts_to_trace": Message(
        {"trace_id": "string", "prompt_versions": "[message]"}, {"trace_id": [string, required], "prompt_versions": [array, required]}
    ),
    "create_assessment": Message({"assessment": "message"}, {"assessment": [required]}),
    "update_assessment": Message({"assessment": "message"}, {"assessment": [required], "update_mask": [required]}),
    # mlflow 2.x clients (StartTrace / EndTrace of service.proto).
    "start_trace_v2": Message(
        {"experiment_id": "string", "timestamp_ms": "int64", "request_metadata": "[message]", "tags": "[message]"},
        {"experiment_id": [string], "timestamp_ms": [intlike], "request_metadata": [map_key_present], "tags": [map_key_present]},
    ),
    "end_trace_v2": Message(
        {"timestamp_ms": "int64", "status": "enum", "request_metadata": "[message]", "tags": "[message]"},
        {"timestamp_ms": [intlike], "status": [string], "request_metadata": [map_key_present], "tags": [map_key_present]},
    ),
    "search_traces_v2": Message(
        {"experiment_ids": "[string]", "filter": "string", "max_results": "int32", "order_by": "[string]", "page_token": "string"},
        {"experiment_ids": [array, item_type_string], "max_results": [intlike, less_than_or_equal(500)]},
    ),
    # Path parameters, raw bodies and the UI's query, read by the handlers (declared for the request fuzz suite).
    "otlp_traces": Message({"resourceSpans": "[message]"}),
    "get_trace_info": Message({}),
    "get_assessment": Message({}),
    "delete_assessment": Message({}),
    "get_trace_info_v2": Message({}),
    "get_trace_artifact": Message({"request_id": "string"}),
}
