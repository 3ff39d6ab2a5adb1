"""cdk-nag (v3) acknowledgements, each on the narrowest construct and with the reason it is acceptable.

cdk-nag 3 reads CDK's native ``Validations.of(construct).acknowledge(...)``; a finding with a detail
(``AwsSolutions-IAM5[Resource::...]``) must be acknowledged with exactly that detail, so every
wildcard is named individually and a new one fails the nag test.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from aws_cdk import Acknowledgment, Stack, Validations
from constructs import IConstruct

from infra.constructs.functions import index_arns

if TYPE_CHECKING:
    from infra.constructs.functions import ServerlessFunction
    from infra.stack import MlflowServerlessStack

XRAY_REASON = (
    "X-Ray active tracing: xray:PutTraceSegments and xray:PutTelemetryRecords support no resource-level "
    "permissions, so CDK grants them on '*' (no other action of this role is on '*')."
)
INDEX_REASON = (
    "Query by index name on this table's own indexes (gsi1-gsi5, lsi1-lsi5 from serverless_mlflow.storage.schema); "
    "the wildcard is limited to <table-arn>/index/*."
)
SYNC_DLQ_REASON = (
    "Invoked synchronously by API Gateway: a failure is returned to the HTTP caller (MLflow error JSON), "
    "there is no asynchronous event to park in a dead-letter queue."
)
INDEXER_DLQ_REASON = (
    "Invoked by a DynamoDB stream event source mapping, which has its own on-failure destination (SQS) with "
    "bounded retries; a function-level DLQ only applies to asynchronous invocations."
)
AUTHORIZER_DLQ_REASON = (
    "Invoked synchronously by API Gateway as the HTTP API's Lambda authorizer; a failure answers the HTTP "
    "request, there is no asynchronous event to park in a dead-letter queue."
)
BOOTSTRAP_DLQ_REASON = (
    "Invoked by CloudFormation for a custom resource; the function reports every failure to CloudFormation "
    "(the deploy fails and rolls back), so there is no event to keep in a dead-letter queue."
)


def acknowledge(scope: IConstruct, rule_id: str, reason: str) -> None:
    Validations.of(scope).acknowledge(Acknowledgment(id=rule_id, reason=reason))


def nag_resource(stack: Stack, value: str) -> str:
    """How cdk-nag spells a (tokenized) resource in a finding id: ``Ref`` -> ``<Id>``, ``GetAtt`` -> ``<Id.Attr>``.

    Derived from the same expression the policy uses, so it stays right whether the CLI knows the
    region/partition (literals) or not (pseudo-parameters).
    """

    def spell(part: Any) -> str:
        if isinstance(part, str):
            return part
        if "Ref" in part:
            return f"<{part['Ref']}>"
        if "Fn::GetAtt" in part:
            return "<{}.{}>".format(*part["Fn::GetAtt"])
        if "Fn::Sub" in part and isinstance(part["Fn::Sub"], str):
            return re.sub(r"\$\{([^}]+)\}", r"<\1>", part["Fn::Sub"])
        if "Fn::Join" in part:
            separator, parts = part["Fn::Join"]
            return separator.join(spell(p) for p in parts)
        raise ValueError(f"cannot spell {part!r} as a cdk-nag finding")

    return f"Resource::{spell(stack.resolve(value))}"


def _function_acks(stack: MlflowServerlessStack, function: ServerlessFunction, dlq_reason: str, star_reason: str = XRAY_REASON) -> None:
    acknowledge(function, "AwsSolutions-IAM5[Resource::*]", star_reason)
    acknowledge(function, "Serverless-LambdaDLQ", dlq_reason)
    if "dynamodb:Query" in function.access.table_actions:
        acknowledge(function, f"AwsSolutions-IAM5[{nag_resource(stack, index_arns(stack.table))}]", INDEX_REASON)


def add_suppressions(stack: MlflowServerlessStack) -> None:
    for function in stack.features.functions.values():
        _function_acks(stack, function, SYNC_DLQ_REASON)
    _function_acks(
        stack,
        stack.gateway_stream.function,
        "Invoked synchronously through its function URL (RESPONSE_STREAM): a failure is answered to the HTTP caller, "
        "there is no asynchronous event to park in a dead-letter queue.",
    )
    _function_acks(
        stack,
        stack.indexer.function,
        INDEXER_DLQ_REASON,
        XRAY_REASON.removesuffix(" (no other action of this role is on '*').")
        + ". DynamoEventSource also grants dynamodb:ListStreams on '*': ListStreams supports no resource-level "
        "permissions (the stream reads themselves are scoped to this table's stream ARN).",
    )
    acknowledge(
        stack.indexer.deferral_source_node(),
        "Serverless-LambdaEventSourceMappingDestination",
        "An SQS event source mapping has no on-failure destination: the trace deferral queue's redrive policy moves a "
        "message that keeps failing to the indexer's dead-letter queue.",
    )
    stream_reason = XRAY_REASON.removesuffix(" (no other action of this role is on '*').") + (
        ". DynamoEventSource also grants dynamodb:ListStreams on '*': ListStreams supports no resource-level "
        "permissions (the stream reads themselves are scoped to this table's stream ARN)."
    )
    _function_acks(stack, stack.registry_events.events_function, INDEXER_DLQ_REASON, stream_reason)
    delivery_reason = (
        "Its SQS event source has the webhooks' dead-letter queue (redrive policy); a failure is retried by SQS, not by Lambda."
    )
    _function_acks(stack, stack.registry_events.delivery_function, delivery_reason)
    acknowledge(
        next(c for c in stack.registry_events.delivery_function.alias.node.children if c.node.id.startswith("SqsEventSource")),
        "Serverless-LambdaEventSourceMappingDestination",
        "An SQS event source mapping has no on-failure destination: the queue's redrive policy moves a message that "
        "keeps failing to the webhooks' dead-letter queue, and the function dead-letters final refusals itself.",
    )
    jobs_reason = "Its SQS event source has the jobs' dead-letter queue (redrive policy); a failure is retried by SQS, not by Lambda."
    _function_acks(stack, stack.jobs.worker, jobs_reason)
    acknowledge(
        next(c for c in stack.jobs.worker.alias.node.children if c.node.id.startswith("SqsEventSource")),
        "Serverless-LambdaEventSourceMappingDestination",
        "An SQS event source mapping has no on-failure destination: the queue's redrive policy moves a job's message "
        "that keeps failing to the jobs' dead-letter queue.",
    )
    acknowledge(
        stack.jobs.worker,
        f"AwsSolutions-IAM5[{nag_resource(stack, stack.jobs.api_resource)}]",
        "execute-api:Invoke on this stack's own API (every route: the demo generators call many): the worker drives "
        "the API with the stock MLflow client, as a user would.",
    )
    _function_acks(
        stack,
        stack.monitor_schedule.function,
        "Invoked by EventBridge Scheduler every minute with retries off: a failed pass is not replayed, the next one "
        "starts from the same claims and checkpoints a minute later.",
    )
    acknowledge(
        stack.monitor_schedule.function.alias,
        "Serverless-LambdaAsyncFailureDestination",
        "A pass throttled behind a slower one is dropped after a minute on purpose: the next pass starts from the same "
        "checkpoints, so a dropped event loses no trace's scoring.",
    )
    _function_acks(stack, stack.bootstrap.function, BOOTSTRAP_DLQ_REASON)
    if stack.basic_auth is not None:
        _function_acks(stack, stack.basic_auth.authorizer, AUTHORIZER_DLQ_REASON)
        acknowledge(
            stack.basic_auth.admin_secret,
            "AwsSolutions-SMG4",
            "The first admin's password seeds a user item once (bootstrap); rotating the secret would not change the "
            "stored password hash. Rotate through MLflow's update-password API instead, as on an MLflow server.",
        )
    if stack.job_token_key is not None:
        acknowledge(
            stack.job_token_key,
            "AwsSolutions-SMG4",
            "The job-token HMAC key signs tokens that expire within hours; functions read it once per cold start. "
            "Rotating it would only make running jobs fail with 401, so it is replaced on demand (update the secret's "
            "value, or redeploy with a new secret), not on a schedule.",
        )

    # The indexer reads spilled spans (trace-spans/) and trace archives to rebuild a trace's aggregates, and deletes
    # those of traces the table's TTL removed; the monitor writes trace archives (trace archival) and deletes the
    # spilled spans of the traces it archives.
    for function in [*stack.features.functions.values(), stack.indexer.function, stack.monitor_schedule.function]:
        bucket = stack.web_ui.bucket if function.access.bucket_name == "web_ui" else stack.artifacts.bucket
        for pattern in function.access.object_resources():
            reason = (
                f"s3:GetObject only, on keys under '{pattern}' of the web UI's own bucket: the file names of the "
                "deployed UI build (content-hashed bundles) are not known to the function in advance."
                if function.access.bucket_name == "web_ui"
                else f"Object actions limited to keys under '{pattern}' of the stack's own bucket (this function's prefix: "
                "any experiment's objects live below it, and presigned URLs are signed with this role)."
            )
            acknowledge(function, f"AwsSolutions-IAM5[{nag_resource(stack, bucket.arn_for_objects(pattern))}]", reason)

    _web_ui_deployment_acks(stack)

    queue = stack.indexer.dead_letter_queue
    dlq_reason = (
        "This queue is itself the dead-letter (on-failure) destination of the indexer's stream event source mapping, "
        "and the dead-letter queue of its trace deferral queue."
    )
    acknowledge(queue, "AwsSolutions-SQS3", dlq_reason)
    acknowledge(queue, "Serverless-SQSRedrivePolicy", dlq_reason)
    jobs_dlq = stack.jobs.dead_letter_queue
    jobs_dlq_reason = "This queue is itself the dead-letter queue of the jobs queue."
    acknowledge(jobs_dlq, "AwsSolutions-SQS3", jobs_dlq_reason)
    acknowledge(jobs_dlq, "Serverless-SQSRedrivePolicy", jobs_dlq_reason)
    traces_failures = stack.features.traces_failures
    if traces_failures is not None:
        reason = "This queue is itself the on-failure destination of the traces function's asynchronous invocations."
        acknowledge(traces_failures, "AwsSolutions-SQS3", reason)
        acknowledge(traces_failures, "Serverless-SQSRedrivePolicy", reason)
    webhook_dlq = stack.registry_events.dead_letter_queue
    webhook_reason = "This queue is itself the dead-letter queue of the webhook deliveries queue."
    acknowledge(webhook_dlq, "AwsSolutions-SQS3", webhook_reason)
    acknowledge(webhook_dlq, "Serverless-SQSRedrivePolicy", webhook_reason)

    acknowledge(
        stack.client_policy,
        f"AwsSolutions-IAM5[{nag_resource(stack, stack.client_policy_resource)}]",
        "The MLflow client calls every route of this API (stage/method/path); the policy is limited to this one API.",
    )

    topic = stack.monitoring.topic
    if topic is not None:
        acknowledge(
            topic,
            "AwsSolutions-SNS2",
            "Alarm notifications carry only alarm names and states. CloudWatch cannot publish to a topic encrypted "
            "with the AWS-managed SNS key, and a customer-managed key would cost money while the stack is idle.",
        )
        acknowledge(
            topic,
            "Serverless-SNSRedrivePolicy",
            "An e-mail notification that cannot be delivered loses nothing: the alarm's state and history stay in "
            "CloudWatch (and on the stack's dashboard).",
        )

    if stack.deployments is not None:
        acknowledge(
            stack.deployments.role,
            "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSCodeDeployRoleForLambdaLimited]",
            "CodeDeploy's own managed policy for Lambda deployments (moving aliases between versions, reading the "
            "rollback alarms); AWS maintains it as the service's needs change.",
        )

    if not stack.config.iam_auth:
        acknowledge(
            stack.api,
            "AwsSolutions-APIG4",
            "authorization=none was chosen explicitly in CDK context for a short-lived trial stack; the default "
            "(authorization=iam) requires SigV4 on every route.",
        )


DEPLOYMENT_REASON = (
    "CDK's BucketDeployment singleton (Custom::CDKBucketDeployment) copies the web UI build from the CDK asset "
    "bucket to the web UI bucket at deploy time; its function and role are generated by aws-cdk-lib."
)


def _web_ui_deployment_acks(stack: MlflowServerlessStack) -> None:
    """The deployment's provider function: CDK-owned code; its role may read the staged asset and write only
    the web UI's own bucket (never the artifacts bucket)."""
    handler_role = stack.web_ui.deployment.handler_role
    provider = next(c for c in stack.node.children if c.node.id.startswith("Custom::CDKBucketDeployment"))
    acknowledge(
        handler_role,
        "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole]",
        DEPLOYMENT_REASON + " It attaches the basic execution policy (logs only) to that role.",
    )
    for action in ("s3:GetBucket*", "s3:GetObject*", "s3:List*", "s3:Abort*", "s3:DeleteObject*"):
        acknowledge(
            handler_role,
            f"AwsSolutions-IAM5[Action::{action}]",
            DEPLOYMENT_REASON + f" CDK grants {action} for the sync (with prune), on those two buckets only.",
        )
    policy = handler_role.node.find_child("DefaultPolicy")
    for statement in stack.resolve(policy.document)["Statement"]:
        resources = statement["Resource"] if isinstance(statement["Resource"], list) else [statement["Resource"]]
        for resource in resources:
            spelled = nag_resource(stack, resource)
            if spelled.endswith("/*"):
                acknowledge(
                    handler_role,
                    f"AwsSolutions-IAM5[{spelled}]",
                    DEPLOYMENT_REASON + " Objects of the asset bucket (source) or of the web UI bucket (destination) only.",
                )
    acknowledge(provider, "AwsSolutions-L1", DEPLOYMENT_REASON + " Its runtime is chosen by aws-cdk-lib, not by this stack.")
    acknowledge(provider, "Serverless-LambdaDLQ", BOOTSTRAP_DLQ_REASON)
    acknowledge(provider, "Serverless-LambdaLatestVersion", DEPLOYMENT_REASON + " Its runtime is chosen by aws-cdk-lib, not by this stack.")
    acknowledge(
        provider,
        "Serverless-LambdaTracing",
        DEPLOYMENT_REASON + " It runs only during deployments, where CloudFormation reports its failures; no tracing is needed.",
    )
