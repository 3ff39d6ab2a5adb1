"""The stack with ``authorization=basic``: a cached Lambda authorizer on every route but the public ones,
the first admin's generated secret read by the bootstrap only, least privilege and cdk-nag still clean."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from cdk_nag import AwsSolutionsChecks, ServerlessChecks

from infra.constructs.api import AUTHORIZER_CACHE_SECONDS
from local.authorizer import CACHE_SECONDS
from serverless_mlflow.auth.authorizer import DEFAULT_CACHE_SECONDS
from serverless_mlflow.http import http_api
from tests.infra.test_stack import NAG_ID, Synth, policy_statements_of

pytestmark = pytest.mark.xdist_group("infra")


@pytest.fixture
def basic_synth(largest: Synth) -> Synth:
    """The session's largest configuration (tests/infra/conftest.py): basic auth with non-default permissions, full
    monitoring and the canary (their resources live in nested stacks; this module checks the main one)."""
    return largest


def _authorizer(synth: Synth) -> tuple[str, dict[str, Any]]:
    ((logical_id, authorizer),) = synth.resources("AWS::ApiGatewayV2::Authorizer").items()
    return logical_id, authorizer["Properties"]


def test_cached_lambda_authorizer_on_the_authorization_header(basic_synth: Synth) -> None:
    _, props = _authorizer(basic_synth)
    assert props["AuthorizerType"] == "REQUEST"
    assert props["AuthorizerPayloadFormatVersion"] == "2.0"
    assert props["EnableSimpleResponses"] is True
    assert props["IdentitySource"] == ["$request.header.Authorization"]
    assert props["AuthorizerResultTtlInSeconds"] == AUTHORIZER_CACHE_SECONDS > 0
    # The local runtime emulates the same cache period.
    assert CACHE_SECONDS == AUTHORIZER_CACHE_SECONDS
    # Public routes check credentials in the function, caching answers as long as API Gateway does.
    assert DEFAULT_CACHE_SECONDS == AUTHORIZER_CACHE_SECONDS
    function_id = basic_synth.logical_id(basic_synth.stack.basic_auth.authorizer.alias)
    assert function_id in str(props["AuthorizerUri"])


def test_every_route_but_the_public_ones_carries_the_authorizer(basic_synth: Synth) -> None:
    authorizer_id, _ = _authorizer(basic_synth)
    by_key = {r["Properties"]["RouteKey"]: r["Properties"] for r in basic_synth.resources("AWS::ApiGatewayV2::Route").values()}
    assert set(by_key) == {route.route_key for route in http_api.gateway_routes()} | {"$default"}
    public = {route.route_key for route in http_api.gateway_routes() if route.public}
    # The UI's bundle is public (MLflow's /static-files are). The index checks credentials itself and challenges a
    # browser without them (MLflow's "/" does); /signup too, as /login does (it challenges a browser, then serves admins only).
    assert public == {
        "GET /health",
        "HEAD /health",
        "GET /api/3.0/mlflow/server-info",
        "GET /login",
        "GET /signup",
        "GET /",
        "GET /static-files/{path+}",
    }
    for key, props in by_key.items():
        if key in public:
            assert props["AuthorizationType"] == "NONE", key
        else:
            assert props["AuthorizationType"] == "CUSTOM", key
            assert props["AuthorizerId"] == {"Ref": authorizer_id}, key


def test_functions_know_the_mode_and_default_permissions(basic_synth: Synth) -> None:
    for function in basic_synth.resources("AWS::Lambda::Function").values():
        env = function["Properties"].get("Environment", {}).get("Variables", {})
        if "TABLE_NAME" in env:
            assert env["AUTHORIZATION"] == "basic"
            assert env["AUTH_DEFAULT_PERMISSION"] == "NO_PERMISSIONS"
            assert env["AUTH_GRANT_DEFAULT_WORKSPACE_ACCESS"] == "true"


def test_admin_password_is_generated_and_only_the_bootstrap_reads_it(basic_synth: Synth) -> None:
    secret_id = basic_synth.logical_id(basic_synth.stack.basic_auth.admin_secret)
    secret = basic_synth.resources("AWS::SecretsManager::Secret")[secret_id]
    generator = secret["Properties"]["GenerateSecretString"]
    assert generator["GenerateStringKey"] == "password" and generator["PasswordLength"] >= 32
    assert "SecretString" not in secret["Properties"]  # no password in the template, ever
    readers = []
    for policy in basic_synth.resources("AWS::IAM::Policy").values():
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
            actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
            if any(a.startswith("secretsmanager:") for a in actions) and statement["Resource"] == {"Ref": secret_id}:
                readers.append(policy["Properties"]["Roles"][0]["Ref"])
    assert readers == [basic_synth.logical_id(basic_synth.stack.bootstrap.function.role)]
    bootstrap_env = basic_synth.json["Resources"][basic_synth.logical_id(basic_synth.stack.bootstrap.function.function)]["Properties"]
    assert bootstrap_env["Environment"]["Variables"]["ADMIN_SECRET_ARN"] == {"Ref": secret_id}
    assert "AdminSecretArn" in basic_synth.json["Outputs"]


def test_job_token_key_is_generated_and_read_only_by_who_mints_or_checks_tokens(basic_synth: Synth) -> None:
    stack = basic_synth.stack
    assert stack.job_token_key is not None
    secret_id = basic_synth.logical_id(stack.job_token_key)
    assert set(basic_synth.resources("AWS::SecretsManager::Secret")) == {secret_id, basic_synth.logical_id(stack.basic_auth.admin_secret)}
    secret = basic_synth.resources("AWS::SecretsManager::Secret")[secret_id]["Properties"]
    assert secret["GenerateSecretString"]["PasswordLength"] >= 64
    assert "SecretString" not in secret  # never in the template
    readers: dict[str, list[str]] = {}
    for policy in basic_synth.resources("AWS::IAM::Policy").values():
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
            if statement["Resource"] == {"Ref": secret_id}:
                readers.setdefault(policy["Properties"]["Roles"][0]["Ref"], []).append(statement["Action"])
    # The functions that submit jobs mint (jobs; runs for prompt optimization; review for issue detection; the
    # monitor for online scoring, as the scorer's owner); the
    # authorizer and server-info's function (public: checks credentials itself) verify. The job worker, which
    # carries the tokens, never reads the key.
    expected = {
        basic_synth.logical_id(stack.features.functions["jobs"].role),
        basic_synth.logical_id(stack.features.functions["runs"].role),
        basic_synth.logical_id(stack.features.functions["review"].role),
        basic_synth.logical_id(stack.features.functions["meta"].role),
        basic_synth.logical_id(stack.basic_auth.authorizer.role),
        basic_synth.logical_id(stack.monitor_schedule.function.role),
    }
    assert set(readers) == expected
    assert all(actions == ["secretsmanager:GetSecretValue"] for actions in readers.values())
    for function in basic_synth.resources("AWS::Lambda::Function").values():
        env = function["Properties"].get("Environment", {}).get("Variables", {})
        if "JOB_TOKEN_SECRET_ARN" in env:
            assert env["JOB_TOKEN_SECRET_ARN"] == {"Ref": secret_id}
            assert function["Properties"]["Role"]["Fn::GetAtt"][0] in expected
    worker = basic_synth.json["Resources"][basic_synth.logical_id(stack.jobs.worker.function)]["Properties"]
    assert "JOB_TOKEN_SECRET_ARN" not in worker["Environment"]["Variables"]


def _table_statements(synth: Synth, role: object) -> list[dict[str, Any]]:
    role_id = synth.logical_id(role)
    return [
        statement
        for policy in synth.resources("AWS::IAM::Policy").values()
        if policy["Properties"]["Roles"] == [{"Ref": role_id}]
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]
        if any(a.startswith("dynamodb:") for a in (statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]))
    ]


@pytest.mark.parametrize("function", ["authorizer", "ui"])
def test_credential_checkers_read_user_items_only(basic_synth: Synth, function: str) -> None:
    # The authorizer, and the UI function checking credentials sent to its public pages: GetItem on USER#
    # partitions, nothing else of the table; the authorizer also reads job items (a job token is refused once its
    # job is finished). The UI function cannot verify job tokens at all (no job-token key), so it reads no job.
    role = (basic_synth.stack.basic_auth.authorizer if function == "authorizer" else basic_synth.stack.features.functions[function]).role
    (statement,) = _table_statements(basic_synth, role)
    assert statement["Action"] == "dynamodb:GetItem"
    keys = ["USER#*", "JOB#*"] if function == "authorizer" else ["USER#*"]
    assert statement["Condition"] == {"ForAllValues:StringLike": {"dynamodb:LeadingKeys": keys}}
    assert policy_statements_of(basic_synth, "auth")


@pytest.mark.parametrize("pack", [AwsSolutionsChecks, ServerlessChecks], ids=["AwsSolutions", "Serverless"])
def test_cdk_nag_clean_in_basic_mode(basic_synth: Synth, pack: type) -> None:
    report = pack().validate_scope(basic_synth.stack)
    findings = [v.rule_name for v in report.violations if NAG_ID.fullmatch(v.rule_name)]
    assert report.success and not findings, findings


def test_authorizer_code_is_only_its_package(basic_synth: Synth) -> None:
    function = basic_synth.json["Resources"][basic_synth.logical_id(basic_synth.stack.basic_auth.authorizer.function)]
    code_dir = basic_synth.asset_dir(function["Properties"]["Code"]["S3Key"])
    assert sorted(p.name for p in Path(code_dir).iterdir()) == ["authorizer"]
    assert function["Properties"]["Handler"] == "authorizer.handler.lambda_handler"
