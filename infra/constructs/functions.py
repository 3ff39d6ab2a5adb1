"""One Lambda function per feature, all on the shared layer, each with its own least-privilege role."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path

from aws_cdk import Duration, RemovalPolicy, Stack
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_destinations as destinations
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_secretsmanager as secretsmanager
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from infra import FUNCTIONS_DIR, gateway_catalog
from infra.config import StackConfig
from infra.constructs.web_ui import pinned_mlflow_version
from infra.permissions import WRITE_ACTIONS, Access, access_for, protected_from

# Newest Python runtime aws-cdk-lib 2.275 offers; the code targets 3.11+ and the layer is pure Python.
RUNTIME = lambda_.Runtime.PYTHON_3_14
ARCHITECTURE = lambda_.Architecture.ARM_64
# HTTP API integrations time out after ~29-30 s: a longer Lambda timeout would only keep working on an
# answer nobody receives.
API_TIMEOUT = Duration.seconds(29)
METRICS_NAMESPACE = "MlflowServerless"
LIVE_ALIAS = "live"


@dataclass(frozen=True)
class SharedResources:
    table: dynamodb.ITable
    bucket: s3.IBucket
    layer: lambda_.ILayerVersion
    config: StackConfig
    # The web UI's static files (only the ui function reads it).
    web_ui_bucket: s3.IBucket | None = None
    # Encrypts AI gateway secret values (functions whose Access declares ``kms`` actions).
    secrets_key: kms.IKey | None = None
    # Basic auth: the job-token HMAC key (functions whose Access declares ``job_token_key``).
    job_token_key: secretsmanager.ISecret | None = None

    def bucket_for(self, access: Access) -> s3.IBucket:
        if access.bucket_name == "web_ui":
            if self.web_ui_bucket is None:
                raise ValueError("a function declares access to the web UI bucket, but the stack has none")
            return self.web_ui_bucket
        return self.bucket


def feature_code(feature: str, functions_dir: Path = FUNCTIONS_DIR) -> lambda_.Code:
    """``functions/`` restricted to one feature's package, so the handler is ``<feature>.handler...``.

    The feature's files alone decide the asset hash: editing ``runs`` does not redeploy ``registry``.
    A feature whose folder does not exist yet still synthesizes (with an empty package directory).
    """
    return lambda_.Code.from_asset(
        str(functions_dir),
        exclude=["*", f"!{feature}", f"!{feature}/**", "__pycache__", "*.pyc", "tests", "conftest.py"],
    )


def _check_pinned_mlflow() -> None:
    pinned, installed = pinned_mlflow_version(), version("mlflow")
    if installed != pinned:
        raise RuntimeError(f"mlflow {installed} is installed but {pinned} is pinned: run `make venv` before synth")


def gateway_code() -> lambda_.Code:
    """The gateway package with MLflow's model catalog beside it, made from the pinned wheel at synth
    (``infra/gateway_catalog.py``): the catalog ships with this function alone, not in the shared layer."""
    _check_pinned_mlflow()
    return lambda_.Code.from_asset(str(gateway_catalog.staged_function()))


def gateway_runtime_code() -> lambda_.Code:
    """The gateway runtime with the price table of MLflow's model catalog beside it (costs, hence budgets)."""
    _check_pinned_mlflow()
    return lambda_.Code.from_asset(str(gateway_catalog.staged_runtime()))


# Features whose asset carries build-time data beside their package.
STAGED_CODE = {gateway_catalog.GATEWAY_PACKAGE: gateway_code, gateway_catalog.RUNTIME_PACKAGE: gateway_runtime_code}


def grant_table(
    role: iam.IGrantable,
    table: dynamodb.ITable,
    actions: tuple[str, ...],
    leading_keys: tuple[str, ...] = (),
    write_leading_keys: tuple[str, ...] = (),
) -> None:
    if not actions:
        return
    resources = [table.table_arn]
    if "dynamodb:Query" in actions:
        # Queries may name an index: this table's index ARNs are the only wildcard the roles carry.
        resources.append(index_arns(table))
    writes = [action for action in actions if write_leading_keys and action.removeprefix("dynamodb:") in WRITE_ACTIONS]
    unconditioned = [action for action in actions if action not in writes]
    if not leading_keys:
        iam.Grant.add_to_principal(grantee=role, actions=unconditioned, resource_arns=resources)
    else:
        role.grant_principal.add_to_principal_policy(
            iam.PolicyStatement(
                actions=unconditioned,
                resources=resources,
                conditions={"ForAllValues:StringLike": {"dynamodb:LeadingKeys": list(leading_keys)}},
            )
        )
    if writes:
        role.grant_principal.add_to_principal_policy(
            iam.PolicyStatement(
                actions=writes,
                resources=[table.table_arn],
                conditions={"ForAllValues:StringLike": {"dynamodb:LeadingKeys": list(write_leading_keys)}},
            )
        )


def deny_protected_writes(role: iam.IGrantable, table: dynamodb.ITable, name: str) -> None:
    """Explicit Denies on the data other functions own (``permissions.PROTECTED``): its partitions and attributes."""
    writes = list(access_for(name).write_actions)
    for protected in protected_from(name):
        if protected.leading_keys:
            role.grant_principal.add_to_principal_policy(
                iam.PolicyStatement(
                    effect=iam.Effect.DENY,
                    actions=writes,
                    resources=[table.table_arn],
                    conditions={"ForAnyValue:StringLike": {"dynamodb:LeadingKeys": list(protected.leading_keys)}},
                )
            )
        setters = [action for action in writes if action in ("dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:BatchWriteItem")]
        if protected.attributes and setters:
            role.grant_principal.add_to_principal_policy(
                iam.PolicyStatement(
                    effect=iam.Effect.DENY,
                    actions=setters,
                    resources=[table.table_arn],
                    conditions={"ForAnyValue:StringEquals": {"dynamodb:Attributes": list(protected.attributes)}},
                )
            )


def index_arns(table: dynamodb.ITable) -> str:
    return f"{table.table_arn}/index/*"


def grant_bucket(role: iam.IGrantable, bucket: s3.IBucket, access: Access) -> None:
    """Object actions on the declared key prefixes only; listing only below those prefixes."""
    if access.objects:
        resources = [bucket.arn_for_objects(pattern) for pattern in access.object_resources()]
        iam.Grant.add_to_principal(grantee=role, actions=list(access.objects), resource_arns=resources)
    if access.list_objects:
        role.grant_principal.add_to_principal_policy(
            iam.PolicyStatement(
                actions=["s3:ListBucket"],
                resources=[bucket.bucket_arn],
                conditions={"StringLike": {"s3:prefix": list(access.list_conditions())}},
            )
        )


# What the runtime calls on a Bedrock model: Converse is authorized as InvokeModel, ConverseStream as
# InvokeModelWithResponseStream.
BEDROCK_ACTIONS = ("bedrock:InvokeModel", "bedrock:InvokeModelWithResponseStream")


def bedrock_model_arns(scope: Construct, models: Sequence[str]) -> list[str]:
    """The ``bedrock_models`` context as ARNs: an ARN as given, a model id as that foundation model in the
    stack's region (foundation-model ARNs have no account)."""
    stack = Stack.of(scope)
    return [
        model if model.startswith("arn:") else f"arn:{stack.partition}:bedrock:{stack.region}::foundation-model/{model}" for model in models
    ]


def grant_bedrock(function: ServerlessFunction, models: Sequence[str]) -> None:
    """Bedrock on the configured models only; none configured: no Bedrock statement at all."""
    if models:
        iam.Grant.add_to_principal(grantee=function.role, actions=list(BEDROCK_ACTIONS), resource_arns=bedrock_model_arns(function, models))


def allow_usage_traces(runtime: ServerlessFunction, traces: ServerlessFunction) -> None:
    """The gateway runtime records its usage traces through the traces function's live alias (asynchronous
    invocations; their failures go to the alias's on-failure destination, ``FeatureFunctions.traces_failures``)."""
    # The alias's ARN only (grant_invoke would add "<arn>:*", every version and alias), spelled from the function's
    # name: a reference to the alias itself would make the runtime depend on it, and with canary=true the alias
    # depends on the deployments' nested stack, which depends on the runtime (a cycle).
    alias_arn = f"{traces.function.function_arn}:{LIVE_ALIAS}"
    iam.Grant.add_to_principal(grantee=runtime.role, actions=["lambda:InvokeFunction"], resource_arns=[alias_arn])
    runtime.function.add_environment("TRACES_FUNCTION_NAME", alias_arn)


class ServerlessFunction(Construct):
    """A Python function on the shared layer: own role (no managed policies), own log group, X-Ray."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        name: str,
        code: lambda_.Code,
        handler: str,
        shared: SharedResources,
        memory_size: int,
        timeout: Duration,
        description: str,
        environment: dict[str, str] | None = None,
        layers: Sequence[lambda_.ILayerVersion] = (),
        permissions: str | None = None,
        reserved_concurrency: int | None = None,
    ) -> None:
        """``layers`` come after the shared layer; ``permissions`` names another function's declaration in
        ``infra/permissions.py`` when this one runs the same code (default: its own ``name``);
        ``reserved_concurrency`` caps (and guarantees) its concurrent executions (None or 0: none reserved)."""
        super().__init__(scope, construct_id)
        access = access_for(permissions or name)
        self.name = name
        self.access = access
        config = shared.config
        self.log_group = logs.LogGroup(self, "Logs", retention=config.log_retention, removal_policy=RemovalPolicy.DESTROY)
        # A role without AWSLambdaBasicExecutionRole: logging is granted on this function's log group only.
        self.role = iam.Role(self, "Role", assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"), description=f"mlflow-serverless {name}")
        iam.Grant.add_to_principal(
            grantee=self.role,
            actions=["logs:CreateLogStream", "logs:PutLogEvents"],
            resource_arns=[self.log_group.log_group_arn],
        )
        grant_table(self.role, shared.table, access.table_actions, access.table_leading_keys, access.write_leading_keys)
        deny_protected_writes(self.role, shared.table, permissions or name)
        bucket = shared.bucket_for(access)
        if access.bucket:
            grant_bucket(self.role, bucket, access)
        key_environment: dict[str, str] = {}
        if access.kms:
            if shared.secrets_key is None:
                raise ValueError(f"function {name!r} declares KMS actions but the stack has no secrets key")
            # Named in the key's policy (which grants the account no cryptographic use) and in the role's policy.
            shared.secrets_key.add_to_resource_policy(
                iam.PolicyStatement(
                    sid=f"{_construct_name(name)}Uses",
                    principals=[self.role],
                    actions=list(access.kms),
                    resources=["*"],
                )
            )
            iam.Grant.add_to_principal(grantee=self.role, actions=list(access.kms), resource_arns=[shared.secrets_key.key_arn])
            key_environment["GATEWAY_KMS_KEY_ID"] = shared.secrets_key.key_arn
        if access.job_token_key and shared.job_token_key is not None:
            # GetSecretValue only (grant_read would add DescribeSecret), on that secret only.
            iam.Grant.add_to_principal(
                grantee=self.role, actions=["secretsmanager:GetSecretValue"], resource_arns=[shared.job_token_key.secret_arn]
            )
            key_environment["JOB_TOKEN_SECRET_ARN"] = shared.job_token_key.secret_arn
        self.function = lambda_.Function(
            self,
            "Function",
            description=description,
            runtime=RUNTIME,
            architecture=ARCHITECTURE,
            code=code,
            handler=handler,
            layers=[shared.layer, *layers],
            role=self.role,
            memory_size=memory_size,
            timeout=timeout,
            tracing=lambda_.Tracing.ACTIVE,
            log_group=self.log_group,
            reserved_concurrent_executions=reserved_concurrency or None,
            environment={
                "POWERTOOLS_SERVICE_NAME": name,
                "POWERTOOLS_METRICS_NAMESPACE": METRICS_NAMESPACE,
                "POWERTOOLS_LOG_LEVEL": config.log_level.upper(),
                # Responses can be large (search pages); keep them out of X-Ray segments.
                "POWERTOOLS_TRACER_CAPTURE_RESPONSE": "false",
                "TABLE_NAME": shared.table.table_name,
                "BUCKET_NAME": bucket.bucket_name,
                **key_environment,
                # serverless_mlflow.auth enforces MLflow's permissions only in "basic" mode.
                "AUTHORIZATION": config.authorization,
                "AUTH_DEFAULT_PERMISSION": config.auth_default_permission,
                **({"AUTH_GRANT_DEFAULT_WORKSPACE_ACCESS": "true"} if config.auth_grant_default_workspace_access else {}),
                **({"MLFLOW_ENABLE_WORKSPACES": "true"} if config.enable_workspaces else {}),
                **({"MLFLOW_SERVER_ENABLE_CUSTOM_SCORERS": "true"} if config.enable_custom_scorers else {}),
                **config.trace_archival_settings,
                **(environment or {}),
            },
        )
        # Callers (API integrations, event sources, the function URL, sibling invocations) use the `live` alias:
        # each deploy publishes a version, and with the `canary` context CodeDeploy shifts the alias to it gradually.
        self.alias = lambda_.Alias(self, "Live", alias_name=LIVE_ALIAS, version=self.function.current_version)


class FeatureFunctions(Construct):
    """The API's functions: ``functions/<feature>/`` with handler ``<feature>.handler.lambda_handler``."""

    def __init__(self, scope: Construct, construct_id: str, *, features: list[str], shared: SharedResources) -> None:
        super().__init__(scope, construct_id)
        self.functions: dict[str, ServerlessFunction] = {}
        self.traces_failures: sqs.Queue | None = None
        for feature in features:
            self.functions[feature] = ServerlessFunction(
                self,
                _construct_name(feature),
                name=feature,
                code=STAGED_CODE[feature]() if feature in STAGED_CODE else feature_code(feature),
                handler=f"{feature}.handler.lambda_handler",
                shared=shared,
                memory_size=shared.config.api_memory_mb,
                timeout=API_TIMEOUT,
                description=f"mlflow-serverless API feature '{feature}'",
                environment=feature_environment(feature, shared.config),
                reserved_concurrency=shared.config.api_function_concurrency,
            )
        runtime, traces = self.functions.get("gateway_runtime"), self.functions.get("traces")
        if traces is not None:
            # Usage traces the gateway sends asynchronously: after Lambda's two retries they land here, not nowhere.
            self.traces_failures = sqs.Queue(
                self, "TracesFailures", encryption=sqs.QueueEncryption.SQS_MANAGED, enforce_ssl=True, retention_period=Duration.days(14)
            )
            traces.alias.configure_async_invoke(on_failure=destinations.SqsDestination(self.traces_failures), retry_attempts=2)
        if runtime is not None:
            grant_bedrock(runtime, shared.config.bedrock_model_list)
            if traces is not None:
                allow_usage_traces(runtime, traces)


def feature_environment(feature: str, config: StackConfig) -> dict[str, str]:
    """Settings only one feature reads."""
    if feature in (gateway_catalog.GATEWAY_PACKAGE, gateway_catalog.RUNTIME_PACKAGE) and config.gateway_allowed_providers:
        return {"MLFLOW_GATEWAY_ALLOWED_PROVIDERS": config.gateway_allowed_providers}
    if feature == "webhooks":
        return config.webhook_settings  # create/update check targets; `test` sends to them
    return {}


def _construct_name(feature: str) -> str:
    return "".join(part.capitalize() for part in feature.split("_"))
