"""The local runtime: the deployed API, on a laptop.

Each HTTP request becomes the API Gateway HTTP API (payload 2.0) event the deployed stack sends, and
goes to the same feature handler, picked by the same route table. DynamoDB and S3 are an embedded
moto server unless ``DYNAMODB_ENDPOINT_URL`` / ``S3_ENDPOINT_URL`` name real endpoints. The table's
stream is polled and fed to the indexer handler as real DynamoDB stream events; in ``sync`` mode the
stream is drained before a write is answered, so a read after a write sees derived items.
"""

from __future__ import annotations

import base64
import importlib
import json
import logging
import os
import socket
import sys
import threading
import time
import uuid
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parent.parent
for extra in (ROOT / "layers" / "shared" / "python", ROOT / "functions"):
    if str(extra) not in sys.path:
        sys.path.insert(0, str(extra))

from local import iam  # noqa: E402
from serverless_mlflow import bootstrap, routes, schema  # noqa: E402

log = logging.getLogger("serverless_mlflow.local")

DEFAULT_TABLE = "mlflow-serverless"
DEFAULT_BUCKET = "mlflow-serverless-artifacts"
REGION = "us-east-1"
MAX_STREAM_ATTEMPTS = 3
# API Gateway HTTP APIs accept 10 MB; a Lambda invocation payload is capped at 6 MB.
MAX_LAMBDA_PAYLOAD = 6 * 1024 * 1024


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class LambdaContext:
    """The fields Powertools reads from a Lambda context."""

    def __init__(self, feature: str) -> None:
        self.function_name = f"mlflow-serverless-{feature}"
        self.function_version = "$LATEST"
        self.memory_limit_in_mb = 512
        self.invoked_function_arn = f"arn:aws:lambda:{REGION}:000000000000:function:{self.function_name}"
        self.aws_request_id = str(uuid.uuid4())
        self._deadline = time.monotonic() + 29

    def get_remaining_time_in_millis(self) -> int:
        return int((self._deadline - time.monotonic()) * 1000)


class LocalRuntime:
    def __init__(self, port: int | None = None, host: str = "127.0.0.1", indexer_mode: str | None = None) -> None:
        self.host = host
        self.port = port if port is not None else int(os.environ.get("PORT", "5000"))
        self.indexer_mode = indexer_mode or os.environ.get("INDEXER_MODE", "sync")  # sync | async | paused
        self.table_name = os.environ.get("TABLE_NAME", DEFAULT_TABLE)
        self.bucket_name = os.environ.get("BUCKET_NAME", DEFAULT_BUCKET)
        self._moto: Any = None
        self._http: ThreadingHTTPServer | None = None
        self._stream_lock = threading.Lock()
        self._shard_iterators: dict[str, str] = {}
        self._stream_arn: str | None = None
        self._poller: threading.Thread | None = None
        self._stopping = threading.Event()
        self.dead_letters: list[dict[str, Any]] = []
        self._handlers: dict[str, Any] = {}

    # --- lifecycle ---------------------------------------------------------------------------
    def start(self) -> LocalRuntime:
        self._configure_environment()
        self._ensure_resources()
        if self.port == 0:
            self.port = free_port()
        self._http = ThreadingHTTPServer((self.host, self.port), _make_request_handler(self))
        self._http.daemon_threads = True
        threading.Thread(target=self._http.serve_forever, daemon=True, name="local-http").start()
        if self.indexer_mode == "async":
            self._poller = threading.Thread(target=self._poll_forever, daemon=True, name="stream-poller")
            self._poller.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        if self._http:
            self._http.shutdown()
            self._http.server_close()
        if self._moto:
            self._moto.stop()

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def _configure_environment(self) -> None:
        os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
        os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
        os.environ.setdefault("AWS_DEFAULT_REGION", REGION)
        os.environ.setdefault("AWS_REGION", REGION)
        os.environ["AWS_ACCOUNT_ID_ENDPOINT_MODE"] = "disabled"
        os.environ.setdefault("POWERTOOLS_TRACE_DISABLED", "true")
        os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
        os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")
        os.environ["TABLE_NAME"] = self.table_name
        os.environ["BUCKET_NAME"] = self.bucket_name
        if not (os.environ.get("DYNAMODB_ENDPOINT_URL") and os.environ.get("S3_ENDPOINT_URL")):
            from moto.server import ThreadedMotoServer

            moto_port = int(os.environ.get("MOTO_PORT", "0")) or free_port()
            logging.getLogger("werkzeug").setLevel(logging.ERROR)
            _serialize_moto_dynamodb()
            self._moto = ThreadedMotoServer(ip_address="127.0.0.1", port=moto_port, verbose=False)
            self._moto.start()
            endpoint = f"http://127.0.0.1:{moto_port}"
            os.environ.setdefault("DYNAMODB_ENDPOINT_URL", endpoint)
            os.environ.setdefault("S3_ENDPOINT_URL", endpoint)
        from serverless_mlflow import s3, table

        iam.install()
        table.reset_client()
        s3.reset_clients()

    def _ensure_resources(self) -> None:
        import boto3

        dynamodb = boto3.client("dynamodb", endpoint_url=os.environ["DYNAMODB_ENDPOINT_URL"])
        existing = dynamodb.list_tables().get("TableNames", [])
        if self.table_name not in existing:
            dynamodb.create_table(**schema.table_definition(self.table_name))
            dynamodb.get_waiter("table_exists").wait(TableName=self.table_name)
            dynamodb.update_time_to_live(
                TableName=self.table_name,
                TimeToLiveSpecification={"Enabled": True, "AttributeName": schema.TTL_ATTRIBUTE},
            )
        self._stream_arn = dynamodb.describe_table(TableName=self.table_name)["Table"].get("LatestStreamArn")
        s3 = boto3.client("s3", endpoint_url=os.environ["S3_ENDPOINT_URL"])
        buckets = [b["Name"] for b in s3.list_buckets().get("Buckets", [])]
        if self.bucket_name not in buckets:
            s3.create_bucket(Bucket=self.bucket_name)
        bootstrap.ensure_bootstrap_items()
        self.drain_stream()

    # --- HTTP -> handler ----------------------------------------------------------------------
    def handler_for(self, feature: str) -> Any:
        if feature not in self._handlers:
            self._handlers[feature] = importlib.import_module(f"{feature}.handler").lambda_handler
        return self._handlers[feature]

    def invoke(self, method: str, raw_path: str, query: str, headers: dict[str, str], body: bytes) -> dict[str, Any]:
        matched = routes.match(method, raw_path)
        if matched:
            route, path_params = matched
            feature, route_key = route.feature, route.route_key
        else:
            feature, route_key, path_params = routes.DEFAULT_FEATURE, "$default", {}
        if len(body) > MAX_LAMBDA_PAYLOAD:
            return {
                "statusCode": 413,
                "headers": {"content-type": "application/json"},
                "body": json.dumps({"message": "Request Entity Too Large"}),
            }
        event = api_gateway_event(method, raw_path, query, headers, body, route_key, path_params, self.host)
        with iam.acting_as(feature):
            response = self.handler_for(feature)(event, LambdaContext(feature))
        if method != "GET" and self.indexer_mode == "sync":
            self.drain_stream()
        return response

    # --- stream -> indexer ----------------------------------------------------------------------
    def drain_stream(self) -> int:
        """Feed every pending stream record to the indexer; returns how many were delivered."""
        if self.indexer_mode == "paused" or not self._stream_arn:
            return 0
        try:
            indexer = self.handler_for("indexer")
        except ModuleNotFoundError:
            return 0
        import boto3

        streams = boto3.client("dynamodbstreams", endpoint_url=os.environ["DYNAMODB_ENDPOINT_URL"])
        delivered = 0
        with self._stream_lock:
            shards = streams.describe_stream(StreamArn=self._stream_arn)["StreamDescription"].get("Shards", [])
            for shard in shards:
                shard_id = shard["ShardId"]
                iterator = self._shard_iterators.get(shard_id) or streams.get_shard_iterator(
                    StreamArn=self._stream_arn, ShardId=shard_id, ShardIteratorType="TRIM_HORIZON"
                )["ShardIterator"]
                while iterator:
                    page = streams.get_records(ShardIterator=iterator, Limit=100)
                    records = [lambda_stream_record(r, self._stream_arn) for r in page.get("Records", [])]
                    iterator = page.get("NextShardIterator")
                    if iterator:
                        self._shard_iterators[shard_id] = iterator
                    if not records:
                        break
                    self._deliver(indexer, records)
                    delivered += len(records)
        return delivered

    def _deliver(self, indexer: Any, records: list[dict[str, Any]]) -> None:
        """Lambda's event-source mapping: retry reported failures, bisecting, then dead-letter."""
        pending = records
        for _ in range(MAX_STREAM_ATTEMPTS):
            with iam.acting_as("indexer"):
                result = indexer({"Records": pending}, LambdaContext("indexer")) or {}
            failures = {f["itemIdentifier"] for f in result.get("batchItemFailures", [])}
            if not failures:
                return
            first = min(i for i, r in enumerate(pending) if r["dynamodb"]["SequenceNumber"] in failures)
            pending = pending[first:]
        self.dead_letters.extend(pending)
        log.error("indexer gave up on %d stream records", len(pending))

    def _poll_forever(self) -> None:
        while not self._stopping.wait(0.2):
            try:
                self.drain_stream()
            except Exception:  # the poller must survive a bad record or a restart of moto
                log.exception("stream poll failed")


_moto_lock = threading.Lock()
_moto_copy_cache = threading.local()


def _serialize_moto_dynamodb() -> None:
    """Make embedded moto's DynamoDB behave like DynamoDB under concurrent requests, and affordably.

    * moto's TransactWriteItems snapshots the whole table and restores the snapshot when a condition
      fails, erasing writes other threads committed meanwhile: one request at a time avoids that.
    * It also deep-copies the table (items and stream history) once per operation of a transaction,
      only to keep the first copy for rollback; copies within one transaction now share that first
      copy, which is exactly the state moto rolls back to.
    """
    import copy

    import moto.dynamodb.models as backend_module
    from moto.dynamodb.models.table import Table
    from moto.dynamodb.responses import DynamoHandler

    if getattr(DynamoHandler.call_action, "_serialized", False):
        return
    original_call = DynamoHandler.call_action

    def call_action(self: Any) -> Any:
        with _moto_lock:
            return original_call(self)

    class _CopyShim:
        def __getattr__(self, name: str) -> Any:
            return getattr(copy, name)

        def deepcopy(self, obj: Any, memo: Any = None) -> Any:
            cache = getattr(_moto_copy_cache, "tables", None)
            if cache is None or not isinstance(obj, Table):
                return copy.deepcopy(obj, memo)
            if id(obj) not in cache:
                cache[id(obj)] = copy.deepcopy(obj)
            return cache[id(obj)]

    original_transact = backend_module.DynamoDBBackend.transact_write_items

    def transact_write_items(self: Any, transact_items: list[dict[str, Any]]) -> None:
        _moto_copy_cache.tables = {}
        try:
            return original_transact(self, transact_items)
        finally:
            _moto_copy_cache.tables = None

    call_action._serialized = True  # type: ignore[attr-defined]
    DynamoHandler.call_action = call_action  # type: ignore[method-assign]
    backend_module.copy = _CopyShim()  # type: ignore[attr-defined]
    backend_module.DynamoDBBackend.transact_write_items = transact_write_items  # type: ignore[method-assign]


def api_gateway_event(
    method: str,
    raw_path: str,
    query: str,
    headers: dict[str, str],
    body: bytes,
    route_key: str,
    path_params: dict[str, str],
    host: str,
) -> dict[str, Any]:
    from urllib.parse import parse_qs

    lowered = {k.lower(): v for k, v in headers.items()}
    query_params = {k: ",".join(v) for k, v in parse_qs(query, keep_blank_values=True).items()}
    try:
        text_body, is_base64 = body.decode("utf-8"), False
    except UnicodeDecodeError:
        text_body, is_base64 = base64.b64encode(body).decode("ascii"), True
    now = datetime.now(UTC)
    event: dict[str, Any] = {
        "version": "2.0",
        "routeKey": route_key,
        "rawPath": raw_path,
        "rawQueryString": query,
        "headers": lowered,
        "requestContext": {
            "accountId": "000000000000",
            "apiId": "local",
            "domainName": host,
            "domainPrefix": "local",
            "http": {
                "method": method,
                "path": raw_path,
                "protocol": "HTTP/1.1",
                "sourceIp": "127.0.0.1",
                "userAgent": lowered.get("user-agent", ""),
            },
            "requestId": str(uuid.uuid4()),
            "routeKey": route_key,
            "stage": "$default",
            "time": now.strftime("%d/%b/%Y:%H:%M:%S +0000"),
            "timeEpoch": int(now.timestamp() * 1000),
        },
        "isBase64Encoded": is_base64,
    }
    if query_params:
        event["queryStringParameters"] = query_params
    if path_params:
        event["pathParameters"] = path_params
    if body:
        event["body"] = text_body
    return event


def lambda_stream_record(record: dict[str, Any], stream_arn: str) -> dict[str, Any]:
    """A boto3 stream record in the shape Lambda delivers it (epoch seconds, with eventSourceARN)."""
    dynamodb = dict(record["dynamodb"])
    created = dynamodb.get("ApproximateCreationDateTime")
    if isinstance(created, datetime):
        dynamodb["ApproximateCreationDateTime"] = created.timestamp()
    out = {k: v for k, v in record.items() if k != "dynamodb"}
    out["dynamodb"] = _to_wire(dynamodb)
    out["eventSourceARN"] = stream_arn
    out.setdefault("eventSource", "aws:dynamodb")
    out.setdefault("awsRegion", REGION)
    return out


def _to_wire(value: Any) -> Any:
    """boto3 hands binary attributes as bytes; Lambda's JSON event carries them base64-encoded."""
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, dict):
        return {k: _to_wire(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_to_wire(v) for v in value]
    return value


def _make_request_handler(runtime: LocalRuntime) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _handle(self) -> None:
            split = urlsplit(self.path)
            length = int(self.headers.get("content-length") or 0)
            body = self.rfile.read(length) if length else b""
            headers: dict[str, str] = {}
            for key, value in self.headers.items():
                headers[key.lower()] = f"{headers[key.lower()]},{value}" if key.lower() in headers else value
            try:
                response = runtime.invoke(self.command, split.path, split.query, headers, body)
            except Exception:
                log.exception("local invocation failed")
                response = {
                    "statusCode": 500,
                    "headers": {"content-type": "application/json"},
                    "body": json.dumps({"error_code": "INTERNAL_ERROR", "message": "local runtime failure"}),
                }
            self._respond(response)

        def _respond(self, response: dict[str, Any]) -> None:
            raw = response.get("body") or ""
            payload = base64.b64decode(raw) if response.get("isBase64Encoded") else raw.encode("utf-8")
            self.send_response(int(response.get("statusCode", 200)))
            for key, value in (response.get("headers") or {}).items():
                self.send_header(key, str(value))
            for cookie in response.get("cookies") or []:
                self.send_header("set-cookie", cookie)
            self.send_header("content-length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = _handle

        def log_message(self, format: str, *args: Any) -> None:
            log.info("%s %s", self.address_string(), format % args)

    return Handler
