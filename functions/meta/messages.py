"""Request messages of the meta routes: none of them reads a field (declared for the request fuzz suite)."""

from __future__ import annotations

from serverless_mlflow.request import Message

MESSAGES: dict[str, Message] = {
    "health": Message({}),
    "version": Message({}),
    "server_info": Message({}),
    "get_ui_telemetry": Message({}),
    "post_ui_telemetry": Message({"records": "[message]"}),
    # Read only when a deployments target is configured (deployments_proxy), as MLflow's handler does.
    "gateway_proxy": Message({"gateway_path": "string", "json_data": "message"}),
    "get_assistant_config": Message({}),
    "get_assistant_providers": Message({}),
}
