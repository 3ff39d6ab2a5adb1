"""Request messages of the artifact routes: proto field types (mlflow_artifacts.proto, service.proto) and
the handler's ``_get_request_message(..., schema=...)`` checks, one entry per operation that parses one."""

from __future__ import annotations

from serverless_mlflow.request import Message, intlike, required, string

_MPU_FIELDS = {"path": "string", "num_parts": "int64", "upload_id": "string", "parts": "[message]"}

MESSAGES: dict[str, Message] = {
    "list_artifacts": Message({"path": "string"}),
    "list_run_artifacts": Message(
        {"run_id": "string", "run_uuid": "string", "path": "string", "page_token": "string"},
        {"run_id": [string, required], "path": [string], "page_token": [string]},
        run_id_alias=True,
    ),
    "list_logged_model_artifacts": Message(
        {"artifact_directory_path": "string", "page_token": "string"}, {"artifact_directory_path": [string]}
    ),
    "create_presigned_upload_url": Message(
        {"run_id": "string", "model_id": "string", "path": "string", "expiration": "int64"},
        {"run_id": [string], "model_id": [string], "path": [required, string], "expiration": [intlike]},
    ),
    "create_presigned_download_url": Message(
        {"run_id": "string", "path": "string", "expiration": "int64"},
        {"run_id": [required, string], "path": [required, string], "expiration": [intlike]},
    ),
    "create_multipart_upload": Message(_MPU_FIELDS, {"path": [required, string], "num_parts": [intlike]}),
    "complete_multipart_upload": Message(_MPU_FIELDS, {"path": [required, string], "upload_id": [string], "parts": [required]}),
    "abort_multipart_upload": Message(_MPU_FIELDS, {"path": [required, string], "upload_id": [string]}),
    # Path parameters, raw bodies and the UI's query, read by the handlers (declared for the request fuzz suite).
    "download_artifact": Message({}),
    "upload_artifact": Message({}),
    "delete_artifact": Message({}),
    "presigned_download": Message({}),
    "get_run_artifact": Message({"run_id": "string", "run_uuid": "string", "path": "string"}),
    # The UI's upload: run_uuid and path in the query string, the file as the raw body.
    "upload_run_artifact": Message({"run_uuid": "string", "path": "string"}),
    "get_model_version_artifact": Message({"name": "string", "version": "string", "path": "string"}),
    "get_logged_model_artifact": Message({"artifact_file_path": "string"}),
}
