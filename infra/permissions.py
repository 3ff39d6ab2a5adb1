"""Least-privilege IAM, declared as data: exactly what each function may do, in one place.

Every feature of ``routes.features()`` (plus the stream indexer and the deploy-time bootstrap) must have
an entry; synth fails on a function without one, so a new feature cannot silently inherit broad rights.
Each entry names the DynamoDB actions the function's code performs and the S3 key prefixes it touches,
nothing more. The local runtime enforces the same declarations (``local/iam.py``): a test that makes a
function call an undeclared action fails with the ``AccessDeniedException`` the deployed role would raise,
so the declarations are checked by every end-to-end test, not only by reading the code.

Table actions apply to the table and, when ``Query`` is among them, its indexes (``<table-arn>/index/*``,
the only wildcard). ``TransactWriteItems`` needs no action of its own: DynamoDB authorizes each
operation of a transaction as PutItem/UpdateItem/DeleteItem/ConditionCheckItem.
"""

from __future__ import annotations

from dataclasses import dataclass

from serverless_mlflow.http.static_files import UI_PREFIX
from serverless_mlflow.store.artifact_locations import DEFAULT_PREFIX as ARTIFACTS_PREFIX

TABLE_READ: tuple[str, ...] = ("GetItem", "Query", "BatchGetItem")
TABLE_WRITE: tuple[str, ...] = ("PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "ConditionCheckItem")
# S3 object actions: CreateMultipartUpload, UploadPart and CompleteMultipartUpload are authorized as
# s3:PutObject, HeadObject as s3:GetObject, DeleteObjects per key as s3:DeleteObject.


@dataclass(frozen=True)
class Access:
    # DynamoDB actions (without the "dynamodb:" prefix) on the table.
    table: tuple[str, ...] = ()
    # When set, those actions only on items whose partition key matches one of these patterns (IAM's
    # ``dynamodb:LeadingKeys`` condition, ``*`` wildcards).
    table_leading_keys: tuple[str, ...] = ()
    # When set, the write actions only on items whose partition key matches one of these (reads stay unconditioned).
    write_leading_keys: tuple[str, ...] = ()
    # S3 object actions, allowed on keys under ``prefixes`` of the stack's bucket only.
    objects: tuple[str, ...] = ()
    prefixes: tuple[str, ...] = ()
    # s3:ListBucket, conditioned on the listed prefix being under ``prefixes``.
    list_objects: bool = False
    # Actions on the stack's gateway-secrets KMS key (that key only; granted through the key's policy).
    kms: tuple[str, ...] = ()
    # Stream read is granted by the DynamoEventSource itself (see constructs/indexer.py).
    stream: bool = False
    # Which of the stack's buckets ``objects``/``prefixes`` apply to: "artifacts" or "web_ui" (static files).
    bucket_name: str = "artifacts"
    # SQS actions on the webhook delivery queue, and on its dead-letter queue (receiving and deleting are the
    # SQS event source mapping's, granted with it).
    webhook_queue: tuple[str, ...] = ()
    webhook_dead_letters: tuple[str, ...] = ()
    # events:PutEvents on the stack's registry event bus.
    put_events: bool = False
    # SQS actions on the jobs queue (receiving and deleting are the worker's event source mapping's).
    job_queue: tuple[str, ...] = ()
    # SQS actions on the indexer's trace deferral queue (receiving and deleting are its event source mapping's).
    trace_deferrals: tuple[str, ...] = ()
    # secretsmanager:GetSecretValue on the job-token key (basic auth; ``serverless_mlflow.auth.job_tokens``): the
    # functions that mint job tokens or check credentials that may be one.
    job_token_key: bool = False

    @property
    def table_actions(self) -> tuple[str, ...]:
        return tuple(f"dynamodb:{action}" for action in self.table)

    @property
    def table_read(self) -> bool:
        return bool(self.table)

    @property
    def bucket(self) -> bool:
        return bool(self.objects or self.list_objects)

    def object_resources(self) -> tuple[str, ...]:
        """Key patterns for the bucket's object ARN (``<bucket-arn>/<pattern>``)."""
        return tuple(f"{prefix}*" for prefix in self.prefixes)

    def list_conditions(self) -> tuple[str, ...]:
        """``s3:prefix`` values a listing may ask for (the prefix itself and anything below it)."""
        return tuple(value for prefix in self.prefixes for value in (prefix, f"{prefix}*"))

    @property
    def write_actions(self) -> tuple[str, ...]:
        return tuple(action for action in self.table_actions if action.removeprefix("dynamodb:") in WRITE_ACTIONS)

    def allows_item(self, partition_key: str) -> bool:
        return not self.table_leading_keys or _matches(partition_key, self.table_leading_keys)

    def allows_write(self, partition_key: str) -> bool:
        return not self.write_leading_keys or _matches(partition_key, self.write_leading_keys)

    def allows_object(self, action: str, key: str) -> bool:
        # IAM's resource match: the prefix's ``*`` wildcards match any characters, ``/`` included.
        return action in self.objects and _matches(key, self.object_resources())

    def allows_list(self, prefix: str) -> bool:
        return self.list_objects and any(prefix.startswith(allowed) for allowed in self.prefixes)


def _matches(value: str, patterns: tuple[str, ...]) -> bool:
    import fnmatch

    return any(fnmatch.fnmatchcase(value, pattern) for pattern in patterns)


# What writes an item: each is authorized with the item's partition key (``dynamodb:LeadingKeys``) and, for puts and
# updates, the attribute names it sets (``dynamodb:Attributes``); a transaction's operations count as these.
WRITE_ACTIONS = ("PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem")


@dataclass(frozen=True)
class Protected:
    """Data only its owners may write: every other role holding table writes gets an explicit Deny on it."""

    owners: tuple[str, ...]
    # Partition keys (``dynamodb:LeadingKeys`` patterns) no other role may write in.
    leading_keys: tuple[str, ...] = ()
    # Attribute names no other role may set on any item (``dynamodb:Attributes``).
    attributes: tuple[str, ...] = ()


ARTIFACTS = f"{ARTIFACTS_PREFIX}/"
# The partitions of basic auth's users (schema entity "user": USER#<username>).
USER_ITEMS = "USER#*"
# Job items (their status and creator revoke a job's token: serverless_mlflow.auth.job_tokens).
JOB_ITEMS = "JOB#*"
# Span payloads over the item limit (functions/traces/ingest.py SPILL_PREFIX).
TRACE_SPANS = "trace-spans/"
# Archived traces' spans (MLflow's traces.pb under <experiment>/traces/<trace id>/artifacts, workspaces too).
TRACE_ARCHIVES = f"{ARTIFACTS}*/traces/tr-*/artifacts/traces.pb"

# Derived from what each function does (``LOCAL_IAM=record`` over the test suite), then enforced locally.
ACCESS: dict[str, Access] = {
    # health/version/server-info and ENDPOINT_NOT_FOUND never touch the table; under basic auth a meta route
    # without a rule is admin-only (fail closed), which reads the caller's user item.
    # Under basic auth it checks credentials sent to server-info, which a job's client sends its job token to.
    "meta": Access(table=("GetItem",), job_token_key=True),
    # BatchGetItem: basic auth reads the caller's user item and grants in one batch (serverless_mlflow.auth).
    "experiments": Access(
        table=("GetItem", "Query", "BatchGetItem", "PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "ConditionCheckItem")
    ),
    # Under the artifact prefix: listing (GraphQL's mlflowListArtifacts) and PutObject (the promptlab run's model
    # files and evaluation table, a few KB written by the function).
    # Prompt-optimization jobs (MLflow 3.18): the job's item and one message on the jobs queue, with the job's token
    # under basic auth.
    "runs": Access(
        table=(*TABLE_READ, *TABLE_WRITE),
        objects=("s3:PutObject",),
        prefixes=(ARTIFACTS,),
        list_objects=True,
        job_queue=("sqs:SendMessage",),
        job_token_key=True,
    ),
    "logged_models": Access(table=("GetItem", "Query", "BatchGetItem", "PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem")),
    # BatchWriteItem: basic auth moves/drops a model's grants on rename/delete.
    "registry": Access(table=(*TABLE_READ, "PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "ConditionCheckItem")),
    # GenAI evaluation datasets and scorers: records in batches and transactions, experiments read for checks.
    "evaluation": Access(table=(*TABLE_READ, *TABLE_WRITE)),
    # Presigned URLs are signed with this role, so it must hold the object actions the client then performs
    # directly against S3 - under the artifact prefix only. Reads runs, experiments and logged models (artifact
    # roots; a logged model is one Query of its items).
    "artifacts": Access(
        table=("GetItem", "Query", "BatchGetItem"),
        objects=("s3:GetObject", "s3:PutObject", "s3:AbortMultipartUpload", "s3:DeleteObject"),
        prefixes=(ARTIFACTS,),
        list_objects=True,
    ),
    # The web UI's static build in its own bucket: read-only, that prefix only; no artifacts. Under basic auth its
    # pages are public, but credentials sent with them are checked (never accepted when wrong): user items only.
    "ui": Access(
        table=("GetItem",), table_leading_keys=(USER_ITEMS,), objects=("s3:GetObject",), prefixes=(UI_PREFIX,), bucket_name="web_ui"
    ),
    # AI gateway configuration: its own partition; secret values are encrypted with the stack's KMS key and
    # never decrypted by the API (only the gateway runtime would need kms:Decrypt).
    "gateway": Access(
        table=("GetItem", "Query", "BatchGetItem", "PutItem", "DeleteItem", "UpdateItem", "BatchWriteItem", "ConditionCheckItem"),
        kms=("kms:Encrypt",),
    ),
    # AI gateway runtime: resolves endpoints (name claim, endpoint items, definitions, secrets), decrypts secret
    # values (the only function that may), reads budget policies and ADDs spend to their windows; under basic auth
    # it reads users and their endpoint grants (credentials off the API's authorizer, USE). Its usage traces
    # go through the traces function (lambda:InvokeFunction on that function only, granted in infra).
    # PutItem: an ALERT budget's exceeded event, put in the table's outbox (the stream delivers it).
    # Its writes only in the budget windows' partitions and the outbox (never the gateway's configuration).
    "gateway_runtime": Access(
        table=("GetItem", "Query", "BatchGetItem", "UpdateItem", "PutItem"), write_leading_keys=("GWB#*", "EVENT#*"), kms=("kms:Decrypt",)
    ),
    # OTLP spans, trace infos, tags, assessments; spilled span payloads under their own prefix only.
    # Archived traces' spans are read back from their archives.
    "traces": Access(
        table=("GetItem", "Query", "BatchGetItem", "PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem"),
        objects=("s3:GetObject", "s3:PutObject", "s3:DeleteObject"),
        prefixes=(TRACE_SPANS, TRACE_ARCHIVES),
    ),
    # Label schemas, review queues (items in their own partitions) and issues: transactions of puts/deletes with
    # their name claims and locators; trace infos read to check the traces a queue is given.
    # issues/invoke (MLflow 3.18): a run and a job item, and one message on the jobs queue with the job's token.
    "review": Access(table=(*TABLE_READ, *TABLE_WRITE), job_queue=("sqs:SendMessage",), job_token_key=True),
    # Derives RANK/FTS items from stream records: batch-reads source items, writes derived ones.
    # GetItem/PutItem/DeleteItem: run summaries are rebuilt with a condition on their revision.
    # A trace's aggregates (metric rollups, content signature) are rebuilt from its spans, spilled ones read from S3;
    # the spilled spans and archives of traces the table's TTL removed are deleted (index/trace_objects.py);
    # an experiment's archival cursor is rewound for infos written into an hour it passed (index/archival_rewinds.py);
    # ConditionCheckItem: none, the rollup transactions condition their puts and deletes themselves.
    "indexer": Access(
        table=("GetItem", "BatchGetItem", "Query", "PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem"),
        objects=("s3:GetObject", "s3:DeleteObject"),
        prefixes=(TRACE_SPANS, TRACE_ARCHIVES),
        stream=True,
        # Young traces in progress, aggregated after a delay (index/trace_deferral.py).
        trace_deferrals=("sqs:SendMessage",),
    ),
    # Basic auth's users, grants and roles (functions/auth): user items, the id counters, grants, their gsi4 listing,
    # roles with their permissions and members (ConditionCheckItem: a permission or member is only added to a role
    # that still exists).
    "auth": Access(table=(*TABLE_READ, *TABLE_WRITE)),
    # The API Gateway Lambda authorizer (basic auth): reads one user item per uncached Authorization header; checks
    # job tokens with the job-token key, and that their job is still live (its item).
    "authorizer": Access(table=("GetItem",), table_leading_keys=(USER_ITEMS, JOB_ITEMS), job_token_key=True),
    # Registry webhooks (admin-only API): their partition; secrets KMS-encrypted on write, decrypted for ``test``.
    "webhooks": Access(
        table=("GetItem", "Query", "BatchGetItem", "PutItem", "UpdateItem", "DeleteItem"), kms=("kms:Encrypt", "kms:Decrypt")
    ),
    # Outbox items from the stream -> EventBridge and one SQS message per subscribed webhook; reads the webhooks
    # and a model's prompt tag.
    "webhook_events": Access(table=("GetItem", "Query"), stream=True, webhook_queue=("sqs:SendMessage",), put_events=True),
    # SQS -> receivers: reads the webhook (secret decrypted) and the event; backs off and dead-letters itself.
    "webhook_delivery": Access(
        table=("GetItem", "Query"),
        kms=("kms:Decrypt",),
        webhook_queue=("sqs:ChangeMessageVisibility",),
        webhook_dead_letters=("sqs:SendMessage",),
    ),
    # The jobs API and the demo routes: job items (conditional status moves), the demo experiment (read, created
    # with its name claim in a transaction: ConditionCheckItem none, PutItem under the transaction) and the
    # experiment id counter; one message per job on the jobs queue, with the job's token (minted with the job-token
    # key) under basic auth; PutItem also writes the caller's MANAGE grant on the demo experiment it creates.
    # The invoke routes read traces, scorers and experiments, and genai/evaluate/invoke creates its evaluation run
    # (a transaction conditioned on the experiment being active: ConditionCheckItem).
    "jobs": Access(
        table=("GetItem", "Query", "BatchGetItem", "PutItem", "UpdateItem", "ConditionCheckItem"),
        job_queue=("sqs:SendMessage",),
        job_token_key=True,
    ),
    # The job worker: claims and finishes job items; hands a job to its next invocation (SendMessage) and backs a
    # retried message off (ChangeMessageVisibility). Its kinds reach the rest of the data through the API, as the
    # job's creator (its message's job token): never the job-token key.
    "job_worker": Access(table=("GetItem", "UpdateItem"), job_queue=("sqs:SendMessage", "sqs:ChangeMessageVisibility")),
    # The monitor (EventBridge Scheduler, every minute): reads the active online scoring configurations (gsi2), the
    # scorers' refs and versions and the experiments' claim items and jobs; claims an experiment (PutItem with a
    # condition) and submits its job (the job item, one message with the job's token minted with the key). Scheduled
    # issue detection: queries the schedules due (gsi2), reads the experiment with its tags and runs, claims an
    # occurrence (a transaction of conditional Puts: the state tag, its collection copy, the schedule's due time).
    # Trace archival (MLflow 3.17, the same tick): walks trace partitions (Query), writes each archive, flips the
    # locator and info in one transaction (UpdateItem), deletes the spans (BatchWriteItem) and spilled payloads, moves
    # its cursor (PutItem) and clears a fulfilled archiveNow tag (DeleteItem); archives and spill objects only.
    "monitor": Access(
        table=("GetItem", "Query", "BatchGetItem", "PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem"),
        objects=("s3:GetObject", "s3:PutObject", "s3:DeleteObject"),
        prefixes=(TRACE_SPANS, TRACE_ARCHIVES),
        job_queue=("sqs:SendMessage",),
        job_token_key=True,
    ),
    # Deploy-time custom resource writing the Default experiment with attribute_not_exists(pk) and, with
    # basic auth, the first admin (user item + user-id counter), whose password it reads from its secret.
    "bootstrap": Access(table=("GetItem", "PutItem", "UpdateItem")),
}


# Per data, who may write it. Users' credentials: the user list and a user's password hash and admin flag (their
# partition also holds grants, which the features that create resources write). Gateway secrets: the gateway
# configuration partitions (secrets, model definitions, endpoints), the gateway API's alone.
PROTECTED: dict[str, Protected] = {
    "user credentials": Protected(owners=("auth", "bootstrap"), leading_keys=("USERLIST",), attributes=("password_hash", "is_admin")),
    # Endpoint bindings live in GWBIND# (evaluation's register_scorer writes them), outside these partitions;
    # evaluation only condition-checks the endpoint here (ConditionCheckItem is not a write).
    "gateway secrets": Protected(owners=("gateway",), leading_keys=("GW#*",)),
}


def protected_from(name: str) -> list[Protected]:
    """The protections that deny ``name``'s role writes (those it does not own, when it may write at all)."""
    if not access_for(name).write_actions:
        return []
    return [protected for protected in PROTECTED.values() if name not in protected.owners]


def write_refused(name: str, partition_keys: list[str], attributes: set[str]) -> bool:
    """Whether ``name``'s role is refused a write naming these partition keys and attribute names."""
    access = access_for(name)
    if not all(access.allows_write(pk) for pk in partition_keys):
        return True
    return any(
        any(_matches(pk, protected.leading_keys) for pk in partition_keys) or attributes & set(protected.attributes)
        for protected in protected_from(name)
    )


def access_for(name: str) -> Access:
    try:
        return ACCESS[name]
    except KeyError:
        raise KeyError(
            f"function {name!r} has no IAM declaration: add it to infra/permissions.py ACCESS "
            "(the DynamoDB actions and S3 prefixes it uses) before it can be deployed"
        ) from None
