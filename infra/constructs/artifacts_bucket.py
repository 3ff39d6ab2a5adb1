"""The S3 artifact bucket (plus the bucket that receives its server access logs).

Clients move artifact bytes directly to and from S3 through presigned URLs (single PUT/GET and
multipart parts), so CORS exposes ``ETag`` (needed to complete a multipart upload from a browser).
"""

from __future__ import annotations

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_s3 as s3
from constructs import Construct

ACCESS_LOG_EXPIRY = Duration.days(90)


class ArtifactsBucket(Construct):
    def __init__(self, scope: Construct, construct_id: str) -> None:
        super().__init__(scope, construct_id)
        # Server access logs need a target bucket with S3-managed keys (log delivery cannot use SSE-KMS).
        self.access_logs = s3.Bucket(
            self,
            "AccessLogs",
            encryption=s3.BucketEncryption.S3_MANAGED,
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            enforce_ssl=True,
            object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
            lifecycle_rules=[s3.LifecycleRule(id="expire-access-logs", expiration=ACCESS_LOG_EXPIRY)],
            removal_policy=RemovalPolicy.RETAIN,
        )
        self.bucket = s3.Bucket(
            self,
            "Bucket",
            encryption=s3.BucketEncryption.S3_MANAGED,
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            enforce_ssl=True,
            object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
            server_access_logs_bucket=self.access_logs,
            server_access_logs_prefix="artifacts/",
            lifecycle_rules=[
                # Parts of an upload the client never completed or aborted cost storage forever otherwise.
                s3.LifecycleRule(id="abort-incomplete-multipart-uploads", abort_incomplete_multipart_upload_after=Duration.days(1)),
            ],
            cors=[
                s3.CorsRule(
                    allowed_methods=[s3.HttpMethods.GET, s3.HttpMethods.PUT, s3.HttpMethods.HEAD],
                    allowed_origins=["*"],
                    allowed_headers=["*"],
                    exposed_headers=["ETag"],
                    max_age=3000,
                )
            ],
            # Artifacts (models, files) outlive the stack, like the table.
            removal_policy=RemovalPolicy.RETAIN,
        )
