"""Bad context stops synth with a message naming the value and the choices (issue 40, "Bad input")."""

from __future__ import annotations

import aws_cdk as cdk
import pytest

import infra
from infra.config import StackConfig, stack_environment


def _from_context(**context: str) -> StackConfig:
    app = cdk.App(context={**infra.cdk_json_context(), **context})
    return StackConfig.from_context(cdk.Stack(app, "Context"))


@pytest.mark.parametrize(
    ("context", "named"),
    [
        ({"monitoring": "verbose"}, ["'verbose'", "'basic'", "'full'"]),
        ({"alarm_email": "ops-at-example"}, ["'ops-at-example'", "name@example.com"]),
        ({"alarm_email": "a@example.com,b@example.com"}, ["'a@example.com,b@example.com'", "one e-mail address"]),
        ({"alarm_topic_arn": "ops-topic"}, ["'ops-topic'", "arn:aws:sns:<region>:<account>:<name>"]),
        ({"alarm_topic_arn": "arn:aws:sqs:eu-west-1:123456789012:ops"}, ["arn:aws:sqs", "arn:aws:sns:"]),
        ({"canary": "maybe"}, ["'maybe'", "'true'", "'false'"]),
        ({"api_function_concurrency": "lots"}, ["'lots'", "whole number"]),
        ({"api_function_concurrency": "500"}, ["500", "0 (no reservations) to 50"]),
        ({"authorization": "cognito"}, ["'cognito'", "'iam'", "'basic'", "'none'"]),
        ({"trace_archival_retention": "1w"}, ["'1w'", "<int><unit>", "30d"]),
        ({"trace_archival_interval_seconds": "0"}, ["1 to 86400", "0"]),
    ],
)
def test_a_context_value_out_of_range_stops_synth_naming_it_and_the_choices(context: dict[str, str], named: list[str]) -> None:
    with pytest.raises(ValueError) as raised:
        _from_context(**context)
    message = str(raised.value)
    assert f"'{next(iter(context))}'" in message and all(part in message for part in named), message


def test_good_values_are_read() -> None:
    config = _from_context(
        monitoring="full", alarm_email="ops@example.com", alarm_topic_arn="arn:aws:sns:eu-west-1:123456789012:ops", canary="true"
    )
    assert (config.monitoring, config.canary, config.alarm_email) == ("full", True, "ops@example.com")
    assert _from_context().monitoring == "basic" and _from_context().canary is False
    assert _from_context(api_function_concurrency="0").reserved(20) is None


def test_the_region_is_stated_or_the_cli_s_with_an_account_never_the_fallback() -> None:
    # No AWS configuration: the CLI still says us-east-1; the stack stays environment-agnostic.
    assert stack_environment(None, {"CDK_DEFAULT_REGION": "us-east-1"}) == (None, None)
    assert stack_environment(None, {"CDK_DEFAULT_REGION": "eu-west-1", "CDK_DEFAULT_ACCOUNT": "123456789012"}) == (
        "123456789012",
        "eu-west-1",
    )
    assert stack_environment("eu-central-1", {"CDK_DEFAULT_REGION": "us-east-1"}) == (None, "eu-central-1")
    with pytest.raises(ValueError, match=r"'region' .*'Ireland'"):
        stack_environment("Ireland", {})


def test_trace_archival_context_becomes_the_functions_environment() -> None:
    assert _from_context().trace_archival_settings == {}  # off by default: nothing archived
    config = _from_context(
        trace_archival_retention="30d", trace_archival_long_retention_allowlist="7,9", trace_archival_max_traces_per_pass="500"
    )
    assert config.trace_archival_settings == {
        "TRACE_ARCHIVAL_RETENTION": "30d",
        "TRACE_ARCHIVAL_LONG_RETENTION_ALLOWLIST": "7,9",
        "TRACE_ARCHIVAL_MAX_TRACES_PER_PASS": "500",
        "TRACE_ARCHIVAL_INTERVAL_SECONDS": "300",
    }
