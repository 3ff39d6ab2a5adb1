"""The web UI's static files: the mlflow wheel's React build, gzipped at synth, copied to S3 at deploy.

The build comes from the installed mlflow, which must be the version pinned in requirements-dev.txt (the
UI must match the API it talks to); nothing is copied into the repository. Staging is a local, deterministic
gzip of every file (no Docker), cached per mlflow version under ``build/``. A BucketDeployment puts the
files under ``UI_PREFIX`` of a bucket of their own (pruning files of an older build); the ``ui`` function
serves them (see ``functions/ui``). Objects are stored gzipped: the deployment marks them
``Content-Encoding: gzip`` so a direct read of one is decoded correctly too.

A bucket of their own, rather than a prefix of the artifacts bucket: the deployment's custom resource
may delete anything in its destination bucket, and it must not be able to touch users' artifacts.
The bucket holds nothing but a copy of the build, so it goes with the stack.
"""

from __future__ import annotations

import re
from pathlib import Path

from aws_cdk import RemovalPolicy
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_s3_deployment as s3deploy
from constructs import Construct

from infra import ROOT
from infra.constructs.artifacts_bucket import hardened
from serverless_mlflow.http import static_files

STAGING_DIR = ROOT / "build" / "ui-static"
DEV_REQUIREMENTS = ROOT / "requirements-dev.txt"


def pinned_mlflow_version(requirements: Path = DEV_REQUIREMENTS) -> str:
    """The mlflow the project runs (requirements-dev.txt); the gateway catalog is made from it. The UI has its own
    pin, ``static_files.UI_MLFLOW_VERSION``."""
    found = re.search(r"^mlflow==([^\s#;]+)", requirements.read_text(), re.MULTILINE)
    if not found:
        raise RuntimeError(f"{requirements.name} must pin mlflow (mlflow==X)")
    return found.group(1)


def staged_build() -> Path:
    """The gzipped copy of the pinned UI build (static_files.UI_MLFLOW_VERSION, the one pin)."""
    version = static_files.UI_MLFLOW_VERSION
    return static_files.stage(static_files.wheel_build_dir(version), STAGING_DIR / f"mlflow-{version}")


class WebUiFiles(Construct):
    def __init__(self, scope: Construct, construct_id: str, *, access_logs: s3.IBucket, log_retention: logs.RetentionDays) -> None:
        super().__init__(scope, construct_id)
        self.bucket = s3.Bucket(
            self,
            "Bucket",
            **hardened(
                server_access_logs_bucket=access_logs,
                server_access_logs_prefix="web-ui/",
                # Emptied by the deployment on stack deletion (retain_on_delete=False), then deleted.
                removal_policy=RemovalPolicy.DESTROY,
            ),
        )
        self.deployment = s3deploy.BucketDeployment(
            self,
            "StaticFiles",
            sources=[s3deploy.Source.asset(str(staged_build()))],
            destination_bucket=self.bucket,
            destination_key_prefix=static_files.UI_PREFIX,
            content_encoding="gzip",
            prune=True,
            retain_on_delete=False,
            # ~400 files, 8.5 MB: the default 128 MB is slow for the aws-cli sync it runs.
            memory_limit=512,
            log_group=logs.LogGroup(self, "DeploymentLogs", retention=log_retention, removal_policy=RemovalPolicy.DESTROY),
        )
