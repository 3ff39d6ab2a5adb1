"""``authorization=basic``: the API Gateway Lambda authorizer and the first admin's Secrets Manager secret.

The secret holds ``{"username": <admin_username>, "password": <generated>}``; CloudFormation generates the
password (no default ever exists) and the bootstrap custom resource creates the admin user from it.
"""

from __future__ import annotations

import json

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_secretsmanager as secretsmanager
from constructs import Construct

from infra.constructs.functions import ServerlessFunction, SharedResources, feature_code


class BasicAuth(Construct):
    def __init__(self, scope: Construct, construct_id: str, *, shared: SharedResources) -> None:
        super().__init__(scope, construct_id)
        self.authorizer = ServerlessFunction(
            self,
            "Authorizer",
            name="authorizer",
            code=feature_code("authorizer"),
            handler="authorizer.handler.lambda_handler",
            shared=shared,
            # scrypt needs 16 MB and runs faster with more CPU; answers are cached by API Gateway.
            memory_size=512,
            timeout=Duration.seconds(10),
            description="mlflow-serverless basic-auth Lambda authorizer",
            reserved_concurrency=shared.config.api_function_concurrency,
        )
        self.admin_secret = secretsmanager.Secret(
            self,
            "AdminSecret",
            description="mlflow-serverless first admin (basic auth): user name and generated password",
            generate_secret_string=secretsmanager.SecretStringGenerator(
                secret_string_template=json.dumps({"username": shared.config.admin_username}),
                generate_string_key="password",
                exclude_punctuation=True,
                password_length=32,
            ),
            # The admin user outlives the stack with the retained table; so does the password that opens it.
            removal_policy=RemovalPolicy.RETAIN,
        )


def job_token_key(scope: Construct) -> secretsmanager.Secret:
    """The HMAC key of job tokens (``serverless_mlflow.auth.job_tokens``): 64 random characters CloudFormation
    generates, never in the template; read only by the functions whose Access declares ``job_token_key``. Replacing
    it only invalidates the tokens of jobs running then, so it is not retained."""
    return secretsmanager.Secret(
        scope,
        "JobTokenKey",
        description="mlflow-serverless job-token HMAC key (basic auth: jobs call the API as their creator)",
        generate_secret_string=secretsmanager.SecretStringGenerator(password_length=64, exclude_punctuation=True),
        removal_policy=RemovalPolicy.DESTROY,
    )
