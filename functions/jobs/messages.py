"""Request fields of the jobs and demo routes, by kind (the fuzz suite's plans read them). The job routes' bodies
are checked by ``payloads`` (MLflow's pydantic models); the demo routes read ``features`` alone."""

from __future__ import annotations

from serverless_mlflow.request import Message, array, item_type_string, required, string

MESSAGES: dict[str, Message] = {
    "submit_job": Message({"job_name": "string", "params": "message", "timeout": "double"}),
    "search_jobs": Message({"job_name": "string", "params": "message", "statuses": "[enum]"}),
    "get_job": Message({"job_id": "string"}),
    "cancel_job": Message({"job_id": "string"}),
    "generate_demo": Message({"features": "[string]"}),
    "delete_demo": Message({}),
    "get_job_flask": Message({"job_id": "string"}),
    "cancel_job_flask": Message({"job_id": "string"}),
    # MLflow reads the raw JSON (no proto message, no schema): the handler checks each field itself.
    "invoke_scorer": Message(
        {
            "experiment_id": "string",
            "serialized_scorer": "string",
            "scorer_name": "string",
            "scorer_version": "int32",
            "trace_ids": "[string]",
            "log_assessments": "bool",
        }
    ),
    # MLflow 3.18's "Run evaluation" dialog: raw JSON checked by the handler's schema (_get_validated_flask_request_json).
    "invoke_genai_evaluate": Message(
        None,
        {
            "experiment_id": [required, string],
            "trace_ids": [required, array, item_type_string],
            "serialized_scorers": [required, array],
            "scorer_versions": [array],
        },
    ),
}
