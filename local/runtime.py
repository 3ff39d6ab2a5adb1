"""The local runtime: the deployed API, on a laptop.

Each HTTP request becomes the API Gateway HTTP API (payload 2.0) event the deployed stack sends and goes to
the same feature handler, picked by the same route table, with the same 6 MB payload caps and the IAM rights
its deployed role has (``local/iam.py``). DynamoDB is AWS's DynamoDB Local and S3 is moto, both embedded
(``local/engine.py``), unless ``DYNAMODB_ENDPOINT_URL`` / ``S3_ENDPOINT_URL`` name other endpoints. The
table's stream is followed like Lambda's event source mapping does it (``local/streams.py``) and fed to the
indexer; in ``sync`` mode the stream is drained before a write is answered, or, for a run's own writes, before
the next other request runs (``local/barrier.py``), so a read after a write sees derived items.
"""

from __future__ import annotations

import importlib
import logging
import os
import secrets
import sys
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
# LOCAL_ASSETS=built (local/built.py): the built layer and functions are on the path instead.
if os.environ.get("LOCAL_ASSETS", "source").lower() != "built":
    for extra in (ROOT / "layers" / "shared" / "python", ROOT / "functions"):
        if str(extra) not in sys.path:
            sys.path.insert(0, str(extra))

from infra import gateway_catalog  # noqa: E402
from local import engine, iam, writes  # noqa: E402
from local.authorizer import UNAUTHORIZED, Authorizer  # noqa: E402
from local.barrier import ReadBarrier, defers  # noqa: E402
from local.deferrals import LocalDeferrals  # noqa: E402
from local.engine import DynamoDBLocal, MotoS3, free_port  # noqa: E402
from local.events import REGION, LambdaContext, api_gateway_event, invoke_api_function  # noqa: E402
from local.http_server import serve  # noqa: E402
from local.jobs import LocalJobs  # noqa: E402
from local.monitor import LocalMonitor  # noqa: E402
from local.streams import BATCHING_WINDOW_SECONDS, StreamFollower, needs_indexing  # noqa: E402
from local.webhooks import LocalWebhooks  # noqa: E402
from serverless_mlflow.http import bootstrap, http_api, siblings, static_files  # noqa: E402
from serverless_mlflow.index import trace_deferral  # noqa: E402
from serverless_mlflow.jobs import job_queue  # noqa: E402
from serverless_mlflow.request import routes  # noqa: E402
from serverless_mlflow.storage import schema  # noqa: E402

log = logging.getLogger("serverless_mlflow.local")

DEFAULT_TABLE = "mlflow-serverless"
DEFAULT_BUCKET = "mlflow-serverless-artifacts"
DEFAULT_CHECKPOINT_DIR = ROOT / ".local" / "stream-checkpoints"
# INDEXER_MODE=async polls the stream like the deployed mapping's batching window.
POLL_SECONDS = BATCHING_WINDOW_SECONDS
# The gateway runtime answers as its function URL does: streamed answers stream.
STREAMING_FEATURE = "gateway_runtime"


class LocalRuntime:
    def __init__(
        self, port: int | None = None, host: str = "127.0.0.1", indexer_mode: str | None = None, monitor_schedule: bool = True
    ) -> None:
        self.host = host
        # False: no timer runs the monitor; passes happen only when ``monitor.tick()`` is called (the test session,
        # whose tests decide when a pass happens and must not meet a pass's jobs in the middle of another test).
        self.monitor_schedule = monitor_schedule
        self.port = port if port is not None else int(os.environ.get("PORT", "5000"))
        # Invocations whose stream records may not be delivered yet (their writes date those records).
        self._pending_writes = writes.Pending()
        # Sync mode: run writes answered before their records are delivered (drained by the next other request).
        self._barrier = ReadBarrier(self._pending_writes, lambda: self._catch_up_quietly())
        self._indexer_mode = indexer_mode or os.environ.get("INDEXER_MODE", "sync")  # sync | async | paused
        self.table_name = os.environ.get("TABLE_NAME", DEFAULT_TABLE)
        self.bucket_name = os.environ.get("BUCKET_NAME", DEFAULT_BUCKET)
        self.dynamodb: DynamoDBLocal | None = None
        self.s3: MotoS3 | None = None
        self.follower: StreamFollower | None = None
        self.webhooks: LocalWebhooks | None = None
        self.jobs: LocalJobs | None = None
        self.deferrals: LocalDeferrals | None = None
        self.monitor: LocalMonitor | None = None
        self._http: Any = None
        self._poller: threading.Thread | None = None
        self._stopping = threading.Event()
        self._handlers: dict[str, Any] = {}
        self._environment_set: dict[str, str | None] = {}
        # Lambda's asynchronous invocations (one worker: they run in the order they were queued).
        self._async_invocations = ThreadPoolExecutor(max_workers=1, thread_name_prefix="async-invoke")
        # AUTHORIZATION=basic: API Gateway's Lambda authorizer in front of every non-public route.
        self.authorization = os.environ.get("AUTHORIZATION", "none").lower()
        self.authorizer: Authorizer | None = None
        # The admin password when this runtime generated it (printed once by ``python -m local``).
        self.generated_admin_password: str | None = None

    # --- lifecycle ---------------------------------------------------------------------------
    def start(self) -> LocalRuntime:
        before = dict(os.environ)
        self._configure_environment()
        self._ensure_resources()
        if self.port == 0:
            self.port = free_port()
        # Looked up per request: tools and tests wrap ``invoke`` to count invocations.
        self._http = serve(self.host, self.port, lambda *request: self.invoke(*request))
        threading.Thread(target=self._http.serve_forever, daemon=True, name="local-http").start()
        # Async: the stream is polled; sync: deferred run writes are flushed once idle (the mode may change later).
        self._poller = threading.Thread(target=self._poll_forever, daemon=True, name="stream-poller")
        self._poller.start()
        if self.webhooks is not None:
            self.webhooks.start()
        if self.deferrals is not None:
            self.deferrals.start(lambda: self.indexer_mode != "paused")
        if self.jobs is not None:
            self.jobs.start(self.url)
            # The schedule submits jobs: it runs where a jobs queue does.
            self.monitor = LocalMonitor(self.handler_for)
            if self.monitor_schedule:
                self.monitor.start()
        # What this runtime put in the process environment (queue URLs, its own URL...), undone when it stops: a
        # runtime started earlier in the same process (the test session's) gets its own settings back.
        self._environment_set = {name: before.get(name) for name in {*before, *os.environ} if before.get(name) != os.environ.get(name)}
        return self

    def stop(self) -> None:
        self._stopping.set()
        if self.webhooks is not None:
            self.webhooks.stop()
        if self.deferrals is not None:
            self.deferrals.stop()
        if self.jobs is not None:
            self.jobs.stop()
        if self.monitor is not None:
            self.monitor.stop()
        if self._http:
            self._http.shutdown()
            self._http.server_close()
        if self.s3:
            self.s3.stop()
        if self.dynamodb:
            self.dynamodb.stop()
        for name, value in self._environment_set.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        job_queue.reset_client()

    @property
    def indexer_mode(self) -> str:
        return self._indexer_mode

    @indexer_mode.setter
    def indexer_mode(self, mode: str) -> None:
        # Leaving sync delivers the deferred writes first: they were answered on the promise of sync mode.
        if self._indexer_mode == "sync" and mode != "sync":
            self._barrier.clear()
        self._indexer_mode = mode

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def dead_letters(self) -> Sequence[dict[str, Any]]:
        return self.follower.dead_letters if self.follower else []

    def _configure_environment(self) -> None:
        engine.aws_environment(REGION)
        os.environ.setdefault("POWERTOOLS_TRACE_DISABLED", "true")
        os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
        os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")
        if not os.environ.get("UI_STATIC_DIR"):
            # The ui function reads the wheel's UI build in place (deployed: the copy staged to S3).
            os.environ["UI_STATIC_DIR"] = str(static_files.wheel_build_dir())
        if not os.environ.get("GATEWAY_MODEL_CATALOG"):
            # The gateway function's model catalog, made from the installed wheel once per mlflow version
            # (deployed: the same file, staged into the function's asset at synth).
            os.environ["GATEWAY_MODEL_CATALOG"] = str(gateway_catalog.staged_catalog())
        if not os.environ.get("GATEWAY_MODEL_PRICES"):
            # The runtime's price table (deployed: staged into its asset at synth).
            os.environ["GATEWAY_MODEL_PRICES"] = str(gateway_catalog.staged_prices())
        os.environ["TABLE_NAME"] = self.table_name
        os.environ["AUTHORIZATION"] = self.authorization
        os.environ["BUCKET_NAME"] = self.bucket_name
        if not os.environ.get("DYNAMODB_ENDPOINT_URL"):
            self.dynamodb = DynamoDBLocal(db_path=os.environ.get("DYNAMODB_LOCAL_DB_PATH") or None).start()
            os.environ["DYNAMODB_ENDPOINT_URL"] = self.dynamodb.endpoint
        if not os.environ.get("S3_ENDPOINT_URL"):
            self.s3 = MotoS3(int(os.environ.get("MOTO_PORT", "0")) or None).start()
            os.environ["S3_ENDPOINT_URL"] = self.s3.endpoint
        elif not (os.environ.get("SQS_ENDPOINT_URL") and os.environ.get("KMS_ENDPOINT_URL")):
            # An external S3 endpoint holds the artifacts only: the queues (jobs, webhooks), the event bus and the
            # gateway's secrets key still live in an embedded moto server, or jobs and webhooks would not run.
            self.s3 = MotoS3(int(os.environ.get("MOTO_PORT", "0")) or None).start()
        from serverless_mlflow.storage import s3, table

        iam.install()
        writes.install()
        siblings.install_local(self.invoke_function)
        table.reset_client()
        s3.reset_clients()

    def _ensure_resources(self) -> None:
        import boto3

        endpoint = os.environ["DYNAMODB_ENDPOINT_URL"]
        dynamodb = boto3.client("dynamodb", endpoint_url=endpoint)
        stream_arn = engine.ensure_table(dynamodb, schema.table_definition(self.table_name), schema.TTL_ATTRIBUTE)
        if stream_arn:
            checkpoints = Path(os.environ.get("STREAM_CHECKPOINT_DIR") or DEFAULT_CHECKPOINT_DIR)
            # An in-memory engine forgets its tables on exit: a checkpoint of it would never be read again.
            keep = self.dynamodb is None or self.dynamodb.db_path is not None
            self.follower = StreamFollower(
                boto3.client("dynamodbstreams", endpoint_url=endpoint),
                stream_arn,
                self._invoke_indexer,
                checkpoints if keep else None,
                keep=needs_indexing,
                # DynamoDB Local answers a GetRecords with every record there is up to its Limit (checked by
                # tests/local/test_stream_follower.py): a short page means caught up, no empty page is asked.
                complete_pages=True,
                # Sync: every write waits for its records, so the open invocations date what is unread.
                written_since=self._pending_writes.earliest_write if self.indexer_mode == "sync" else None,
            )
            # SQS and EventBridge: the embedded moto server, or the one SQS_ENDPOINT_URL names (a runtime on
            # another runtime's engines).
            sqs_endpoint = self.s3.endpoint if self.s3 else os.environ["SQS_ENDPOINT_URL"]
            if sqs_endpoint:
                # Registry events to webhooks and EventBridge: a second reader of the stream, as deployed.
                self.webhooks = LocalWebhooks(self.handler_for, sqs_endpoint, self.table_name)
                self.webhooks.setup(boto3.client("dynamodbstreams", endpoint_url=endpoint), stream_arn, checkpoints if keep else None)
                # Young traces in progress, aggregated after a delay: the indexer's second event source, as deployed.
                self.deferrals = LocalDeferrals(sqs_endpoint, self.table_name, self._invoke_indexer_with)
                self.deferrals.setup()
                # Server-side jobs: their queue and the job worker reading it.
                self.jobs = LocalJobs(self.handler_for, sqs_endpoint, self.table_name)
                self.jobs.setup()
        engine.ensure_bucket(boto3.client("s3", endpoint_url=os.environ["S3_ENDPOINT_URL"]), self.bucket_name)
        self._ensure_secrets_key()
        bootstrap.ensure_bootstrap_items()
        if self.authorization == "basic":
            self.authorizer = Authorizer()
            # The job-token key (deployed: the stack's generated secret): random per runtime start, so a token
            # outlives neither the runtime nor its jobs' queue.
            os.environ.setdefault("JOB_TOKEN_KEY", secrets.token_hex(32))
            self._ensure_admin()
        self.drain_stream()

    def _ensure_secrets_key(self) -> None:
        """The gateway's secrets key: moto's KMS on the embedded moto server (the stack's kms.Key when deployed)."""
        import boto3

        if not os.environ.get("KMS_ENDPOINT_URL"):
            if self.s3 is None:
                return  # external S3 endpoint: KMS_ENDPOINT_URL / GATEWAY_KMS_KEY_ID come from the environment
            os.environ["KMS_ENDPOINT_URL"] = self.s3.endpoint
        if not os.environ.get("GATEWAY_KMS_KEY_ID"):
            os.environ["GATEWAY_KMS_KEY_ID"] = engine.create_kms_key(boto3.client("kms", endpoint_url=os.environ["KMS_ENDPOINT_URL"]))

    def _ensure_admin(self) -> None:
        """The first admin, as the stack's bootstrap creates it from its secret: never a fixed password."""
        from serverless_mlflow.auth import passwords

        username = os.environ.get("MLFLOW_AUTH_ADMIN_USERNAME") or "admin"
        password = os.environ.get("MLFLOW_AUTH_ADMIN_PASSWORD")
        if not password:
            password = passwords.generate_password()
        if bootstrap.ensure_admin(username, password) and not os.environ.get("MLFLOW_AUTH_ADMIN_PASSWORD"):
            self.generated_admin_password = password

    # --- HTTP -> handler ----------------------------------------------------------------------
    def handler_for(self, feature: str) -> Any:
        if feature not in self._handlers:
            self._handlers[feature] = importlib.import_module(f"{feature}.handler").lambda_handler
        return self._handlers[feature]

    def invoke(self, method: str, raw_path: str, query: str, headers: dict[str, str], body: bytes) -> dict[str, Any]:
        # API Gateway's choice among the deployed routes (ajax groups are greedy routes; the function maps them).
        matched = http_api.match_gateway(method, raw_path)
        if matched:
            route, path_params = matched
            feature, route_key = route.feature, route.route_key
        else:
            feature, route_key, path_params = routes.DEFAULT_FEATURE, "$default", {}
        event = api_gateway_event(method, raw_path, query, headers, body, route_key, path_params, self.host)
        if self.authorizer is not None and not (matched and matched[0].public):
            context = self.authorizer.context_for(headers, route_key)
            if context is None:
                return UNAUTHORIZED
            event["requestContext"]["authorizer"] = {"lambda": context}
        if feature == STREAMING_FEATURE:
            return self._invoke_streaming(event)

        def run() -> dict[str, Any]:
            return invoke_api_function(self.handler_for(feature), feature, event)

        return self._recorded(feature, run, deferrable=defers(method, raw_path))

    def _recorded(self, feature: str, run: Callable[[], dict[str, Any]], deferrable: bool = False) -> dict[str, Any]:
        """One invocation of a function with its role, its writes followed to the indexer and webhooks."""
        if self.indexer_mode == "sync" and not deferrable:
            self._barrier.clear()
        with iam.acting_as(feature), writes.recording() as invocation:
            self._pending_writes.open(invocation)
            try:
                response = run()
            finally:
                if not (invocation.reaches_indexer and self.indexer_mode == "sync"):
                    # Its records (if any) are read by a later drain or poll: dated by the last caught-up read.
                    self._pending_writes.close(invocation)
        if invocation.reaches_indexer and self.indexer_mode == "sync":
            if deferrable:
                self._barrier.defer(invocation)
            else:
                try:
                    self._catch_up_quietly()
                finally:
                    self._pending_writes.close(invocation)
        if invocation.registry_events and self.webhooks is not None:
            self.webhooks.wake()
        return response

    def _invoke_streaming(self, event: dict[str, Any]) -> dict[str, Any]:
        """``/gateway/...`` as the runtime's function URL serves it (RESPONSE_STREAM): a streamed answer is
        written out as it comes (``local/http_server.py``), a whole one like any response. The function's role
        (IAM) applies while the stream is produced, too."""
        from gateway_runtime import handler as runtime_handler

        with iam.acting_as(STREAMING_FEATURE):
            answer = runtime_handler.serve(runtime_handler.call_from_event(event))
        if answer.stream is None:
            return {"statusCode": answer.status, "headers": answer.headers, "body": answer.body.decode("utf-8")}
        return {"statusCode": answer.status, "headers": answer.headers, "stream": self._as_function(STREAMING_FEATURE, answer.stream)}

    @staticmethod
    def _as_function(feature: str, chunks: Any) -> Any:
        while True:
            with iam.acting_as(feature):
                chunk = next(chunks, None)
            if chunk is None:
                return
            yield chunk

    def invoke_function(self, feature: str, event: dict[str, Any], wait: bool) -> dict[str, Any] | None:
        """Another function's invocation by a function (``serverless_mlflow.http.siblings``): synchronous, or queued
        on a worker thread like Lambda's asynchronous invocation."""

        def run() -> dict[str, Any]:
            return self._recorded(feature, lambda: invoke_api_function(self.handler_for(feature), feature, event))

        if wait:
            return run()
        self._async_invocations.submit(run)
        return None

    def wait_for_async_invocations(self) -> None:
        """Tests: until every queued asynchronous invocation has run."""
        done = self._async_invocations.submit(lambda: None)
        done.result()

    # --- stream -> indexer ----------------------------------------------------------------------
    def drain_stream(self) -> int:
        """Feed every pending stream record to the indexer, then wait for the traces it deferred (async mode:
        up to the deferral delay; ``local/deferrals.py``); returns how many stream records were delivered."""
        if self.indexer_mode == "paused" or self.follower is None:
            return 0
        delivered = self.follower.drain()
        if self.deferrals is not None:
            self.deferrals.settle()
        return delivered

    def _drain_quietly(self) -> None:
        # Deployed, indexing is asynchronous and never fails the client's request: same here. The deferred
        # traces come due on their own (the deferral poller): a poll does not wait for them.
        if self.indexer_mode == "paused" or self.follower is None:
            return
        try:
            self.follower.drain()
        except Exception:
            log.exception("stream drain failed; it is retried on the next write or poll")

    def _catch_up_quietly(self) -> None:
        """A sync write's wait: until every record written before it is delivered (a drain that another
        writer started after this write finished counts), never failing the request."""
        if self.indexer_mode == "paused" or self.follower is None:
            return
        try:
            self.follower.catch_up()
        except Exception:
            log.exception("stream drain failed; it is retried on the next write or poll")

    def _invoke_indexer(self, records: list[dict[str, Any]]) -> dict[str, Any] | None:
        return self._invoke_indexer_with({"Records": records})

    def _invoke_indexer_with(self, event: dict[str, Any]) -> dict[str, Any] | None:
        """The indexer with a stream batch or deferral messages; the deferral delay is this mode's (sync: 0)."""
        if self.deferrals is not None:
            os.environ[trace_deferral.DELAY] = str(self.deferrals.delay_for(self.indexer_mode))
        with iam.acting_as("indexer"):
            return self.handler_for("indexer")(event, LambdaContext("indexer"))

    def _poll_forever(self) -> None:
        while not self._stopping.wait(POLL_SECONDS):
            if self.indexer_mode == "async":
                self._drain_quietly()
            elif self.indexer_mode == "sync" and self._barrier.idle_for(POLL_SECONDS):
                self._barrier.clear()
            self._write_status()

    def _write_status(self) -> None:
        """The stream follower's status as JSON in ``LOCAL_INDEXER_STATUS_FILE`` (if set), after each poll: how a
        benchmark driving ``python -m local`` from outside knows the indexer's backlog is empty (its
        ``idle_since`` passed the last write) and that nothing was dead-lettered."""
        path = os.environ.get("LOCAL_INDEXER_STATUS_FILE")
        if not path or self.follower is None:
            return
        import json

        temporary = Path(f"{path}.tmp")
        try:
            deferred = self.deferrals.pending() if self.deferrals is not None else 0
        except Exception:  # unknown this time (a status reader waits for the next poll's)
            deferred = -1
        temporary.write_text(json.dumps({**self.follower.status(), "mode": self.indexer_mode, "deferred_pending": deferred}))
        temporary.replace(path)
