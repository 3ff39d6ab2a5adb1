"""The S3 artifact bucket (plus the bucket that receives its server access logs).

Clients move artifact bytes directly to and from S3 through presigned URLs. The Python client needs no
CORS; a browser does, for what the web UI reads from S3 after a redirect (artifact previews, static
files): so CORS allows GET/HEAD from the API's own origin (plus any origins named in context) and
nothing else. Versioning keeps a deleted or overwritten artifact recoverable for
``noncurrent_version_days``; delete markers left behind are cleaned up.
"""

from __future__ import annotations

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_s3 as s3
from constructs import Construct

ACCESS_LOG_EXPIRY = Duration.days(90)


def hardened(**props: object) -> dict[str, object]:
    """What every bucket of the stack shares: S3-managed keys (server access logs cannot be delivered to an SSE-KMS
    bucket), no public access, TLS only, no ACLs. ``props`` adds or overrides per bucket."""
    return {
        "encryption": s3.BucketEncryption.S3_MANAGED,
        "block_public_access": s3.BlockPublicAccess.BLOCK_ALL,
        "enforce_ssl": True,
        "object_ownership": s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
        **props,
    }


class ArtifactsBucket(Construct):
    def __init__(self, scope: Construct, construct_id: str, *, noncurrent_version_days: int = 30) -> None:
        super().__init__(scope, construct_id)
        # Server access logs need a target bucket with S3-managed keys (log delivery cannot use SSE-KMS).
        self.access_logs = s3.Bucket(
            self,
            "AccessLogs",
            **hardened(
                lifecycle_rules=[s3.LifecycleRule(id="expire-access-logs", expiration=ACCESS_LOG_EXPIRY)],
                removal_policy=RemovalPolicy.RETAIN,
            ),
        )

        self.bucket = s3.Bucket(
            self,
            "Bucket",
            **hardened(
                server_access_logs_bucket=self.access_logs,
                server_access_logs_prefix="artifacts/",
                versioned=True,
                lifecycle_rules=[
                    # Parts of an upload the client never completed or aborted cost storage forever otherwise.
                    s3.LifecycleRule(id="abort-incomplete-multipart-uploads", abort_incomplete_multipart_upload_after=Duration.days(1)),
                    # A deleted experiment's artifacts stay recoverable this long, then stop costing storage.
                    s3.LifecycleRule(
                        id="expire-noncurrent-versions",
                        noncurrent_version_expiration=Duration.days(noncurrent_version_days),
                        expired_object_delete_marker=True,
                    ),
                ],
                # Artifacts (models, files) outlive the stack, like the table.
                removal_policy=RemovalPolicy.RETAIN,
            ),
        )

    def allow_browser_reads(self, origins: list[str]) -> None:
        """CORS for the web UI: GET/HEAD of presigned URLs from these origins only."""
        self.bucket.add_cors_rule(
            allowed_methods=[s3.HttpMethods.GET, s3.HttpMethods.HEAD],
            allowed_origins=origins,
            allowed_headers=["*"],
            exposed_headers=["ETag", "Content-Length", "Content-Type"],
            max_age=3000,
        )
