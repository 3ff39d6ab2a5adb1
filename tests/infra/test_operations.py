"""Operations (issue 40): reserved concurrency within the account quota, versions and a live alias per function,
the opt-in canary with alarm rollback, the traces' on-failure destination, cost-allocation tags, access logs kept
after the stack, and no region written into the template."""

from __future__ import annotations

import json

import pytest

from infra.config import MAX_API_FUNCTION_CONCURRENCY, StackConfig
from tests.infra.test_stack import API_FEATURES, Synth, alias_of, construct_of, function_of

pytestmark = pytest.mark.xdist_group("infra")

# Lambda's default concurrency quota per account and region, and what it keeps unreserved at least.
ACCOUNT_QUOTA = 1000
UNRESERVED_MINIMUM = 100
WORKERS = ["indexer", "webhook_events", "webhook_delivery", "job_worker", "gateway_stream", "monitor"]


def _reserved(synth: Synth) -> dict[str, int]:
    out = {}
    for name in [*API_FEATURES, *WORKERS]:
        _, function = function_of(synth, name)
        out[name] = function["Properties"].get("ReservedConcurrentExecutions", 0)
    return out


def test_every_function_reserves_concurrency_within_the_account_quota(synth: Synth, largest: Synth) -> None:
    reserved = _reserved(synth)
    # The stream consumers and queue workers cannot be starved by API traffic; the function URL is capped.
    assert all(reserved[name] > 0 for name in WORKERS), reserved
    assert all(reserved[name] == StackConfig().api_function_concurrency for name in API_FEATURES)
    # The API's worst case (stage throttle x 29 s) is capped by its functions' reservations, and everything fits the
    # default quota with Lambda's unreserved minimum left for the rest of the account, even at the largest setting.
    assert sum(reserved.values()) <= ACCOUNT_QUOTA - 300
    # The largest setting: basic auth's authorizer too, every API function at the maximum.
    authorizer = largest.json["Resources"][largest.logical_id(largest.stack.basic_auth.authorizer.function)]  # type: ignore[union-attr]
    assert authorizer["Properties"]["ReservedConcurrentExecutions"] == StackConfig().api_function_concurrency
    workers = sum(reserved[name] for name in WORKERS)
    assert workers + MAX_API_FUNCTION_CONCURRENCY * (len(API_FEATURES) + 1) <= ACCOUNT_QUOTA - UNRESERVED_MINIMUM


def test_no_reservations_when_the_context_turns_them_off(variant_synth: Synth) -> None:
    assert not any(_reserved(variant_synth).values())


@pytest.mark.parametrize("name", [*API_FEATURES, *WORKERS])
def test_every_function_has_a_version_and_a_live_alias(synth: Synth, name: str) -> None:
    alias = synth.json["Resources"][alias_of(synth, name)]["Properties"]
    function_id, _ = function_of(synth, name)
    assert alias["Name"] == "live" and alias["FunctionName"] == {"Ref": function_id}
    version_id = alias["FunctionVersion"]["Fn::GetAtt"][0]
    version = synth.json["Resources"][version_id]
    assert version["Type"] == "AWS::Lambda::Version" and version["Properties"]["FunctionName"] == {"Ref": function_id}
    # Without the canary context the alias moves at once: no CodeDeploy update policy.
    assert "UpdatePolicy" not in synth.json["Resources"][alias_of(synth, name)]


def test_canary_shifts_every_alias_through_codedeploy_with_alarm_rollback(synth: Synth, largest: Synth) -> None:
    assert synth.stack.deployments is None
    deployments = largest.stack.deployments
    assert deployments is not None
    names = {*API_FEATURES, *WORKERS, "authorizer"}
    assert set(deployments.groups) == names
    from aws_cdk import assertions

    template = assertions.Template.from_stack(deployments).to_json()
    groups = [r["Properties"] for r in template["Resources"].values() if r["Type"] == "AWS::CodeDeploy::DeploymentGroup"]
    assert len(groups) == len(names)
    for group in groups:
        assert group["DeploymentConfigName"] == "CodeDeployDefault.LambdaCanary10Percent5Minutes"
        assert group["AlarmConfiguration"]["Enabled"] is True and len(group["AlarmConfiguration"]["Alarms"]) == 1
        assert set(group["AutoRollbackConfiguration"]["Events"]) >= {"DEPLOYMENT_FAILURE", "DEPLOYMENT_STOP_ON_ALARM"}
    for name in names:
        construct = largest.stack.basic_auth.authorizer if name == "authorizer" else construct_of(largest, name)  # type: ignore[union-attr]
        alias = largest.json["Resources"][largest.logical_id(construct.alias)]
        # Literal names (CloudFormation resolves no reference into a nested stack in an UpdatePolicy), and the
        # alias waits for the nested stack that holds its deployment group.
        assert alias["UpdatePolicy"]["CodeDeployLambdaAliasUpdate"] == {
            "ApplicationName": f"{largest.stack.stack_name}-canary",
            "DeploymentGroupName": f"{largest.stack.stack_name}-{name}",
        }, name
        assert largest.stack.get_logical_id(deployments.nested_stack_resource) in alias["DependsOn"]  # type: ignore[arg-type]


def test_traces_async_invocations_fail_to_a_queue_that_alarms(synth: Synth) -> None:
    traces_alias = alias_of(synth, "traces")
    # The monitor's config (no retries, a minute's age) is its own; the traces alias's is this one.
    (config,) = [c for c in synth.resources("AWS::Lambda::EventInvokeConfig").values() if traces_alias in json.dumps(c)]
    props = config["Properties"]
    assert traces_alias in json.dumps(props["Qualifier"]) and props["MaximumRetryAttempts"] == 2
    queue_id = synth.logical_id(synth.stack.features.traces_failures)
    assert props["DestinationConfig"]["OnFailure"]["Destination"] == {"Fn::GetAtt": [queue_id, "Arn"]}
    # The gateway invokes the alias (the config's qualifier), by ARN.
    traces_function, _ = function_of(synth, "traces")
    alias_arn = {"Fn::Join": ["", [{"Fn::GetAtt": [traces_function, "Arn"]}, ":live"]]}
    for name in ("gateway_runtime", "gateway_stream"):
        _, function = function_of(synth, name)
        assert function["Properties"]["Environment"]["Variables"]["TRACES_FUNCTION_NAME"] == alias_arn
    assert "TracesDeadLetters" in synth.stack.monitoring.alarms


def test_cost_allocation_tags_on_functions_tables_queues_and_buckets(synth: Synth) -> None:
    tagged = {"AWS::Lambda::Function", "AWS::DynamoDB::Table", "AWS::SQS::Queue", "AWS::S3::Bucket", "AWS::KMS::Key", "AWS::IAM::Role"}
    for logical_id, resource in synth.json["Resources"].items():
        if resource["Type"] in tagged:
            tags = {t["Key"]: t["Value"] for t in resource["Properties"].get("Tags", [])}
            assert tags.get("project") == "mlflow-serverless" and tags.get("stack") == synth.stack.stack_name, logical_id


def test_access_logs_are_kept_after_the_stack_goes(synth: Synth) -> None:
    log_group = synth.json["Resources"][synth.logical_id(synth.stack.api.access_logs)]
    assert log_group["DeletionPolicy"] == log_group["UpdateReplacePolicy"] == "Retain"


def test_no_region_or_account_is_written_into_the_template(synth: Synth, largest: Synth) -> None:
    for which in (synth, largest):
        for path in which.outdir.glob("*.template.json"):
            text = path.read_text()
            assert "us-east-1" not in text and "123456789012" not in text, path.name
    # ARNs the stack builds itself use the pseudo-parameters.
    arns = json.dumps(synth.json["Resources"][synth.logical_id(construct_of(synth, "gateway_stream").function)])
    assert "AWS::Region" in arns
