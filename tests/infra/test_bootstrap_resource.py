"""The deploy-time bootstrap custom resource, run against an embedded DynamoDB (moto) and a local HTTP
endpoint standing in for CloudFormation's presigned ResponseURL."""

from __future__ import annotations

import importlib.util
import json
import logging
import os
import threading
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import ModuleType, SimpleNamespace
from typing import Any

import boto3
import pytest

import infra
from serverless_mlflow.http.bootstrap import bootstrap_items
from serverless_mlflow.storage import schema, table

TABLE = "bootstrap-resource-test"


def _load_handler() -> ModuleType:
    path = infra.HANDLERS_DIR / "bootstrap" / "bootstrap_resource.py"
    spec = importlib.util.spec_from_file_location("bootstrap_resource", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class _CloudFormation:
    """Collects the responses the custom resource PUTs to its ResponseURL."""

    def __init__(self) -> None:
        self.responses: list[dict[str, Any]] = []
        received = self.responses

        class Handler(BaseHTTPRequestHandler):
            def do_PUT(self) -> None:
                length = int(self.headers["Content-Length"])
                received.append(json.loads(self.rfile.read(length)))
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/response"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def cloudformation() -> Iterator[_CloudFormation]:
    endpoint = _CloudFormation()
    yield endpoint
    endpoint.close()


@pytest.fixture
def dynamodb(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    # A moto *server* and a uniquely named table: moto's in-process mock_aws would reset the global moto
    # backends on exit, wiping the data of a local runtime that another test runs in this same process.
    from moto.server import ThreadedMotoServer

    from local.engine import free_port

    port = free_port()
    moto = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    moto.start()
    endpoint = f"http://127.0.0.1:{port}"
    name = f"{TABLE}-{uuid.uuid4().hex[:8]}"
    monkeypatch.setenv("DYNAMODB_ENDPOINT_URL", endpoint)
    monkeypatch.setenv("TABLE_NAME", name)
    table.reset_client()
    client = boto3.client("dynamodb", endpoint_url=endpoint, region_name="us-east-1")
    client.create_table(**schema.table_definition(name))
    try:
        yield SimpleNamespace(client=client, name=name)
    finally:
        client.delete_table(TableName=name)
        moto.stop()
        table.reset_client()


def _event(request_type: str, url: str) -> dict[str, Any]:
    return {
        "RequestType": request_type,
        "ResponseURL": url,
        "StackId": "arn:aws:cloudformation:us-east-1:123456789012:stack/test/1",
        "RequestId": f"req-{request_type}",
        "LogicalResourceId": "BootstrapItems",
        "ResourceType": "Custom::MlflowBootstrapItems",
        "ResourceProperties": {"TableName": "from-the-stack"},
        **({"PhysicalResourceId": "bootstrap-from-the-stack"} if request_type != "Create" else {}),
    }


CONTEXT = SimpleNamespace(log_stream_name="test-stream")


def test_create_writes_bootstrap_items_and_update_never_overwrites(dynamodb: Any, cloudformation: _CloudFormation) -> None:
    handler = _load_handler()
    handler.handler(_event("Create", cloudformation.url), CONTEXT)
    assert cloudformation.responses[-1]["Status"] == "SUCCESS"
    assert cloudformation.responses[-1]["PhysicalResourceId"] == "bootstrap-from-the-stack"

    keys = [table.key_of(item) for item in bootstrap_items()]
    stored = {(i["pk"], i["sk"]): i for i in table.batch_get(keys)}
    assert set(stored) == {(k["pk"], k["sk"]) for k in keys}
    experiment = stored[tuple(schema.ENTITY["experiment"].key(experiment_id="0").values())]
    assert experiment["name"] == "Default" and experiment["lifecycle_stage"] == "active"

    # A rename of the Default experiment made by a user must survive every later deploy.
    dynamodb.client.update_item(
        TableName=dynamodb.name,
        Key=table.to_item(schema.ENTITY["experiment"].key(experiment_id="0")),
        UpdateExpression="SET #n = :n",
        ExpressionAttributeNames={"#n": "name"},
        ExpressionAttributeValues={":n": {"S": "Renamed"}},
    )
    handler.handler(_event("Update", cloudformation.url), CONTEXT)
    assert cloudformation.responses[-1]["Status"] == "SUCCESS"
    assert table.get(schema.ENTITY["experiment"].key(experiment_id="0"))["name"] == "Renamed"

    handler.handler(_event("Delete", cloudformation.url), CONTEXT)
    assert cloudformation.responses[-1]["Status"] == "SUCCESS"
    assert table.get(schema.ENTITY["experiment"].key(experiment_id="0")) is not None, "the table is retained, so are its items"


def test_failure_is_reported_to_cloudformation(dynamodb: Any, cloudformation: _CloudFormation, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TABLE_NAME", "no-such-table")
    _load_handler().handler(_event("Create", cloudformation.url), CONTEXT)
    (response,) = cloudformation.responses
    assert response["Status"] == "FAILED"
    assert "ResourceNotFound" in response["Reason"]


def test_basic_auth_admin_comes_from_the_stack_secret_and_is_never_overwritten(
    dynamodb: Any, cloudformation: _CloudFormation, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from serverless_mlflow.auth import store

    # The same moto server answers Secrets Manager (boto3's service-specific endpoint variable).
    endpoint = os.environ["DYNAMODB_ENDPOINT_URL"]
    monkeypatch.setenv("AWS_ENDPOINT_URL_SECRETS_MANAGER", endpoint)
    secrets = boto3.client("secretsmanager", endpoint_url=endpoint, region_name="us-east-1")
    first = "generated-" + uuid.uuid4().hex
    arn = secrets.create_secret(Name=f"admin-{uuid.uuid4().hex[:8]}", SecretString=json.dumps({"username": "admin", "password": first}))[
        "ARN"
    ]
    monkeypatch.setenv("ADMIN_SECRET_ARN", arn)
    handler = _load_handler()
    with caplog.at_level(logging.INFO):  # the level the custom resource logs at (botocore logs bodies only at DEBUG)
        handler.handler(_event("Create", cloudformation.url), CONTEXT)
    assert cloudformation.responses[-1]["Status"] == "SUCCESS"
    admin = store.authenticate("admin", first)
    assert admin is not None and admin.is_admin
    assert first not in caplog.text, "the password must never be logged"

    # A later deploy with another secret value (or a rotated one) keeps the admin's current password.
    secrets.put_secret_value(SecretId=arn, SecretString=json.dumps({"username": "admin", "password": "other-" + uuid.uuid4().hex}))
    handler.handler(_event("Update", cloudformation.url), CONTEXT)
    assert cloudformation.responses[-1]["Status"] == "SUCCESS"
    assert store.authenticate("admin", first) is not None
