"""Least-privilege IAM, declared as data: what each function may do, in one place.

Every feature of ``routes.features()`` (plus the stream indexer and the deploy-time bootstrap) must have
an entry; synth fails on a feature without one, so a new feature cannot silently inherit broad rights.
``tests/infra`` checks that a feature whose code imports ``serverless_mlflow.table``/``.s3`` (directly or
through the layer) is declared with table/bucket access, since IAM is not enforced by the local runtime.
Table actions apply to the table and its indexes (``<table-arn>/index/*``, the only wildcard).
``TransactWriteItems`` needs no action of its own: DynamoDB authorizes each operation in the transaction
as PutItem/UpdateItem/DeleteItem/ConditionCheckItem.
"""

from __future__ import annotations

from dataclasses import dataclass

TABLE_READ: tuple[str, ...] = ("dynamodb:GetItem", "dynamodb:Query", "dynamodb:BatchGetItem")
TABLE_WRITE: tuple[str, ...] = (
    "dynamodb:PutItem",
    "dynamodb:UpdateItem",
    "dynamodb:DeleteItem",
    "dynamodb:BatchWriteItem",
    "dynamodb:ConditionCheckItem",
)
# Object-level actions on the artifact bucket's objects. CreateMultipartUpload, UploadPart and
# CompleteMultipartUpload are authorized as s3:PutObject; aborting and listing parts have their own actions.
BUCKET_OBJECT_ACTIONS: tuple[str, ...] = (
    "s3:GetObject",
    "s3:PutObject",
    "s3:DeleteObject",
    "s3:AbortMultipartUpload",
    "s3:ListMultipartUploadParts",
)
# list_artifacts lists a prefix: ListObjectsV2 is authorized on the bucket ARN, not on objects.
BUCKET_LIST_ACTIONS: tuple[str, ...] = ("s3:ListBucket",)


@dataclass(frozen=True)
class Access:
    table_read: bool = True
    table_write: bool = False
    # PutItem only (the bootstrap custom resource writes a handful of items, conditionally).
    table_put_only: bool = False
    bucket: bool = False
    # Stream read is granted by the DynamoEventSource itself (see constructs/indexer.py).
    stream: bool = False

    @property
    def table_actions(self) -> tuple[str, ...]:
        if self.table_put_only:
            return ("dynamodb:PutItem",)
        actions = TABLE_READ if self.table_read else ()
        return actions + (TABLE_WRITE if self.table_write else ())


NO_TABLE = Access(table_read=False)
READ_ONLY = Access()
READ_WRITE = Access(table_write=True)

ACCESS: dict[str, Access] = {
    # health/version/server-info and ENDPOINT_NOT_FOUND: never touches the table.
    "meta": NO_TABLE,
    "experiments": READ_WRITE,
    "runs": READ_WRITE,
    "logged_models": READ_WRITE,
    "registry": READ_WRITE,
    # The only function with S3 rights: presigned URLs are signed with its role, so the role must hold
    # the object actions the client then performs directly against S3. Reads runs (artifact roots).
    "artifacts": Access(bucket=True),
    # Derives RANK/FTS items from stream records: reads source items, writes derived ones.
    "indexer": Access(table_write=True, stream=True),
    # Deploy-time custom resource writing the Default experiment with attribute_not_exists(pk).
    "bootstrap": Access(table_read=False, table_put_only=True),
}


def access_for(name: str) -> Access:
    try:
        return ACCESS[name]
    except KeyError:
        raise KeyError(
            f"function {name!r} has no IAM declaration: add it to infra/permissions.py ACCESS "
            "(read-only, read-write, bucket) before it can be deployed"
        ) from None
