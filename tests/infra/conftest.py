"""Infra tests synthesize the app once per session per configuration (the defaults; non-default context shared by
the modules that need one; the largest configuration; independent context switches together); every infra module
is in the ``infra`` xdist group, so that these session fixtures are built on one worker only."""

from __future__ import annotations

import pytest

from tests.infra.test_stack import Synth

# Non-default context for ``open_synth``: each test module checks the part it owns.
OPEN_CONTEXT = {
    "authorization": "none",
    "table_name": "mlflow-trial",
    "alarm_email": "ops@example.com",
    "cors_origins": "https://ui.example.com/, https://other.example.com",
    "noncurrent_version_days": "7",
    "gateway_allowed_providers": "openai,anthropic",
    # A model id (the stack's region) and a full ARN in another region.
    "bedrock_models": "anthropic.claude-3-haiku-20240307-v1:0, arn:aws:bedrock:eu-west-1::foundation-model/amazon.nova-pro-v1:0",
}


def pytest_configure(config: pytest.Config) -> None:
    # Registered by pytest-xdist when it is active; registered here too so `-p no:xdist` runs stay quiet.
    config.addinivalue_line("markers", "xdist_group(name): run the marked tests on the same xdist worker")


@pytest.fixture(scope="session")
def synth(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    return Synth(tmp_path_factory.mktemp("cdk-iam"))


# The largest configuration the context offers (most resources and alarms), with basic auth's non-default
# permissions (test_basic_auth_stack checks them on this synth).
LARGEST_CONTEXT = {
    "authorization": "basic",
    "monitoring": "full",
    "canary": "true",
    "alarm_email": "ops@example.com",
    "auth_default_permission": "NO_PERMISSIONS",
    "auth_grant_default_workspace_access": "true",
}


@pytest.fixture(scope="session")
def largest(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    return Synth(tmp_path_factory.mktemp("cdk-largest"), **LARGEST_CONTEXT)


@pytest.fixture(scope="session")
def open_synth(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    return Synth(tmp_path_factory.mktemp("cdk-none"), **OPEN_CONTEXT)


# Context switches that each change one independent part of the stack, synthesized together once (a synth is tens
# of seconds on a 2-core box): no reserved concurrency, an existing event bus, custom scorers on, an existing alarm
# topic notified too.
VARIANT_CONTEXT = {
    "api_function_concurrency": "0",
    "event_bus_name": "team-events",
    "enable_custom_scorers": "true",
    "alarm_topic_arn": "arn:aws:sns:eu-west-1:123456789012:ops",
}


@pytest.fixture(scope="session")
def variant_synth(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    return Synth(tmp_path_factory.mktemp("cdk-variant"), **VARIANT_CONTEXT)
