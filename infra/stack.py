"""The mlflow-serverless stack: table, bucket, shared layer, feature functions, HTTP API, indexer, bootstrap."""

from __future__ import annotations

from aws_cdk import CfnOutput, Duration, RemovalPolicy, Stack, Tags
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from constructs import Construct

from infra.config import StackConfig
from infra.constructs.api import MlflowHttpApi
from infra.constructs.artifacts_bucket import ArtifactsBucket
from infra.constructs.auth import BasicAuth, job_token_key
from infra.constructs.bootstrap import Bootstrap
from infra.constructs.deployments import CanaryDeployments
from infra.constructs.functions import ARCHITECTURE, RUNTIME, FeatureFunctions, SharedResources
from infra.constructs.gateway_stream import GatewayStream
from infra.constructs.indexer import StreamIndexer
from infra.constructs.jobs import JobsRunner
from infra.constructs.layer import SharedLayer
from infra.constructs.monitor_schedule import MonitorSchedule
from infra.constructs.monitoring import Monitoring, Watched
from infra.constructs.table import MlflowTable
from infra.constructs.web_ui import WebUiFiles
from infra.constructs.webhooks import RegistryEvents
from infra.nag import add_suppressions
from serverless_mlflow.request import routes

# What the account (its administrators, CloudFormation) may do with the secrets key: everything but cryptography
# (no Encrypt, Decrypt, ReEncrypt or GenerateDataKey: those are granted to the named function roles only).
KEY_ADMIN_ACTIONS = (
    "kms:Create*",
    "kms:Describe*",
    "kms:Enable*",
    "kms:List*",
    "kms:Put*",
    "kms:Update*",
    "kms:Revoke*",
    "kms:Disable*",
    "kms:Get*",
    "kms:Delete*",
    "kms:TagResource",
    "kms:UntagResource",
    "kms:ScheduleKeyDeletion",
    "kms:CancelKeyDeletion",
    "kms:RotateKeyOnDemand",
)


class MlflowServerlessStack(Stack):
    def __init__(self, scope: Construct, construct_id: str, *, config: StackConfig | None = None, **kwargs: object) -> None:
        super().__init__(scope, construct_id, description="MLflow tracking server and model registry on AWS serverless", **kwargs)
        self.config = config or StackConfig.from_context(self)
        # Cost-allocation tags on every taggable resource (activate them once in the Billing console).
        for key, value in {"project": "mlflow-serverless", "stack": construct_id}.items():
            Tags.of(self).add(key, value)

        self.table = MlflowTable(self, "Table", table_name=self.config.table_name).table
        self.artifacts = ArtifactsBucket(self, "Artifacts", noncurrent_version_days=self.config.noncurrent_version_days)
        self.layer = SharedLayer(self, "Shared", runtime=RUNTIME, architecture=ARCHITECTURE)
        # The web UI's static build, served at the API's root by the ui function.
        self.web_ui = WebUiFiles(self, "WebUi", access_logs=self.artifacts.access_logs, log_retention=self.config.log_retention)
        # AI gateway secret values are encrypted with this key (KMS Encrypt, encryption context = secret id and
        # name). Retained like the table: deleting it would make every stored secret unreadable. Its policy lets the
        # account administer the key but not use it: each function that encrypts or decrypts is named in the policy
        # with its actions (ServerlessFunction, from infra/permissions.py), so no other role of the account can.
        self.secrets_key = kms.Key(
            self,
            "GatewaySecretsKey",
            description="mlflow-serverless: encrypts AI gateway secret values",
            enable_key_rotation=True,
            rotation_period=Duration.days(365),
            removal_policy=RemovalPolicy.RETAIN,
            policy=iam.PolicyDocument(
                statements=[
                    iam.PolicyStatement(
                        sid="AccountAdministersTheKeyButCannotUseIt",
                        principals=[iam.AccountRootPrincipal()],
                        actions=list(KEY_ADMIN_ACTIONS),
                        resources=["*"],
                    )
                ]
            ),
        )
        # authorization=basic: jobs call the API as their creator, with tokens signed by this key.
        self.job_token_key = job_token_key(self) if self.config.basic_auth else None
        shared = SharedResources(
            table=self.table,
            bucket=self.artifacts.bucket,
            layer=self.layer.layer,
            config=self.config,
            web_ui_bucket=self.web_ui.bucket,
            secrets_key=self.secrets_key,
            job_token_key=self.job_token_key,
        )

        self.features = FeatureFunctions(self, "Features", features=routes.features(), shared=shared)
        # Streamed gateway answers: the runtime's code behind a function URL (the API buffers them).
        self.gateway_stream = GatewayStream(self, "GatewayStream", shared=shared, traces=self.features.functions.get("traces"))
        # authorization=basic: the Lambda authorizer and the first admin's generated password.
        self.basic_auth = BasicAuth(self, "BasicAuth", shared=shared) if self.config.basic_auth else None
        self.api = MlflowHttpApi(
            self,
            "Api",
            functions={name: fn.alias for name, fn in self.features.functions.items()},
            config=self.config,
            basic_authorizer=self.basic_auth.authorizer.alias if self.basic_auth else None,
        )
        self.artifacts.allow_browser_reads([self.api.url, *self.config.extra_cors_origins])
        self.indexer = StreamIndexer(self, "Indexer", shared=shared)
        self.registry_events = RegistryEvents(
            self, "RegistryEvents", shared=shared, stream_dead_letters=self.indexer.dead_letter_queue, settings=self.config.webhook_settings
        )
        self.jobs = JobsRunner(
            self,
            "Jobs",
            shared=shared,
            api_function=self.features.functions["jobs"],
            api_url=self.api.url,
            api_id=self.api.api.api_id,
            submitters=(self.features.functions["runs"], self.features.functions["review"]),
        )
        # Online scoring on a schedule: submits jobs to the queue above.
        self.monitor_schedule = MonitorSchedule(self, "MonitorSchedule", shared=shared, job_queue=self.jobs.queue)
        self.bootstrap = Bootstrap(self, "Bootstrap", shared=shared, admin_secret=self.basic_auth.admin_secret if self.basic_auth else None)
        self.all_functions = {
            **self.features.functions,
            "indexer": self.indexer.function,
            "webhook_events": self.registry_events.events_function,
            "webhook_delivery": self.registry_events.delivery_function,
            "job_worker": self.jobs.worker,
            "gateway_stream": self.gateway_stream.function,
            "monitor": self.monitor_schedule.function,
            **({"authorizer": self.basic_auth.authorizer} if self.basic_auth else {}),
        }
        traces_failures = self.features.traces_failures
        self.monitoring = Monitoring(
            self,
            "Monitoring",
            config=self.config,
            watched=Watched(
                api=self.api.api,
                table=self.table,
                functions={name: fn.function for name, fn in self.all_functions.items()},
                dead_letters={
                    "Indexer": self.indexer.dead_letter_queue,
                    "Webhook": self.registry_events.dead_letter_queue,
                    "Job": self.jobs.dead_letter_queue,
                    **({"Traces": traces_failures} if traces_failures is not None else {}),
                },
                queues={"Jobs": self.jobs.queue, "WebhookDeliveries": self.registry_events.queue},
                stream_consumers={
                    "Indexer": self.indexer.function.function,
                    "WebhookEvents": self.registry_events.events_function.function,
                },
            ),
        )
        # Opt-in: CodeDeploy moves each live alias to a new version gradually, rolled back on errors.
        self.deployments = (
            CanaryDeployments(self, "Deployments", aliases={name: fn.alias for name, fn in self.all_functions.items()})
            if self.config.canary
            else None
        )

        # Attach this to the users/roles that run the mlflow client when authorization is "iam".
        self.client_policy_resource = self.format_arn(service="execute-api", resource=self.api.api.api_id, resource_name="*")
        self.client_policy = iam.ManagedPolicy(
            self,
            "ClientPolicy",
            description="Invoke the mlflow-serverless API and the gateway's streaming URL (SigV4-signed requests)",
            statements=[
                iam.PolicyStatement(
                    actions=["execute-api:Invoke"],
                    resources=[self.client_policy_resource],
                ),
                # Streamed gateway answers through the runtime's function URL.
                *self.gateway_stream.client_statements(),
            ],
        )

        CfnOutput(self, "ApiUrl", value=self.api.url, description="MLFLOW_TRACKING_URI")
        CfnOutput(self, "TableName", value=self.table.table_name)
        CfnOutput(self, "BucketName", value=self.artifacts.bucket.bucket_name)
        CfnOutput(
            self, "DeadLetterQueueUrl", value=self.indexer.dead_letter_queue.queue_url, description="Stream records the indexer gave up on"
        )
        CfnOutput(self, "EventBusName", value=self.registry_events.bus.event_bus_name, description="Registry events (EventBridge)")
        CfnOutput(
            self,
            "WebhookDeadLetterQueueUrl",
            value=self.registry_events.dead_letter_queue.queue_url,
            description="Webhook deliveries that failed for good",
        )
        CfnOutput(self, "JobDeadLetterQueueUrl", value=self.jobs.dead_letter_queue.queue_url, description="Jobs that failed for good")
        CfnOutput(
            self,
            "ClientPolicyArn",
            value=self.client_policy.managed_policy_arn,
            description="Grants execute-api:Invoke on the API and the gateway's streaming URL",
        )
        CfnOutput(
            self,
            "GatewayStreamUrl",
            value=self.gateway_stream.url.url,
            description="AI gateway invocations that stream (<url>gateway/...; SigV4, service lambda)",
        )
        CfnOutput(self, "Authorization", value=self.config.authorization)
        if self.basic_auth:
            CfnOutput(
                self,
                "AdminSecretArn",
                value=self.basic_auth.admin_secret.secret_arn,
                description="The first admin's user name and password (aws secretsmanager get-secret-value --secret-id ...)",
            )
        CfnOutput(self, "AlarmTopicArn", value=self.monitoring.topic.topic_arn, description="Every alarm notifies this SNS topic")
        if self.monitoring.dashboard is not None:
            CfnOutput(self, "DashboardName", value=self.monitoring.dashboard.dashboard_name, description="CloudWatch dashboard")
        if traces_failures is not None:
            CfnOutput(
                self, "TracesFailureQueueUrl", value=traces_failures.queue_url, description="Gateway usage traces that failed to record"
            )

        add_suppressions(self)
