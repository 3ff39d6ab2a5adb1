"""Lambda authorizer of the HTTP API in ``authorization=basic`` mode (the logic lives in the shared layer)."""

from serverless_mlflow.auth.authorizer import lambda_handler

__all__ = ["lambda_handler"]
