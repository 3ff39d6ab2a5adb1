"""Request fields of the jobs and demo routes, by kind (the fuzz suite's plans read them). The job routes' bodies
are checked by ``payloads`` (MLflow's pydantic models); the demo routes read ``features`` alone."""

from __future__ import annotations

from serverless_mlflow.request import Message

MESSAGES: dict[str, Message] = {
    "submit_job": Message({"job_name": "string", "params": "message", "timeout": "double"}),
    "search_jobs": Message({"job_name": "string", "params": "message", "statuses": "[enum]"}),
    "get_job": Message({"job_id": "string"}),
    "cancel_job": Message({"job_id": "string"}),
    "generate_demo": Message({"features": "[string]"}),
    "delete_demo": Message({}),
}
