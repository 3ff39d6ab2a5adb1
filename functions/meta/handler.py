"""Meta routes: health, version, server-info, and ENDPOINT_NOT_FOUND for every unknown route."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.event_handler import Response

from serverless_mlflow.api import Request, build_app, lambda_entry
from serverless_mlflow.server_info import MLFLOW_API_VERSION, server_info


def health(_: Request) -> Response:
    return Response(status_code=200, content_type="text/plain", body="OK")


def version(_: Request) -> Response:
    return Response(status_code=200, content_type="text/plain", body=MLFLOW_API_VERSION)


def get_server_info(_: Request) -> dict[str, Any]:
    return server_info()


app = build_app(
    "meta",
    {"health": health, "version": version, "server_info": get_server_info},
)
lambda_handler = lambda_entry(app)
