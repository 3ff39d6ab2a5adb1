"""Deploy-time bootstrap: a custom resource that writes ``bootstrap.bootstrap_items()`` conditionally."""

from __future__ import annotations

import hashlib
import json

from aws_cdk import CustomResource, Duration
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_secretsmanager as secretsmanager
from constructs import Construct

from infra import HANDLERS_DIR
from infra.constructs.functions import ServerlessFunction, SharedResources
from serverless_mlflow.http.bootstrap import bootstrap_items
from serverless_mlflow.storage import schema


def bootstrap_fingerprint() -> str:
    """Changes when the set or shape of the bootstrap items changes, which re-runs the resource on deploy.

    Values are left out on purpose: they hold the write time, and the template must be the same on every
    synth (the items get their timestamps when the function runs, at deploy time).
    """
    shapes = sorted((item[schema.PK], item[schema.SK], item.get(schema.ENTITY_TYPE, ""), sorted(item)) for item in bootstrap_items())
    return hashlib.sha256(json.dumps(shapes).encode()).hexdigest()[:16]


class Bootstrap(Construct):
    def __init__(
        self, scope: Construct, construct_id: str, *, shared: SharedResources, admin_secret: secretsmanager.ISecret | None = None
    ) -> None:
        super().__init__(scope, construct_id)
        # basic auth: the function reads the first admin's password from the secret (and nothing else).
        environment = {"ADMIN_SECRET_ARN": admin_secret.secret_arn} if admin_secret else None
        self.function = ServerlessFunction(
            self,
            "Writer",
            name="bootstrap",
            code=lambda_.Code.from_asset(str(HANDLERS_DIR / "bootstrap"), exclude=["__pycache__", "*.pyc"]),
            handler="bootstrap_resource.handler",
            shared=shared,
            memory_size=256,
            timeout=Duration.seconds(60),
            description="mlflow-serverless deploy-time bootstrap items (Default experiment, first admin)",
            environment=environment,
        )
        if admin_secret is not None:
            admin_secret.grant_read(self.function.role)
        self.resource = CustomResource(
            self,
            "Items",
            service_token=self.function.alias.function_arn,
            resource_type="Custom::MlflowBootstrapItems",
            properties={
                "TableName": shared.table.table_name,
                "Fingerprint": bootstrap_fingerprint(),
                "Keys": [f"{item[schema.PK]}|{item[schema.SK]}" for item in bootstrap_items()],
                **({"AdminSecret": admin_secret.secret_arn} if admin_secret else {}),
            },
        )
