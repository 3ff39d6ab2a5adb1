"""The gateway runtime's streaming front: the same code on the Lambda Web Adapter layer, behind a function URL.

An HTTP API integration buffers a Lambda answer, so ``"stream": true`` over the API arrives whole. This
function runs the runtime's own HTTP server (``functions/gateway_runtime/stream_server.py``, started by
``run.sh``) under the adapter, and its function URL (``AWS_IAM``, ``RESPONSE_STREAM``) passes each chunk on
as the server writes it (docs/gateway-runtime.md, "Streaming").
"""

from __future__ import annotations

from aws_cdk import Duration, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from infra import gateway_catalog
from infra.constructs.functions import (
    ServerlessFunction,
    SharedResources,
    allow_usage_traces,
    feature_environment,
    gateway_runtime_code,
    grant_bedrock,
)

# awslabs/aws-lambda-web-adapter's published layer (README, "Zip Packages": LambdaAdapterLayerArm64:26 for
# adapter 1.0, read 2026-11). A newer version is a deliberate upgrade: bump it here after reading its notes.
ADAPTER_LAYER_VERSION = 26
ADAPTER_LAYER_ACCOUNT = "753240598075"  # commercial regions; the adapter publishes no arm64 layer in China
ADAPTER_LAYER_NAME = "LambdaAdapterLayerArm64"
# The adapter's bootstrap execs "$LAMBDA_TASK_ROOT/$_HANDLER": the script in the runtime's package.
HANDLER = f"{gateway_catalog.RUNTIME_PACKAGE}/run.sh"
# stream_server.DEFAULT_PORT and READINESS_PATH (tests/infra check they agree).
PORT = 8080
READINESS_PATH = "/health"
# A function URL may answer for up to Lambda's 15 minutes (an HTTP API gives up at 29 s). A provider that stops
# sending is cut off sooner by the runtime's own read timeout (MLFLOW_GATEWAY_ROUTE_TIMEOUT_SECONDS, 300 s).
STREAM_TIMEOUT = Duration.minutes(15)
NAME = "gateway_stream"
# The function URL is outside the API's throttling: its reserved concurrency is its cap (15-minute streams at 1 GB).
STREAM_CONCURRENCY = 20


def adapter_layer_arn(scope: Construct) -> str:
    stack = Stack.of(scope)
    return f"arn:{stack.partition}:lambda:{stack.region}:{ADAPTER_LAYER_ACCOUNT}:layer:{ADAPTER_LAYER_NAME}:{ADAPTER_LAYER_VERSION}"


class GatewayStream(Construct):
    """The streaming function, with the runtime's declared rights (``permissions.py`` ``gateway_runtime``)."""

    def __init__(self, scope: Construct, construct_id: str, *, shared: SharedResources, traces: ServerlessFunction | None) -> None:
        super().__init__(scope, construct_id)
        adapter = lambda_.LayerVersion.from_layer_version_arn(self, "AdapterLayer", adapter_layer_arn(self))
        self.function = ServerlessFunction(
            self,
            "Stream",
            name=NAME,
            permissions=gateway_catalog.RUNTIME_PACKAGE,
            code=gateway_runtime_code(),
            handler=HANDLER,
            shared=shared,
            memory_size=shared.config.api_memory_mb,
            timeout=STREAM_TIMEOUT,
            description="mlflow-serverless AI gateway runtime, streaming (function URL, Lambda Web Adapter)",
            layers=[adapter],
            environment={
                **feature_environment(gateway_catalog.RUNTIME_PACKAGE, shared.config),
                "AWS_LAMBDA_EXEC_WRAPPER": "/opt/bootstrap",
                "AWS_LWA_INVOKE_MODE": "response_stream",
                "AWS_LWA_PORT": str(PORT),
                "AWS_LWA_READINESS_CHECK_PATH": READINESS_PATH,
            },
            reserved_concurrency=shared.config.reserved(STREAM_CONCURRENCY),
        )
        grant_bedrock(self.function, shared.config.bedrock_model_list)
        if traces is not None:
            allow_usage_traces(self.function, traces)
        # SigV4 only: no resource policy is added, so a caller needs an identity policy (the stack's ClientPolicy).
        self.url = self.function.alias.add_function_url(
            auth_type=lambda_.FunctionUrlAuthType.AWS_IAM, invoke_mode=lambda_.InvokeMode.RESPONSE_STREAM
        )

    def client_statements(self) -> list[iam.PolicyStatement]:
        """What a client needs to call the URL: InvokeFunctionUrl, and (function URLs made since October 2025)
        InvokeFunction, each only through this function's IAM-authenticated URL."""
        arn = self.function.alias.function_arn
        return [
            iam.PolicyStatement(
                actions=["lambda:InvokeFunctionUrl"],
                resources=[arn],
                conditions={"StringEquals": {"lambda:FunctionUrlAuthType": "AWS_IAM"}},
            ),
            iam.PolicyStatement(
                actions=["lambda:InvokeFunction"], resources=[arn], conditions={"Bool": {"lambda:InvokedViaFunctionUrl": "true"}}
            ),
        ]
