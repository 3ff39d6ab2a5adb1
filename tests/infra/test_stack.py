"""The synthesized stack: table from the schema, functions per feature on one layer, routes from the
route table, the indexer's event source mapping, bucket and queue hardening, least-privilege IAM, and
cdk-nag (AwsSolutions + Serverless) with every acknowledgement justified.

The app is synthesized once per module (bundling the layer is a local copy, no Docker, no network).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import assertions
from cdk_nag import AwsSolutionsChecks, ServerlessChecks

import infra
from infra import assets
from infra.config import StackConfig
from infra.constructs.functions import LIVE_ALIAS
from infra.constructs.indexer import (
    BATCHING_WINDOW_SECONDS,
    DEFERRAL_BATCH_SIZE,
    DEFERRAL_CONCURRENCY,
    DEFERRAL_MAX_RECEIVES,
    RETRY_ATTEMPTS,
    removal_source_entity_types,
    source_entity_types,
)
from infra.permissions import ACCESS, TABLE_WRITE, TRACE_ARCHIVES, access_for
from infra.stack import MlflowServerlessStack
from serverless_mlflow.http import http_api
from serverless_mlflow.index import trace_deferral
from serverless_mlflow.request import routes
from serverless_mlflow.storage import schema

pytestmark = pytest.mark.xdist_group("infra")

STACK_NAME = "MlflowServerlessTest"
API_FEATURES = routes.features()
# The API's features plus the stream, queue and schedule workers (the deploy-time bootstrap and authorizer aside).
WORKERS = ["indexer", "webhook_events", "webhook_delivery", "job_worker", "monitor"]
ALL_FUNCTIONS = [*API_FEATURES, *WORKERS]


class Synth:
    def __init__(self, outdir: Path, **context: str) -> None:
        self.app = cdk.App(outdir=str(outdir), context={**infra.cdk_json_context(), **context})
        self.stack = MlflowServerlessStack(self.app, STACK_NAME)
        self.assembly = self.app.synth()
        self.template = assertions.Template.from_stack(self.stack)
        self.json: dict[str, Any] = self.template.to_json()
        self.outdir = outdir

    def resources(self, type_name: str) -> dict[str, dict[str, Any]]:
        return {k: v for k, v in self.json["Resources"].items() if v["Type"] == type_name}

    def logical_id(self, construct: Any) -> str:
        return self.stack.get_logical_id(construct.node.default_child)

    def asset_dir(self, s3_key: Any) -> Path:
        """The staged directory of a file asset, from the S3 key the template references."""
        asset_hash = str(s3_key).removesuffix(".zip")
        manifest = json.loads((self.outdir / f"{STACK_NAME}.assets.json").read_text())
        return self.outdir / manifest["files"][asset_hash]["source"]["path"]


# The ``synth`` (defaults) and ``open_synth`` (non-default context) fixtures are in conftest.py, shared with
# the other infra modules.


def construct_of(synth: Synth, name: str) -> Any:
    workers = {
        "indexer": synth.stack.indexer.function,
        "webhook_events": synth.stack.registry_events.events_function,
        "webhook_delivery": synth.stack.registry_events.delivery_function,
        "job_worker": synth.stack.jobs.worker,
        "gateway_stream": synth.stack.gateway_stream.function,
        "monitor": synth.stack.monitor_schedule.function,
    }
    return workers[name] if name in workers else synth.stack.features.functions[name]


def alias_of(synth: Synth, name: str) -> str:
    """The logical id of a function's `live` alias (what the API, event sources and the function URL call)."""
    return synth.logical_id(construct_of(synth, name).alias)


def mapping_of(synth: Synth, name: str, queue: Any = None) -> dict[str, Any]:
    """The event source mapping of a function, on its live alias (``<function name>:live``): its only one, its
    stream's (the indexer also reads its trace deferral queue), or the one of ``queue``."""
    alias = alias_of(synth, name)
    mappings = [
        m for m in synth.resources("AWS::Lambda::EventSourceMapping").values() if {"Ref": alias} in _refs(m["Properties"]["FunctionName"])
    ]
    if queue is not None:
        mappings = [m for m in mappings if m["Properties"]["EventSourceArn"] == {"Fn::GetAtt": [synth.logical_id(queue), "Arn"]}]
    elif len(mappings) > 1:
        mappings = [m for m in mappings if "StartingPosition" in m["Properties"]]
    (mapping,) = mappings
    assert mapping["Properties"]["FunctionName"]["Fn::Join"][1][-1] == ":live"
    return mapping


def _refs(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return [value] if "Ref" in value else [ref for item in value.values() for ref in _refs(item)]
    if isinstance(value, list):
        return [ref for item in value for ref in _refs(item)]
    return []


def function_of(synth: Synth, name: str) -> tuple[str, dict[str, Any]]:
    construct = construct_of(synth, name)
    logical_id = synth.logical_id(construct.function)
    return logical_id, synth.json["Resources"][logical_id]


def policy_statements_of(synth: Synth, name: str) -> list[dict[str, Any]]:
    construct = construct_of(synth, name)
    role_id = synth.logical_id(construct.role)
    statements = []
    for policy in synth.resources("AWS::IAM::Policy").values():
        if {"Ref": role_id} in policy["Properties"]["Roles"]:
            statements.extend(policy["Properties"]["PolicyDocument"]["Statement"])
    assert statements, f"no policy found for {name}"
    return statements


def actions_of(statements: list[dict[str, Any]]) -> set[str]:
    out: set[str] = set()
    for statement in statements:
        actions = statement["Action"]
        out.update([actions] if isinstance(actions, str) else actions)
    return out


# --- table ---------------------------------------------------------------------------------------


def test_exactly_one_table_built_from_the_schema(synth: Synth) -> None:
    synth.template.resource_count_is("AWS::DynamoDB::Table", 1)
    ((_, table),) = synth.resources("AWS::DynamoDB::Table").items()
    props = table["Properties"]
    assert table["DeletionPolicy"] == "Retain" and table["UpdateReplacePolicy"] == "Retain"
    assert props["TableName"] == "mlflow-serverless"
    assert props["BillingMode"] == "PAY_PER_REQUEST"
    assert props["StreamSpecification"] == {"StreamViewType": "NEW_AND_OLD_IMAGES"}
    assert props["PointInTimeRecoverySpecification"]["PointInTimeRecoveryEnabled"] is True
    assert props["TimeToLiveSpecification"] == {"AttributeName": schema.TTL_ATTRIBUTE, "Enabled": True}
    assert props["SSESpecification"]["SSEEnabled"] is True
    assert props["KeySchema"] == [{"AttributeName": schema.PK, "KeyType": "HASH"}, {"AttributeName": schema.SK, "KeyType": "RANGE"}]

    gsis = {gsi["IndexName"]: gsi for gsi in props["GlobalSecondaryIndexes"]}
    lsis = {lsi["IndexName"]: lsi for lsi in props["LocalSecondaryIndexes"]}
    assert len(gsis) == 5 and len(lsis) == 5
    for index in schema.INDEXES:
        spec = (gsis if index.kind == "GSI" else lsis)[index.name]
        assert spec["KeySchema"] == [{"AttributeName": index.pk, "KeyType": "HASH"}, {"AttributeName": index.sk, "KeyType": "RANGE"}]
        assert spec["Projection"]["ProjectionType"] == index.projection
    # Every key attribute is a string (order-preserving encodings), declared once.
    attributes = {a["AttributeName"]: a["AttributeType"] for a in props["AttributeDefinitions"]}
    expected = {schema.PK, schema.SK} | {i.pk for i in schema.INDEXES} | {i.sk for i in schema.INDEXES}
    assert attributes == dict.fromkeys(expected, "S")


def test_table_name_comes_from_context(open_synth: Synth) -> None:
    open_synth.template.has_resource_properties("AWS::DynamoDB::Table", {"TableName": "mlflow-trial"})
    for name in ALL_FUNCTIONS:
        _, function = function_of(open_synth, name)
        assert function["Properties"]["Environment"]["Variables"]["TABLE_NAME"] == {"Ref": open_synth.logical_id(open_synth.stack.table)}


# --- functions and layer ---------------------------------------------------------------------------


# CDK's own BucketDeployment provider (the web UI's static files) and its AWS CLI layer are not ours.
CDK_DEPLOYMENT_PREFIXES = ("CustomCDKBucketDeployment", "WebUiStaticFilesAwsCliLayer")


def own_resources(synth: Synth, type_name: str) -> dict[str, dict[str, Any]]:
    return {k: v for k, v in synth.resources(type_name).items() if not k.startswith(CDK_DEPLOYMENT_PREFIXES)}


def test_one_function_per_feature_all_on_one_layer(synth: Synth) -> None:
    layers = own_resources(synth, "AWS::Lambda::LayerVersion")
    assert len(layers) == 1
    ((layer_id, layer),) = layers.items()
    assert layer["Properties"]["CompatibleArchitectures"] == ["arm64"]

    functions = own_resources(synth, "AWS::Lambda::Function")
    # API features + workers + the deploy-time bootstrap writer + the gateway runtime's streaming function (which
    # adds the Lambda Web Adapter's layer: tests/infra/test_gateway_stream_stack.py).
    assert len(functions) == len(API_FEATURES) + len(WORKERS) + 2
    stream_id = synth.logical_id(synth.stack.gateway_stream.function.function)
    handlers = {f["Properties"]["Handler"] for f in functions.values()}
    assert {f"{name}.handler.lambda_handler" for name in ALL_FUNCTIONS} <= handlers
    runtime = layer["Properties"]["CompatibleRuntimes"][0]
    for function_id, function in functions.items():
        props = function["Properties"]
        assert {"Ref": layer_id} in props["Layers"] and len(props["Layers"]) == (2 if function_id == stream_id else 1)
        assert props["Architectures"] == ["arm64"]
        assert props["Runtime"] == runtime == "python3.14"
        assert props["TracingConfig"] == {"Mode": "Active"}
        assert "LoggingConfig" in props  # own log group with a retention
        env = props["Environment"]["Variables"]
        assert env["POWERTOOLS_METRICS_NAMESPACE"] == "MlflowServerless"
        assert {"POWERTOOLS_SERVICE_NAME", "POWERTOOLS_LOG_LEVEL", "TABLE_NAME", "BUCKET_NAME"} <= set(env)
    for name in API_FEATURES:
        _, function = function_of(synth, name)
        assert function["Properties"]["Timeout"] <= 29, "API Gateway stops waiting after 29-30 s"
        assert function["Properties"]["Environment"]["Variables"]["POWERTOOLS_SERVICE_NAME"] == name
    for log_group in synth.resources("AWS::Logs::LogGroup").values():
        assert log_group["Properties"]["RetentionInDays"] == 30


def test_function_code_is_only_its_feature_package(synth: Synth) -> None:
    for name in ALL_FUNCTIONS:
        _, function = function_of(synth, name)
        staged = synth.asset_dir(function["Properties"]["Code"]["S3Key"])
        top_level = {path.name for path in staged.iterdir()}
        if name == "job_worker":
            # Synth builds the worker's package from its lock (mlflow-skinny and its wheels).
            assert {name, "mlflow"} <= top_level, f"{name} ships {sorted(top_level)[:10]}"
        else:
            assert top_level <= {name}, f"{name} ships {top_level}"
        assert not list(staged.rglob("__pycache__"))
        if (infra.FUNCTIONS_DIR / name / "handler.py").exists():
            assert (staged / name / "handler.py").is_file()


def test_gateway_model_catalog_ships_with_the_gateway_function_only(synth: Synth) -> None:
    from infra import gateway_catalog

    catalog_name = gateway_catalog.CATALOG_FILE
    _, gateway = function_of(synth, "gateway")
    staged = synth.asset_dir(gateway["Properties"]["Code"]["S3Key"]) / "gateway"
    # The compact file made from the pinned wheel, beside the package's own files (nothing else added).
    assert (staged / catalog_name).read_bytes() == gateway_catalog.staged_catalog().read_bytes()
    shipped = {str(path.relative_to(staged)) for path in staged.rglob("*") if path.is_file()}
    source = infra.FUNCTIONS_DIR / "gateway"
    assert shipped == {str(path.relative_to(source)) for path in gateway_catalog._package_files(source)} | {catalog_name}
    others = [function_of(synth, name)[1]["Properties"]["Code"]["S3Key"] for name in ALL_FUNCTIONS if name != "gateway"]
    ((_, layer),) = own_resources(synth, "AWS::Lambda::LayerVersion").items()
    for s3_key in [*others, layer["Properties"]["Content"]["S3Key"]]:
        assert not list(synth.asset_dir(s3_key).rglob(catalog_name))


def test_gateway_allowed_providers_reach_the_gateway_functions_only(synth: Synth, open_synth: Synth) -> None:
    """The provider policy binds the configuration API and the runtime that calls providers, nothing else."""
    variable = "MLFLOW_GATEWAY_ALLOWED_PROVIDERS"
    for name in API_FEATURES:
        assert variable not in function_of(synth, name)[1]["Properties"]["Environment"]["Variables"]
        variables = function_of(open_synth, name)[1]["Properties"]["Environment"]["Variables"]
        assert variables.get(variable) == ("openai,anthropic" if name in ("gateway", "gateway_runtime") else None)


def test_layer_vendors_the_locked_packages_for_arm64(synth: Synth) -> None:
    names = {entry.name for entry in assets.read_lock("layer") if entry.wanted_on(assets.RUNTIME)}
    assert {"aws-lambda-powertools", "aws-xray-sdk", "python-ulid", "sqlparse", "wrapt", "boto3", "protobuf"} <= names

    ((_, layer),) = own_resources(synth, "AWS::Lambda::LayerVersion").items()
    staged = synth.asset_dir(layer["Properties"]["Content"]["S3Key"])
    python = staged / "python"
    assert (python / "serverless_mlflow" / "storage" / "schema.py").is_file()
    assert (python / "aws_lambda_powertools" / "__init__.py").is_file()
    assert (python / "ulid").is_dir() and (python / "sqlparse").is_dir() and (python / "aws_xray_sdk").is_dir()
    # boto3 ships pinned (the version the tests run), not left to the runtime's.
    assert (python / "boto3").is_dir() and (python / "botocore").is_dir()
    assert not list(staged.rglob("__pycache__")), "bytecode of this machine's Python must not ship"
    # Compiled modules are Lambda's (arm64 ELF: e_machine 183), protobuf's upb parser among them.
    native = list(staged.rglob("*.so"))
    assert any(path.name.startswith("_message") for path in native)
    assert {int.from_bytes(path.read_bytes()[18:20], "little") for path in native} == {183}
    # Nothing that imports mlflow may reach Lambda.
    assert not (python / "mlflow").exists()


def test_every_function_has_a_permission_declaration() -> None:
    assert set(ALL_FUNCTIONS) | {"bootstrap", "authorizer"} == set(ACCESS)
    with pytest.raises(KeyError, match=r"permissions\.py"):
        access_for("not-a-feature")


# --- API -------------------------------------------------------------------------------------------


def test_every_route_of_the_route_table_goes_to_its_feature(synth: Synth) -> None:
    api_routes = synth.resources("AWS::ApiGatewayV2::Route")
    integrations = synth.resources("AWS::ApiGatewayV2::Integration")
    by_key = {r["Properties"]["RouteKey"]: r["Properties"] for r in api_routes.values()}
    assert set(by_key) == {route.route_key for route in http_api.gateway_routes()} | {"$default"}

    def target_function(route_props: dict[str, Any]) -> str:
        integration_id = route_props["Target"]["Fn::Join"][1][1]["Ref"]
        integration = integrations[integration_id]["Properties"]
        assert integration["IntegrationType"] == "AWS_PROXY"
        assert integration["PayloadFormatVersion"] == "2.0"
        return integration["IntegrationUri"]["Ref"]

    # Every integration calls its function's live alias (a canary moves the alias, never the route).
    for route in http_api.gateway_routes():
        assert target_function(by_key[route.route_key]) == alias_of(synth, route.feature), route.route_key
    assert target_function(by_key["$default"]) == alias_of(synth, routes.DEFAULT_FEATURE)
    # Greedy paths are native HTTP API syntax.
    assert any("{path+}" in key for key in by_key)


def test_iam_authorization_on_every_route_by_default(synth: Synth) -> None:
    for route in synth.resources("AWS::ApiGatewayV2::Route").values():
        assert route["Properties"]["AuthorizationType"] == "AWS_IAM", route["Properties"]["RouteKey"]


def test_authorization_none_opens_every_route(open_synth: Synth) -> None:
    for route in open_synth.resources("AWS::ApiGatewayV2::Route").values():
        assert route["Properties"]["AuthorizationType"] == "NONE"
    assert open_synth.json["Outputs"]["Authorization"]["Value"] == "none"


def test_api_can_invoke_every_feature_including_default_route(synth: Synth) -> None:
    permissions = list(synth.resources("AWS::Lambda::Permission").values())
    for name in API_FEATURES:
        mine = [p for p in permissions if p["Properties"]["FunctionName"] == {"Ref": alias_of(synth, name)}]
        assert mine and all(p["Properties"]["Principal"] == "apigateway.amazonaws.com" for p in mine)
    # $default is invoked as <api>/<stage>/$default: the meta function needs a two-segment source ARN.
    meta = alias_of(synth, "meta")
    suffixes = {p["Properties"]["SourceArn"]["Fn::Join"][1][-1] for p in permissions if p["Properties"]["FunctionName"] == {"Ref": meta}}
    assert "/*/*" in suffixes


def test_stage_has_access_logs_and_throttling(synth: Synth) -> None:
    ((_, stage),) = synth.resources("AWS::ApiGatewayV2::Stage").items()
    props = stage["Properties"]
    assert props["StageName"] == "$default" and props["AutoDeploy"] is True
    assert props["DefaultRouteSettings"]["ThrottlingRateLimit"] > 0
    assert props["DefaultRouteSettings"]["ThrottlingBurstLimit"] > 0
    log_format = json.loads(props["AccessLogSettings"]["Format"])
    assert log_format["requestId"] == "$context.requestId"


# --- indexer ---------------------------------------------------------------------------------------


def _matches(pattern: dict[str, Any], event: dict[str, Any]) -> bool:
    """Lambda event-filter semantics for the subset the stack uses (value lists and anything-but)."""
    for key, rule in pattern.items():
        if key not in event:
            return False
        value = event[key]
        if isinstance(rule, dict):
            if not isinstance(value, dict) or not _matches(rule, value):
                return False
            continue
        ok = False
        for option in rule:
            if isinstance(option, dict) and "anything-but" in option:
                ok = ok or value not in option["anything-but"]
            else:
                ok = ok or value == option
        if not ok:
            return False
    return True


def _record(event_name: str, entity_type: str) -> dict[str, Any]:
    image = {"pk": {"S": "EXP#1"}, "sk": {"S": "X"}, schema.ENTITY_TYPE: {"S": entity_type}}
    images = (
        {"OldImage": image} if event_name == "REMOVE" else {"NewImage": image, **({"OldImage": image} if event_name == "MODIFY" else {})}
    )
    return {"eventName": event_name, "dynamodb": {"Keys": {}, **images}}


def test_indexer_event_source_mapping(synth: Synth) -> None:
    props = mapping_of(synth, "indexer")["Properties"]
    assert props["EventSourceArn"] == {"Fn::GetAtt": [synth.logical_id(synth.stack.table), "StreamArn"]}
    assert props["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    assert props["BisectBatchOnFunctionError"] is True
    assert props["MaximumRetryAttempts"] == RETRY_ATTEMPTS
    assert 0 < props["MaximumRecordAgeInSeconds"] <= 86400
    assert props["StartingPosition"] == "TRIM_HORIZON"
    # A training loop's records gather into one batch (coalesced per item and run by the indexer).
    assert props["MaximumBatchingWindowInSeconds"] == BATCHING_WINDOW_SECONDS > 0
    queue_id = synth.logical_id(synth.stack.indexer.dead_letter_queue)
    assert props["DestinationConfig"]["OnFailure"]["Destination"] == {"Fn::GetAtt": [queue_id, "Arn"]}

    patterns = [json.loads(f["Pattern"]) for f in props["FilterCriteria"]["Filters"]]

    def passes(record: dict[str, Any]) -> bool:
        return any(_matches(pattern, record) for pattern in patterns)

    sources, removals = source_entity_types(), removal_source_entity_types()
    assert sources and not {e.name for e in schema.ENTITIES if e.derived} & set(sources)
    # A metrics marker starts the indexer's pass; its removal is the indexer's own doing.
    assert "run_metrics_marker" in sources and "run_metrics_marker" not in removals
    for event_name in ("INSERT", "MODIFY", "REMOVE"):
        for entity in schema.ENTITIES:
            wanted = entity.name in (removals if event_name == "REMOVE" else sources)
            assert passes(_record(event_name, entity.name)) is wanted, (event_name, entity.name)
    assert not passes(_record("INSERT", "metric_history"))


def test_indexer_reads_its_trace_deferral_queue_which_redrives_to_its_dead_letters(synth: Synth) -> None:
    indexer = synth.stack.indexer
    queue_id, dead_id = synth.logical_id(indexer.deferral_queue), synth.logical_id(indexer.dead_letter_queue)
    queue = synth.json["Resources"][queue_id]["Properties"]
    assert queue["RedrivePolicy"] == {"deadLetterTargetArn": {"Fn::GetAtt": [dead_id, "Arn"]}, "maxReceiveCount": DEFERRAL_MAX_RECEIVES}
    _, function = function_of(synth, "indexer")
    assert queue["VisibilityTimeout"] > function["Properties"]["Timeout"]  # never redelivered while an invocation runs
    variables = function["Properties"]["Environment"]["Variables"]
    assert variables[trace_deferral.QUEUE_URL] == {"Ref": queue_id}
    assert variables[trace_deferral.DELAY] == str(trace_deferral.DEFAULT_DELAY_SECONDS)
    props = mapping_of(synth, "indexer", indexer.deferral_queue)["Properties"]
    assert props["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    assert props["BatchSize"] == DEFERRAL_BATCH_SIZE and props["ScalingConfig"]["MaximumConcurrency"] == DEFERRAL_CONCURRENCY
    # Its SQS rights: on that queue (send; the event source's receive and delete) and its stream mapping's
    # dead-letter queue (the on-failure destination's send), nothing else.
    rights = [s for s in policy_statements_of(synth, "indexer") if any(a.startswith("sqs:") for a in _actions(s))]
    resources = {json.dumps(r) for s in rights for r in (s["Resource"] if isinstance(s["Resource"], list) else [s["Resource"]])}
    assert resources == {json.dumps({"Fn::GetAtt": [one, "Arn"]}) for one in (queue_id, dead_id)}
    on_queue = {a for s in rights if json.dumps({"Fn::GetAtt": [queue_id, "Arn"]}) in json.dumps(s["Resource"]) for a in _actions(s)}
    assert {"sqs:SendMessage", "sqs:ReceiveMessage", "sqs:DeleteMessage"} <= on_queue


def _actions(statement: dict[str, Any]) -> set[str]:
    return {statement["Action"]} if isinstance(statement["Action"], str) else set(statement["Action"])


def test_queues_are_encrypted_and_tls_only(synth: Synth) -> None:
    queues = synth.resources("AWS::SQS::Queue")
    assert synth.logical_id(synth.stack.indexer.dead_letter_queue) in queues
    policies = synth.resources("AWS::SQS::QueuePolicy")
    # Stream dead letters, webhook deliveries, jobs, their dead letters, the traces' failed asynchronous invocations,
    # and the indexer's trace deferrals.
    assert len(policies) == len(queues) == 7
    for queue in queues.values():
        assert queue["Properties"]["SqsManagedSseEnabled"] is True
    for policy in policies.values():
        statements = policy["Properties"]["PolicyDocument"]["Statement"]
        assert any(s["Effect"] == "Deny" and s["Condition"] == {"Bool": {"aws:SecureTransport": "false"}} for s in statements)


# --- bucket ----------------------------------------------------------------------------------------


def test_artifact_bucket_hardening(synth: Synth) -> None:
    bucket_id = synth.logical_id(synth.stack.artifacts.bucket)
    bucket = synth.json["Resources"][bucket_id]
    props = bucket["Properties"]
    assert bucket["DeletionPolicy"] == "Retain"
    assert props["BucketEncryption"]["ServerSideEncryptionConfiguration"][0]["ServerSideEncryptionByDefault"]["SSEAlgorithm"] == "AES256"
    assert props["PublicAccessBlockConfiguration"] == {
        "BlockPublicAcls": True,
        "BlockPublicPolicy": True,
        "IgnorePublicAcls": True,
        "RestrictPublicBuckets": True,
    }
    assert props["LoggingConfiguration"]["DestinationBucketName"] == {"Ref": synth.logical_id(synth.stack.artifacts.access_logs)}
    rules = props["LifecycleConfiguration"]["Rules"]
    assert any(r.get("AbortIncompleteMultipartUpload") == {"DaysAfterInitiation": 1} for r in rules)
    (cors,) = props["CorsConfiguration"]["CorsRules"]
    # Browsers only read (UI previews after a redirect); the Python client needs no CORS at all.
    assert set(cors["AllowedMethods"]) == {"GET", "HEAD"} and "ETag" in cors["ExposedHeaders"]
    assert cors["AllowedOrigins"] == [synth.stack.resolve(synth.stack.api.url)], "only the API's own origin (plus context cors_origins)"
    assert props["VersioningConfiguration"] == {"Status": "Enabled"}
    (noncurrent,) = [r for r in rules if "NoncurrentVersionExpiration" in r]
    assert noncurrent["NoncurrentVersionExpiration"] == {"NoncurrentDays": 30} and noncurrent["ExpiredObjectDeleteMarker"] is True
    policies = [p for p in synth.resources("AWS::S3::BucketPolicy").values() if p["Properties"]["Bucket"] == {"Ref": bucket_id}]
    statements = policies[0]["Properties"]["PolicyDocument"]["Statement"]
    assert any(s["Effect"] == "Deny" and s["Condition"] == {"Bool": {"aws:SecureTransport": "false"}} for s in statements)


# --- web UI ----------------------------------------------------------------------------------------


def test_web_ui_build_is_deployed_gzipped_to_its_own_bucket(synth: Synth) -> None:
    (deployment,) = synth.resources("Custom::CDKBucketDeployment").values()
    props = deployment["Properties"]
    web_ui_bucket = synth.logical_id(synth.stack.web_ui.bucket)
    assert props["DestinationBucketName"] == {"Ref": web_ui_bucket}
    assert props["DestinationBucketKeyPrefix"] == "ui/"
    assert props["Prune"] is True and props["RetainOnDelete"] is False
    assert props["SystemMetadata"] == {"content-encoding": "gzip"}
    # The staged asset is the build of the pinned UI wheel (static_files.UI_MLFLOW_VERSION), every file gzipped.
    (asset_key,) = props["SourceObjectKeys"]
    staged = synth.asset_dir(asset_key)
    assert (staged / "index.html").is_file() and list((staged / "static" / "js").glob("main.*.js"))
    assert (staged / "index.html").read_bytes()[:2] == b"\x1f\x8b"
    # Its own bucket, hardened like the artifacts bucket; the deployment cannot reach the artifacts bucket.
    bucket = synth.json["Resources"][web_ui_bucket]["Properties"]
    assert bucket["PublicAccessBlockConfiguration"]["RestrictPublicBuckets"] is True
    assert bucket["LoggingConfiguration"]["DestinationBucketName"] == {"Ref": synth.logical_id(synth.stack.artifacts.access_logs)}
    deployment_policy = synth.stack.resolve(synth.stack.web_ui.deployment.handler_role.node.find_child("DefaultPolicy").document)
    assert synth.logical_id(synth.stack.artifacts.bucket) not in json.dumps(deployment_policy)


def test_web_ui_routes_and_ui_function(synth: Synth) -> None:
    keys = {r["Properties"]["RouteKey"] for r in synth.resources("AWS::ApiGatewayV2::Route").values()}
    assert {"GET /", "GET /static-files/{path+}", "POST /graphql", "GET /get-artifact", "GET /model-versions/get-artifact"} <= keys
    assert "ANY /ajax-api/2.0/mlflow/runs/{proxy+}" in keys
    # One greedy route per ajax group, not one per REST route: below HTTP API's 300-route quota with room to grow.
    assert len([k for k in keys if "/ajax-api/" in k]) < 52 and len(keys) < 250
    _, ui = function_of(synth, "ui")
    variables = ui["Properties"]["Environment"]["Variables"]
    assert variables["BUCKET_NAME"] == {"Ref": synth.logical_id(synth.stack.web_ui.bucket)}
    logs_and_traces = {"xray:PutTraceSegments", "xray:PutTelemetryRecords", "logs:CreateLogStream", "logs:PutLogEvents"}
    # Its files, and the user items that check credentials sent to its public pages under basic auth.
    assert actions_of(policy_statements_of(synth, "ui")) - logs_and_traces == {"s3:GetObject", "dynamodb:GetItem"}


# --- IAM -------------------------------------------------------------------------------------------


def test_s3_rights_only_on_declared_prefixes(synth: Synth) -> None:
    bucket_arn = synth.stack.resolve(synth.stack.artifacts.bucket.bucket_arn)
    for name in ALL_FUNCTIONS:
        access = access_for(name)
        statements = [s for s in policy_statements_of(synth, name) if any(a.startswith("s3:") for a in _actions(s))]
        assert bool(statements) is access.bucket, name
        for statement in statements:
            resources = statement["Resource"] if isinstance(statement["Resource"], list) else [statement["Resource"]]
            if _actions(statement) == {"s3:ListBucket"}:
                assert resources == [bucket_arn]
                assert statement["Condition"] == {"StringLike": {"s3:prefix": list(access.list_conditions())}}
            else:
                assert _actions(statement) == set(access.objects), name
                patterns = {r["Fn::Join"][1][-1] for r in resources}
                assert patterns == {f"/{p}" for p in access.object_resources()}, name
    assert access_for("artifacts").prefixes == ("mlartifacts/",)


def _actions(statement: dict[str, Any]) -> set[str]:
    return {statement["Action"]} if isinstance(statement["Action"], str) else set(statement["Action"])


def test_table_actions_follow_the_declared_access(synth: Synth) -> None:
    for name in ALL_FUNCTIONS:
        dynamodb_actions = {a for a in actions_of(policy_statements_of(synth, name)) if a.startswith("dynamodb:")}
        expected = set(access_for(name).table_actions)
        if access_for(name).stream:
            expected |= {"dynamodb:DescribeStream", "dynamodb:GetRecords", "dynamodb:GetShardIterator", "dynamodb:ListStreams"}
        assert dynamodb_actions == expected, name
    artifacts_actions = actions_of(policy_statements_of(synth, "artifacts"))
    # Reads run/experiment items (a logged model with one Query); BatchGetItem is basic auth's one read of the
    # caller's user item and grants.
    assert {a for a in artifacts_actions if a.startswith("dynamodb:")} == {"dynamodb:GetItem", "dynamodb:Query", "dynamodb:BatchGetItem"}
    # The indexer writes derived items in batches, clears flags, and rebuilds run summaries conditionally (Put/Delete).
    assert not {f"dynamodb:{a}" for a in TABLE_WRITE} & actions_of(policy_statements_of(synth, "indexer")) - {
        "dynamodb:UpdateItem",
        "dynamodb:BatchWriteItem",
        "dynamodb:PutItem",
        "dynamodb:DeleteItem",
    }
    # Basic auth's fail-closed admin check reads the caller's user item; nothing else.
    assert {a for a in actions_of(policy_statements_of(synth, "meta")) if a.startswith("dynamodb:")} == {"dynamodb:GetItem"}


def test_kms_rights_only_as_declared_and_only_on_the_stack_key(synth: Synth) -> None:
    """The gateway encrypts secret values with the stack's key (rotated yearly, retained) and cannot decrypt;
    the gateway runtime only decrypts them; webhooks encrypt (and decrypt for ``test``) their secrets, the
    delivery worker only decrypts; no other function can use the key."""
    keys = synth.resources("AWS::KMS::Key")
    assert len(keys) == 1
    ((key_id, key),) = keys.items()
    assert key["Properties"]["EnableKeyRotation"] is True and key["DeletionPolicy"] == "Retain"
    for name in ALL_FUNCTIONS:
        statements = [s for s in policy_statements_of(synth, name) if any(a.startswith("kms:") for a in _actions(s))]
        assert {a for s in statements for a in _actions(s)} == set(access_for(name).kms), name
        for statement in statements:
            assert statement["Resource"] == {"Fn::GetAtt": [key_id, "Arn"]}, name
        environment = function_of(synth, name)[1]["Properties"]["Environment"]["Variables"]
        assert ("GATEWAY_KMS_KEY_ID" in environment) is bool(access_for(name).kms), name
    assert access_for("gateway").kms == ("kms:Encrypt",)
    assert access_for("gateway_runtime").kms == ("kms:Decrypt",)
    assert access_for("webhook_delivery").kms == ("kms:Decrypt",)


def test_no_wildcard_resources_beyond_index_arns(synth: Synth) -> None:
    allowed_on_star = {"xray:PutTraceSegments", "xray:PutTelemetryRecords", "dynamodb:ListStreams"}
    # CDK's BucketDeployment role (s3:GetObject* etc. on the asset and web UI buckets) is checked by cdk-nag.
    for policy in own_resources(synth, "AWS::IAM::Policy").values():
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
            actions = {statement["Action"]} if isinstance(statement["Action"], str) else set(statement["Action"])
            assert not any(a.endswith("*") for a in actions), statement
            resources = statement["Resource"] if isinstance(statement["Resource"], list) else [statement["Resource"]]
            for resource in resources:
                if resource == "*":
                    assert actions <= allowed_on_star, statement
                elif isinstance(resource, dict) and "Fn::Join" in resource:
                    suffix = resource["Fn::Join"][1][-1]
                    if actions == {"lambda:InvokeFunction"}:
                        # A sibling's live alias (its ARN spelled from the function's name), no other version.
                        assert suffix == f":{LIVE_ALIAS}", statement
                        continue
                    if actions == {"execute-api:Invoke"}:
                        # The job worker drives this stack's own API (every route of it), nothing else.
                        assert {"Ref": synth.logical_id(synth.stack.api.api)} in resource["Fn::Join"][1] and suffix == "/*", statement
                        continue
                    # A prefix, or trace archives: one object name under the artifact prefix (permissions.TRACE_ARCHIVES).
                    archives = suffix == f"/{TRACE_ARCHIVES}*"
                    assert suffix == "/index/*" or re.fullmatch(r"/[a-z_-]+/\*", suffix) or archives, statement
                    if suffix != "/index/*":
                        assert all(a.startswith("s3:") for a in actions), statement


# --- bootstrap and outputs --------------------------------------------------------------------------


def test_bootstrap_custom_resource_names_the_bootstrap_items(synth: Synth) -> None:
    from serverless_mlflow.http.bootstrap import bootstrap_items

    ((_, resource),) = synth.resources("Custom::MlflowBootstrapItems").items()
    props = resource["Properties"]
    assert props["Keys"] == [f"{item[schema.PK]}|{item[schema.SK]}" for item in bootstrap_items()]
    assert props["TableName"] == {"Ref": synth.logical_id(synth.stack.table)}
    assert props["ServiceToken"] == {"Ref": synth.logical_id(synth.stack.bootstrap.function.alias)}


def _without_code_hashes(template: dict[str, Any]) -> dict[str, Any]:
    """The template minus code asset hashes: functions/ and layers/ change whenever someone edits them."""
    copy = json.loads(json.dumps(template))
    for resource in copy["Resources"].values():
        for prop in ("Code", "Content"):
            if resource["Type"] in ("AWS::Lambda::Function", "AWS::Lambda::LayerVersion") and prop in resource["Properties"]:
                resource["Properties"][prop]["S3Key"] = "<code>"
    return copy


def test_template_is_deterministic(synth: Synth, tmp_path: Path) -> None:
    # Bootstrap items carry timestamps: the template must not (every deploy would update the resource).
    again = Synth(tmp_path)
    assert _without_code_hashes(again.json) == _without_code_hashes(synth.json)
    # The code assets too (content hashes: the layer and worker as built from the locks, each function's package).
    assert again.json == synth.json


def test_layer_hash_depends_on_content_only(synth: Synth, tmp_path: Path) -> None:
    import os
    import shutil

    ((_, layer),) = own_resources(synth, "AWS::Lambda::LayerVersion").items()
    staged = synth.asset_dir(layer["Properties"]["Content"]["S3Key"]) / "python" / "serverless_mlflow"
    copy = tmp_path / "copy"
    shutil.copytree(staged, copy)
    for path in copy.rglob("*"):
        os.utime(path, (1, 1))  # different mtimes, same bytes
    assert assets.content_hash(copy) == assets.content_hash(staged)
    init_copy = copy / "__init__.py"  # stands wherever the layer's modules move
    init_copy.write_bytes(init_copy.read_bytes() + b"\n# changed\n")
    assert assets.content_hash(copy) != assets.content_hash(staged)


# --- monitoring -------------------------------------------------------------------------------------


def nested_template(nested: cdk.NestedStack) -> dict[str, Any]:
    return assertions.Template.from_stack(nested).to_json()


def _alarm_names(synth: Synth) -> set[str]:
    return set(synth.stack.monitoring.alarms)


BASIC_ALARMS = {
    *(f"{stem}DeadLetters" for stem in ("Indexer", "Webhook", "Job", "Traces")),
    "IndexerIteratorAge",
    "WebhookEventsIteratorAge",
    "JobsOldestMessage",
    "WebhookDeliveriesOldestMessage",
    "ApiServerErrorRate",
    "TableThrottles",
    "LambdaThrottles",
    "WorkerErrors",
    *(f"{stem}NearTimeout" for stem in ("Indexer", "WebhookEvents", "JobWorker")),
}


def test_basic_alarms_cover_dead_letters_stream_lag_queue_age_5xx_throttles_and_timeouts(synth: Synth) -> None:
    assert synth.stack.config.monitoring == "basic" and _alarm_names(synth) == BASIC_ALARMS
    template = nested_template(synth.stack.monitoring)
    alarms = {k: v for k, v in template["Resources"].items() if v["Type"] == "AWS::CloudWatch::Alarm"}
    assert len(alarms) == len(BASIC_ALARMS)
    (topic_id,) = [k for k, v in template["Resources"].items() if v["Type"] == "AWS::SNS::Topic"]
    for alarm in alarms.values():
        props = alarm["Properties"]
        assert props["TreatMissingData"] == "notBreaching" and props["AlarmDescription"]
        # Every alarm reaches someone: the stack's topic (its ARN is an output), with or without an e-mail.
        assert props["AlarmActions"] == props["OKActions"] == [{"Ref": topic_id}]
    by_name = {
        name: template["Resources"][synth.stack.monitoring.get_logical_id(alarm.node.default_child)]
        for name, alarm in synth.stack.monitoring.alarms.items()
    }
    dlq = by_name["IndexerDeadLetters"]["Properties"]
    assert dlq["MetricName"] == "ApproximateNumberOfMessagesVisible" and dlq["Threshold"] == 1
    assert by_name["JobsOldestMessage"]["Properties"]["MetricName"] == "ApproximateAgeOfOldestMessage"
    assert by_name["WebhookEventsIteratorAge"]["Properties"]["MetricName"] == "IteratorAge"
    near = by_name["JobWorkerNearTimeout"]["Properties"]
    assert near["MetricName"] == "Duration" and near["Statistic"] == "Maximum" and near["Threshold"] == 0.8 * 900 * 1000
    rate = by_name["ApiServerErrorRate"]["Properties"]
    assert [m["Expression"] for m in rate["Metrics"] if "Expression" in m] == ["IF(requests > 0, 100 * errors / requests, 0)"]
    # basic: no dashboard ($3 a month); the alarm topic is an output of the parent stack.
    assert not [r for r in template["Resources"].values() if r["Type"] == "AWS::CloudWatch::Dashboard"]
    assert "AlarmTopicArn" in synth.json["Outputs"] and "DashboardName" not in synth.json["Outputs"]
    assert not synth.resources("AWS::CloudWatch::Alarm"), "alarms live in the monitoring nested stack"


def test_full_monitoring_adds_per_function_failures_and_timeouts_and_the_dashboard(largest: Synth) -> None:
    names = _alarm_names(largest)
    for name in [*ALL_FUNCTIONS, "gateway_stream", "authorizer"]:
        stem = "".join(p.capitalize() for p in name.split("_"))
        assert {f"{stem}Failures", f"{stem}NearTimeout"} <= names, name
    assert BASIC_ALARMS - {"LambdaThrottles", "WorkerErrors"} <= names
    assert "DashboardName" in largest.json["Outputs"]
    template = nested_template(largest.stack.monitoring)
    assert [r for r in template["Resources"].values() if r["Type"] == "AWS::CloudWatch::Dashboard"]


def test_alarm_email_subscribes_to_the_tls_only_topic(open_synth: Synth) -> None:
    template = nested_template(open_synth.stack.monitoring)
    (subscription,) = [r for r in template["Resources"].values() if r["Type"] == "AWS::SNS::Subscription"]
    assert subscription["Properties"]["Protocol"] == "email" and subscription["Properties"]["Endpoint"] == "ops@example.com"
    (policy,) = [r for r in template["Resources"].values() if r["Type"] == "AWS::SNS::TopicPolicy"]
    statements = policy["Properties"]["PolicyDocument"]["Statement"]
    assert any(s["Effect"] == "Deny" and s["Condition"] == {"Bool": {"aws:SecureTransport": "false"}} for s in statements)


def test_alarm_topic_arn_from_context_is_notified_too(variant_synth: Synth) -> None:
    arn = variant_synth.app.node.try_get_context("alarm_topic_arn")
    assert arn == "arn:aws:sns:eu-west-1:123456789012:ops"
    template = nested_template(variant_synth.stack.monitoring)
    (topic_id,) = [k for k, v in template["Resources"].items() if v["Type"] == "AWS::SNS::Topic"]
    for resource in template["Resources"].values():
        if resource["Type"] == "AWS::CloudWatch::Alarm":
            assert resource["Properties"]["AlarmActions"] == [{"Ref": topic_id}, arn]


def test_context_origins_and_version_expiry(open_synth: Synth) -> None:
    bucket = open_synth.json["Resources"][open_synth.logical_id(open_synth.stack.artifacts.bucket)]["Properties"]
    (cors,) = bucket["CorsConfiguration"]["CorsRules"]
    assert cors["AllowedOrigins"][1:] == ["https://ui.example.com", "https://other.example.com"]
    (noncurrent,) = [r for r in bucket["LifecycleConfiguration"]["Rules"] if "NoncurrentVersionExpiration" in r]
    assert noncurrent["NoncurrentVersionExpiration"] == {"NoncurrentDays": 7}


def test_outputs(synth: Synth) -> None:
    outputs = synth.json["Outputs"]
    assert {"ApiUrl", "TableName", "BucketName", "DeadLetterQueueUrl", "AlarmTopicArn", "TracesFailureQueueUrl"} <= set(outputs)
    # No trailing slash: the value is used as MLFLOW_TRACKING_URI as is.
    assert outputs["ApiUrl"]["Value"] == {"Fn::GetAtt": [synth.logical_id(synth.stack.api.api), "ApiEndpoint"]}


def test_context_is_validated() -> None:
    with pytest.raises(ValueError, match="authorization"):
        StackConfig(authorization="cognito")
    with pytest.raises(ValueError, match="auth_default_permission"):
        StackConfig(authorization="basic", auth_default_permission="ADMIN")
    with pytest.raises(ValueError, match="log_retention_days"):
        _ = StackConfig(log_retention_days=12).log_retention
    with pytest.raises(ValueError, match="noncurrent_version_days"):
        StackConfig(noncurrent_version_days=0)
    with pytest.raises(ValueError, match="alarm_topic_arn"):
        StackConfig(alarm_topic_arn="ops-topic")


# --- cdk-nag ---------------------------------------------------------------------------------------

NAG_ID = re.compile(r"AwsSolutions-.*|Serverless-.*")


@pytest.mark.parametrize("pack", [AwsSolutionsChecks, ServerlessChecks], ids=["AwsSolutions", "Serverless"])
@pytest.mark.parametrize("which", ["iam", "none", "largest"])
def test_cdk_nag_has_no_unacknowledged_findings(synth: Synth, open_synth: Synth, largest: Synth, pack: type, which: str) -> None:
    # largest: basic auth, full monitoring and the canary's nested stack.
    stack = {"iam": synth, "none": open_synth, "largest": largest}[which].stack
    report = pack().validate_scope(stack)
    findings = [
        f"{violation.rule_name} ({violation.severity}) at {[r.construct_path for r in violation.violating_resources]}"
        for violation in report.violations
        if NAG_ID.fullmatch(violation.rule_name)
    ]
    assert report.success and not findings, "\n".join(findings)


def _acknowledgements(scope: cdk.Stack) -> list[tuple[str, str]]:
    """(rule id, reason) of every Validations.acknowledge() in the stack (recorded as construct metadata)."""
    out = []
    for construct in scope.node.find_all():
        for entry in construct.node.metadata:
            if entry.type == cdk.Validations.ACKNOWLEDGED_RULES_METADATA_KEY:
                out.extend(
                    (rule_id.split("::", 1)[-1] if rule_id.startswith("Annotation::") else rule_id, reason)
                    for rule_id, reason in entry.data.items()
                )
    return out


def test_every_acknowledgement_is_specific_and_justified(synth: Synth, open_synth: Synth) -> None:
    acknowledgements = _acknowledgements(synth.stack) + _acknowledgements(open_synth.stack)
    assert len(acknowledgements) > 10
    for rule_id, reason in acknowledgements:
        assert NAG_ID.fullmatch(rule_id), rule_id
        # A whole-rule IAM5 acknowledgement would hide new wildcards: each one names its resource (or action).
        if rule_id.startswith("AwsSolutions-IAM5"):
            assert "[Resource::" in rule_id or "[Action::" in rule_id, rule_id
        assert len(reason) >= 60, f"reason too vague for {rule_id}: {reason!r}"


def test_cdk_nag_packs_do_flag_an_unacknowledged_wildcard() -> None:
    # Guards the test above: the packs run through validate_scope and report what is not acknowledged.
    app = cdk.App()
    stack = cdk.Stack(app, "NagCanary")
    role = cdk.aws_iam.Role(stack, "Role", assumed_by=cdk.aws_iam.ServicePrincipal("lambda.amazonaws.com"))
    role.add_to_policy(cdk.aws_iam.PolicyStatement(actions=["dynamodb:GetItem"], resources=["*"]))
    report = AwsSolutionsChecks().validate_scope(stack)
    assert not report.success
    assert "AwsSolutions-IAM5[Resource::*]" in {violation.rule_name for violation in report.violations}


def _reached_layer_modules(feature: str) -> set[str]:
    """Layer modules (``serverless_mlflow.*``) a feature's package imports, directly or through the layer."""
    import ast

    layer_root = infra.LAYER_PYTHON_DIR

    def imports_of(path: Path, package: str) -> set[str]:
        out: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                out.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    base = ".".join([*package.split(".")[: len(package.split(".")) - node.level + 1], *([base] if base else [])])
                out.add(base)
                out.update(f"{base}.{alias.name}" for alias in node.names)
        return {name for name in out if name.startswith("serverless_mlflow")}

    def module_file(name: str) -> Path | None:
        candidate = layer_root / Path(*name.split("."))
        for path in (candidate.with_suffix(".py"), candidate / "__init__.py"):
            if path.is_file():
                return path
        return None

    seen: set[str] = set()
    pending = set().union(*(imports_of(p, feature) for p in (infra.FUNCTIONS_DIR / feature).rglob("*.py")))
    while pending:
        name = pending.pop()
        path = module_file(name)
        if name in seen or path is None:
            continue
        seen.add(name)
        pending |= imports_of(path, name if path.name == "__init__.py" else name.rpartition(".")[0])
    return seen


# Features that reach the table module only through the shared resolver's basic-auth enforcement, which answers
# their (public) operations without a read: granting them table access would only widen their role.
_TABLE_FREE_BY_DESIGN: dict[str, str] = {}


@pytest.mark.parametrize("feature", ALL_FUNCTIONS)
def test_declared_access_covers_what_the_feature_code_imports(feature: str) -> None:
    # IAM is not enforced locally: a feature that starts using the table or the bucket without a
    # declaration in infra/permissions.py would only fail once deployed. Catch it here instead.
    if not (infra.FUNCTIONS_DIR / feature).is_dir():
        pytest.skip(f"functions/{feature} does not exist yet")
    reached = _reached_layer_modules(feature)
    access = access_for(feature)
    if "serverless_mlflow.storage.table" in reached and feature not in _TABLE_FREE_BY_DESIGN:
        assert access.table_read, f"{feature} imports serverless_mlflow.storage.table but has no table access"
    if "serverless_mlflow.storage.s3" in reached:
        assert access.bucket, f"{feature} imports serverless_mlflow.storage.s3 but has no bucket access"


_IMPORT_EVERY_HANDLER = """
import importlib, json, sys
base = list(sys.path)
results = {}
for name, code_dir, handler in json.loads(sys.argv[1]):
    sys.path[:] = [code_dir, *json.loads(sys.argv[2]), *base]
    module_name, _, attribute = handler.rpartition(".")
    try:
        module = importlib.import_module(module_name)
        results[name] = "ok" if callable(getattr(module, attribute)) else "not callable"
    except Exception as error:
        results[name] = f"{type(error).__name__}: {error}"
    for loaded in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
        del sys.modules[loaded]
print(json.dumps(results))
"""


def test_every_handler_imports_with_only_the_layer_and_the_runtime(synth: Synth, tmp_path: Path) -> None:
    """Imports each function's handler the way Lambda does: its code asset and the layer (boto3 in it) - nothing else.

    A third-party import missing from the layer (or a feature importing another feature's package)
    fails here instead of at the first request after deploy.
    """
    import os
    import subprocess
    import sys

    # The layer built for this machine from the same lock (the synthesized one holds arm64 modules); boto3 is in it.
    layer_python = assets.build_layer(assets.HOST).path / "python"
    functions = []
    for name in ALL_FUNCTIONS:
        if not (infra.FUNCTIONS_DIR / name / "handler.py").is_file():
            continue
        _, function = function_of(synth, name)
        code_dir = synth.asset_dir(function["Properties"]["Code"]["S3Key"])
        functions.append((name, str(code_dir), function["Properties"]["Handler"]))
    assert functions

    env = {
        "PATH": os.environ.get("PATH", ""),
        "AWS_DEFAULT_REGION": "us-east-1",
        "TABLE_NAME": "t",
        "BUCKET_NAME": "b",
        "POWERTOOLS_SERVICE_NAME": "import-check",
        "POWERTOOLS_TRACE_DISABLED": "true",
        "POWERTOOLS_METRICS_NAMESPACE": "MlflowServerless",
        "PYTHONDONTWRITEBYTECODE": "1",  # the built layer stays as built
    }
    # -S: no site-packages (nothing from this venv leaks in); -E: ignore PYTHON* variables.
    completed = subprocess.run(
        [sys.executable, "-S", "-E", "-c", _IMPORT_EVERY_HANDLER, json.dumps(functions), json.dumps([str(layer_python)])],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    results = json.loads(completed.stdout.strip().splitlines()[-1])
    assert results == dict.fromkeys(results, "ok"), results
