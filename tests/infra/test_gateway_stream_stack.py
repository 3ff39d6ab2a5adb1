"""The gateway runtime's streaming function in the synthesized stack: its function URL (SigV4, streamed), the
Lambda Web Adapter layer and variables that start ``stream_server`` through ``run.sh``, its rights (exactly the
runtime's), the client policy that may call it, and Bedrock grants that exist only for configured models."""

from __future__ import annotations

import os
from typing import Any

import aws_cdk as cdk
import pytest

import infra
from infra.config import StackConfig
from infra.constructs import gateway_stream
from infra.constructs.functions import BEDROCK_ACTIONS
from tests.infra.test_stack import ALL_FUNCTIONS, Synth, actions_of, alias_of, function_of, policy_statements_of

pytestmark = pytest.mark.xdist_group("infra")

BEDROCK_ACTION_SET = set(BEDROCK_ACTIONS)


def _resources(statement: dict[str, Any]) -> list[Any]:
    return statement["Resource"] if isinstance(statement["Resource"], list) else [statement["Resource"]]


def _actions(statement: dict[str, Any]) -> set[str]:
    return {statement["Action"]} if isinstance(statement["Action"], str) else set(statement["Action"])


def test_function_url_is_iam_authenticated_and_streams(synth: Synth) -> None:
    stream_id, _ = function_of(synth, "gateway_stream")
    (url,) = synth.resources("AWS::Lambda::Url").values()
    assert url["Properties"] == {
        "AuthType": "AWS_IAM",
        "InvokeMode": "RESPONSE_STREAM",
        # The live alias's URL: a canary moves the streams too.
        "TargetFunctionArn": {"Fn::GetAtt": [stream_id, "Arn"]},
        "Qualifier": "live",
    }
    # No resource policy opens it: only identities whose own policy allows it may call (SigV4).
    for permission in synth.resources("AWS::Lambda::Permission").values():
        assert stream_id not in str(permission["Properties"]["FunctionName"])
    url_id = synth.stack.get_logical_id(synth.stack.gateway_stream.url.node.default_child)
    assert synth.json["Outputs"]["GatewayStreamUrl"]["Value"] == {"Fn::GetAtt": [url_id, "FunctionUrl"]}


def test_stream_function_runs_the_runtime_code_on_the_adapter(synth: Synth) -> None:
    from gateway_runtime import stream_server

    _, stream = function_of(synth, "gateway_stream")
    _, runtime = function_of(synth, "gateway_runtime")
    props = stream["Properties"]
    # The runtime's asset (one upload), started by the adapter's bootstrap through the package's run.sh.
    assert props["Code"] == runtime["Properties"]["Code"]
    assert props["Handler"] == "gateway_runtime/run.sh"
    run_sh = synth.asset_dir(props["Code"]["S3Key"]) / props["Handler"]
    assert run_sh.is_file() and os.access(run_sh, os.X_OK), "the adapter execs the handler: it must stay executable in the asset"
    adapter = synth.stack.resolve(gateway_stream.adapter_layer_arn(synth.stack))
    assert adapter["Fn::Join"][1][-1] == f":753240598075:layer:LambdaAdapterLayerArm64:{gateway_stream.ADAPTER_LAYER_VERSION}"
    assert sorted(map(str, props["Layers"])) == sorted(map(str, [adapter, *runtime["Properties"]["Layers"]]))
    variables = props["Environment"]["Variables"]
    assert {k: v for k, v in variables.items() if k.startswith(("AWS_LWA_", "AWS_LAMBDA_"))} == {
        "AWS_LAMBDA_EXEC_WRAPPER": "/opt/bootstrap",
        "AWS_LWA_INVOKE_MODE": "response_stream",
        "AWS_LWA_PORT": str(stream_server.DEFAULT_PORT),
        "AWS_LWA_READINESS_CHECK_PATH": stream_server.READINESS_PATH,
    }
    # Everything else the runtime reads is the same (its service name aside), so both answer alike.
    runtime_variables = runtime["Properties"]["Environment"]["Variables"]
    assert {k: v for k, v in variables.items() if k in runtime_variables and k != "POWERTOOLS_SERVICE_NAME"} == {
        k: v for k, v in runtime_variables.items() if k != "POWERTOOLS_SERVICE_NAME"
    }
    assert props["Timeout"] == 900 and runtime["Properties"]["Timeout"] <= 29
    assert props["Architectures"] == ["arm64"] and props["TracingConfig"] == {"Mode": "Active"}


def _without_logs(statements: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [s for s in statements if not _actions(s) & {"logs:CreateLogStream", "logs:PutLogEvents"}]


def test_stream_role_holds_exactly_the_runtime_rights(synth: Synth, open_synth: Synth) -> None:
    for stack in (synth, open_synth):
        # Same statements (table, key, traces function, X-Ray; Bedrock when configured), each on its own log group.
        assert _without_logs(policy_statements_of(stack, "gateway_stream")) == _without_logs(policy_statements_of(stack, "gateway_runtime"))
    statements = policy_statements_of(synth, "gateway_stream")
    (invoke,) = [s for s in statements if "lambda:InvokeFunction" in _actions(s)]
    assert _actions(invoke) == {"lambda:InvokeFunction"}
    # The traces function's live alias only (its asynchronous invocations' failures go to the alias's destination).
    assert invoke["Resource"] == {"Fn::Join": ["", [{"Fn::GetAtt": [function_of(synth, "traces")[0], "Arn"]}, ":live"]]}
    (logs,) = [s for s in statements if "logs:PutLogEvents" in _actions(s)]
    assert logs["Resource"] == {"Fn::GetAtt": [synth.logical_id(synth.stack.gateway_stream.function.log_group), "Arn"]}


def test_client_policy_may_call_the_url_and_nothing_else_of_the_function(synth: Synth) -> None:
    stream_arn = {"Ref": alias_of(synth, "gateway_stream")}
    policy = synth.json["Resources"][synth.logical_id(synth.stack.client_policy)]
    lambda_statements = [
        s for s in policy["Properties"]["PolicyDocument"]["Statement"] if any(a.startswith("lambda:") for a in _actions(s))
    ]
    assert sorted(lambda_statements, key=lambda s: s["Action"]) == [
        {
            "Action": "lambda:InvokeFunction",
            "Condition": {"Bool": {"lambda:InvokedViaFunctionUrl": "true"}},
            "Effect": "Allow",
            "Resource": stream_arn,
        },
        {
            "Action": "lambda:InvokeFunctionUrl",
            "Condition": {"StringEquals": {"lambda:FunctionUrlAuthType": "AWS_IAM"}},
            "Effect": "Allow",
            "Resource": stream_arn,
        },
    ]


def test_no_bedrock_right_without_configured_models(synth: Synth) -> None:
    for policy in synth.resources("AWS::IAM::Policy").values():
        assert not any(a.startswith("bedrock:") for s in policy["Properties"]["PolicyDocument"]["Statement"] for a in _actions(s))


def test_bedrock_rights_name_only_the_configured_models(open_synth: Synth) -> None:
    stack = open_synth.stack
    expected = [
        stack.resolve(f"arn:{stack.partition}:bedrock:{stack.region}::foundation-model/anthropic.claude-3-haiku-20240307-v1:0"),
        "arn:aws:bedrock:eu-west-1::foundation-model/amazon.nova-pro-v1:0",
    ]
    assert expected[0]["Fn::Join"][1][-1] == "::foundation-model/anthropic.claude-3-haiku-20240307-v1:0"
    for name in ("gateway_runtime", "gateway_stream"):
        (statement,) = [s for s in policy_statements_of(open_synth, name) if _actions(s) & BEDROCK_ACTION_SET]
        assert _actions(statement) == BEDROCK_ACTION_SET and "Condition" not in statement
        assert sorted(map(str, _resources(statement))) == sorted(map(str, expected)), name
    # No other function may call Bedrock.
    for name in ALL_FUNCTIONS:
        if name != "gateway_runtime":
            assert not actions_of(policy_statements_of(open_synth, name)) & BEDROCK_ACTION_SET, name


def test_bedrock_models_context_is_validated_and_read_as_a_list() -> None:
    for bad in ("*", "anthropic.*", "arn:aws:bedrock:us-east-1::foundation-model/*", "a b"):
        with pytest.raises(ValueError, match="bedrock_models"):
            StackConfig(bedrock_models=bad)
    app = cdk.App(context={**infra.cdk_json_context(), "bedrock_models": ["m.one-v1:0", " m.two "]})
    assert StackConfig.from_context(app).bedrock_model_list == ["m.one-v1:0", "m.two"]
    assert StackConfig().bedrock_model_list == []
