"""Request messages of the GenAI evaluation routes (datasets, scorers): proto field types (service.proto,
datasets.proto) and the handler's ``_get_request_message(..., schema=...)`` checks, one entry per operation."""

from __future__ import annotations

from serverless_mlflow.request import Message, array, intlike, item_type_string, required, string

_SCORER_KEY = {"experiment_id": "string", "name": "string"}
_SCORER_KEY_SCHEMA = {"experiment_id": [required, string], "name": [required, string]}
_SCORER_VERSION = Message({**_SCORER_KEY, "version": "int32"}, {**_SCORER_KEY_SCHEMA, "version": [intlike]})

MESSAGES: dict[str, Message] = {
    "create_dataset": Message(
        {
            "name": "string",
            "experiment_ids": "[string]",
            "tags": "string",
            "source_type": "enum",
            "source": "string",
            "schema": "string",
            "profile": "string",
            "created_by": "string",
        },
        {"name": [required, string], "experiment_ids": [array], "tags": [string]},
    ),
    "search_datasets": Message(
        {"experiment_ids": "[string]", "filter_string": "string", "max_results": "int32", "order_by": "[string]", "page_token": "string"},
        {"experiment_ids": [array], "filter_string": [string], "max_results": [intlike], "order_by": [array], "page_token": [string]},
    ),
    "set_dataset_tags": Message({"dataset_id": "string", "tags": "string"}, {"tags": [required, string]}),
    "upsert_dataset_records": Message(
        {"dataset_id": "string", "records": "string", "updated_by": "string"}, {"records": [required, string]}
    ),
    "get_dataset_records": Message(
        {"dataset_id": "string", "max_results": "int32", "page_token": "string"}, {"max_results": [intlike], "page_token": [string]}
    ),
    "delete_dataset_records": Message({"dataset_id": "string", "dataset_record_ids": "[string]"}, {"dataset_record_ids": [array]}),
    "add_dataset_to_experiments": Message({"dataset_id": "string", "experiment_ids": "[string]"}, {"experiment_ids": [array]}),
    "remove_dataset_from_experiments": Message({"dataset_id": "string", "experiment_ids": "[string]"}, {"experiment_ids": [array]}),
    "register_scorer": Message(
        {**_SCORER_KEY, "serialized_scorer": "string"}, {**_SCORER_KEY_SCHEMA, "serialized_scorer": [required, string]}
    ),
    "list_scorers": Message(
        {"experiment_id": "string", "experiment_ids": "[string]"}, {"experiment_id": [string], "experiment_ids": [array, item_type_string]}
    ),
    "list_scorer_versions": Message(_SCORER_KEY, _SCORER_KEY_SCHEMA),
    "get_scorer": _SCORER_VERSION,
    "delete_scorer": _SCORER_VERSION,
    "get_online_scoring_configs": Message({"scorer_ids": "[string]"}, {"scorer_ids": [required, array, item_type_string]}),
    # MLflow validates the raw JSON here (no proto message): sample_rate any value, filter_string str or null.
    "upsert_online_scoring_config": Message(
        None, {"experiment_id": [required, string], "name": [required, string], "sample_rate": [required]}
    ),
    # Path parameters only (declared for the request fuzz suite).
    "get_dataset": Message({}),
    "delete_dataset": Message({}),
    "delete_dataset_tag": Message({}),
    "get_dataset_experiment_ids": Message({}),
}
