"""CloudFormation custom resource: write the bootstrap items (Default experiment 0) after deploy.

Runs on the shared layer and calls ``serverless_mlflow.http.bootstrap.ensure_bootstrap_items`` (conditional
puts that ignore ConditionalCheckFailed), so an existing Default experiment is never overwritten and the
timestamps are those of the first deploy. Invoked directly by CloudFormation (no provider framework),
so it answers CloudFormation's presigned ResponseURL itself. Delete is a no-op: the table is retained.
"""

from __future__ import annotations

import json
import logging
import os
import urllib.request
from typing import Any

logger = logging.getLogger()
logger.setLevel(logging.INFO)


def _respond(event: dict[str, Any], context: Any, status: str, reason: str = "") -> None:
    body = json.dumps(
        {
            "Status": status,
            "Reason": reason or f"See CloudWatch log stream {getattr(context, 'log_stream_name', '?')}",
            "PhysicalResourceId": event.get("PhysicalResourceId") or f"bootstrap-{event['ResourceProperties'].get('TableName', 'table')}",
            "StackId": event["StackId"],
            "RequestId": event["RequestId"],
            "LogicalResourceId": event["LogicalResourceId"],
            "Data": {},
        }
    ).encode()
    request = urllib.request.Request(
        event["ResponseURL"], data=body, method="PUT", headers={"Content-Type": "", "Content-Length": str(len(body))}
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        logger.info("CloudFormation response status %s", response.status)


def _ensure_admin() -> None:
    """basic auth: create the first admin from the stack's secret (never logged) unless the user exists."""
    secret_arn = os.environ.get("ADMIN_SECRET_ARN")
    if not secret_arn:
        return
    import boto3

    from serverless_mlflow.http.bootstrap import ensure_admin

    secret = json.loads(boto3.client("secretsmanager").get_secret_value(SecretId=secret_arn)["SecretString"])
    created = ensure_admin(secret["username"], secret["password"])
    logger.info("admin user %s: %s", secret["username"], "created" if created else "exists")


def handler(event: dict[str, Any], context: Any) -> None:
    logger.info("%s %s", event.get("RequestType"), event.get("LogicalResourceId"))
    try:
        if event["RequestType"] in ("Create", "Update"):
            # Imported here so a broken layer is reported to CloudFormation instead of hanging the stack.
            from serverless_mlflow.http.bootstrap import ensure_bootstrap_items

            ensure_bootstrap_items()
            _ensure_admin()
    except Exception as error:  # report every failure: CloudFormation would otherwise wait for an hour
        logger.exception("bootstrap failed")
        _respond(event, context, "FAILED", f"{type(error).__name__}: {error}"[:1000])
        return
    _respond(event, context, "SUCCESS")
