"""Meta routes: health, version, server-info, and ENDPOINT_NOT_FOUND for every unknown route."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.event_handler import Response

from serverless_mlflow.http.api import Request, build_app, lambda_entry
from serverless_mlflow.http.server_info import MLFLOW_API_VERSION, server_info

from . import assistant, deployments_proxy
from .messages import MESSAGES


def health(_: Request) -> Response:
    return Response(status_code=200, content_type="text/plain", body="OK")


def version(_: Request) -> Response:
    return Response(status_code=200, content_type="text/plain", body=MLFLOW_API_VERSION)


def get_server_info(_: Request) -> dict[str, Any]:
    return server_info()


# The server collects no telemetry: the UI is told so (MLflow's answers with telemetry disabled).
UI_TELEMETRY_OFF = {"disable_ui_telemetry": True, "disable_ui_events": [], "ui_rollout_percentage": 0}


def get_ui_telemetry(_: Request) -> dict[str, Any]:
    return UI_TELEMETRY_OFF


def post_ui_telemetry(_: Request) -> dict[str, Any]:
    return {"status": "disabled"}


def gateway_proxy(req: Request) -> dict[str, Any]:
    return deployments_proxy.proxy(req.method, req.message(MESSAGES["gateway_proxy"]))


def get_assistant_config(_: Request) -> dict[str, Any]:
    return assistant.config()


def get_assistant_providers(_: Request) -> dict[str, Any]:
    return assistant.providers()


app = build_app(
    "meta",
    {
        "health": health,
        "version": version,
        "server_info": get_server_info,
        "get_ui_telemetry": get_ui_telemetry,
        "post_ui_telemetry": post_ui_telemetry,
        "gateway_proxy": gateway_proxy,
        "get_assistant_config": get_assistant_config,
        "get_assistant_providers": get_assistant_providers,
    },
)
lambda_handler = lambda_entry(app)
