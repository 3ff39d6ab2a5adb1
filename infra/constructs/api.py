"""The HTTP API: the routes of ``serverless_mlflow.http.http_api.gateway_routes()`` plus ``$default``.

That is every route of the table, plus one greedy ``ANY`` route per ``/ajax-api/`` group (the web UI's
paths; the function maps them to the ``/api/`` route), which keeps the API far below HTTP API's quota of
300 routes.

Payload format 2.0 (the event shape the local runtime also produces). ``$default`` goes to the
``meta`` feature, so an unknown route answers MLflow's ``ENDPOINT_NOT_FOUND`` JSON instead of API
Gateway's bare ``{"message": "Not Found"}``, which would break the client's fallbacks.
"""

from __future__ import annotations

import json
import re

import jsii
from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_apigateway as apigw_v1
from aws_cdk import aws_apigatewayv2 as apigw
from aws_cdk import aws_apigatewayv2_authorizers as authorizers
from aws_cdk import aws_apigatewayv2_integrations as integrations
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

from infra.config import StackConfig
from serverless_mlflow.http.http_api import GatewayRoute, gateway_routes
from serverless_mlflow.request.routes import DEFAULT_FEATURE

# How long API Gateway keeps the basic-auth authorizer's answer per Authorization header (local/authorizer.py
# emulates the same): a password change or user deletion takes effect for a cached header after at most this.
AUTHORIZER_CACHE_SECONDS = 60

# One JSON object per request (structured logging), with the fields needed to correlate a request
# with the function's Powertools logs (requestId) and to see integration failures.
ACCESS_LOG_FORMAT = json.dumps(
    {
        "requestId": "$context.requestId",
        "ip": "$context.identity.sourceIp",
        "caller": "$context.identity.caller",
        "user": "$context.identity.user",
        "userArn": "$context.identity.userArn",
        "requestTime": "$context.requestTime",
        "httpMethod": "$context.httpMethod",
        "path": "$context.path",
        "routeKey": "$context.routeKey",
        "status": "$context.status",
        "protocol": "$context.protocol",
        "responseLength": "$context.responseLength",
        "responseLatency": "$context.responseLatency",
        "integrationLatency": "$context.integrationLatency",
        "integrationStatus": "$context.integrationStatus",
        "integrationError": "$context.integrationErrorMessage",
        "authorizerError": "$context.authorizer.error",
    }
)


@jsii.implements(apigw.IAccessLogSettings)
class _AccessLogSettings:
    """IAccessLogSettings is an interface (not a struct) in jsii: Python must provide an object."""

    def __init__(self, destination: apigw.IAccessLogDestination, log_format: apigw_v1.AccessLogFormat) -> None:
        self._destination = destination
        self._format = log_format

    @property
    def destination(self) -> apigw.IAccessLogDestination:
        return self._destination

    @property
    def format(self) -> apigw_v1.AccessLogFormat:
        return self._format


def route_construct_id(route: GatewayRoute) -> str:
    """Stable construct id from the route key (order of ROUTES does not change logical ids)."""
    return "Route" + re.sub(r"[^A-Za-z0-9]+", "_", f"{route.method}{route.path}").strip("_")


class MlflowHttpApi(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        functions: dict[str, lambda_.IFunction],
        config: StackConfig,
        basic_authorizer: lambda_.IFunction | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        self.iam_auth = config.iam_auth
        authorizer: apigw.IHttpRouteAuthorizer
        if config.iam_auth:
            authorizer = authorizers.HttpIamAuthorizer()
        elif config.basic_auth:
            if basic_authorizer is None:
                raise ValueError("authorization 'basic' needs the authorizer function")
            # Always allows and tells the function whether the credentials were valid (the function answers
            # 401 + WWW-Authenticate, which API Gateway cannot). Cached per Authorization header.
            authorizer = authorizers.HttpLambdaAuthorizer(
                "BasicAuthorizer",
                basic_authorizer,
                authorizer_name="mlflow-basic-auth",
                identity_source=["$request.header.Authorization"],
                response_types=[authorizers.HttpLambdaResponseType.SIMPLE],
                results_cache_ttl=Duration.seconds(AUTHORIZER_CACHE_SECONDS),
            )
        else:
            authorizer = apigw.HttpNoneAuthorizer()
        # Health checks, server-info and the browser's /login answer without credentials under basic auth.
        public_authorizer = apigw.HttpNoneAuthorizer() if config.basic_auth else authorizer

        # One integration per feature. The invoke permission is scoped to this API (not per route):
        # one resource-policy statement per function instead of one per route.
        feature_integrations = {
            feature: integrations.HttpLambdaIntegration(f"{feature}Integration", function, scope_permission_to_route=False)
            for feature, function in functions.items()
        }
        # $default is invoked with source ARN <api>/<stage>/$default (two segments), which the API-scoped
        # permission (<api>/*/*/*) does not cover: this integration gets a route-scoped one (<api>/*/*).
        default_integration = integrations.HttpLambdaIntegration("DefaultRouteIntegration", functions[DEFAULT_FEATURE])

        self.api = apigw.HttpApi(
            self,
            "HttpApi",
            description="MLflow tracking server and model registry (mlflow-serverless)",
            create_default_stage=False,
            default_integration=default_integration,
            default_authorizer=authorizer,
        )
        # Kept after the stack goes: the record of who called the API (an audit trail) outlives the API.
        self.access_logs = logs.LogGroup(self, "AccessLogs", retention=config.log_retention, removal_policy=RemovalPolicy.RETAIN)
        self.stage = apigw.HttpStage(
            self,
            "DefaultStage",
            http_api=self.api,
            stage_name="$default",
            auto_deploy=True,
            throttle=apigw.ThrottleSettings(rate_limit=config.throttle_rate, burst_limit=config.throttle_burst),
            access_log_settings=_AccessLogSettings(
                apigw.LogGroupLogDestination(self.access_logs),
                apigw_v1.AccessLogFormat.custom(ACCESS_LOG_FORMAT),
            ),
        )
        self.routes: dict[str, apigw.HttpRoute] = {}
        for route in gateway_routes():
            self.routes[route.route_key] = apigw.HttpRoute(
                self,
                route_construct_id(route),
                http_api=self.api,
                route_key=apigw.HttpRouteKey.with_(route.path, apigw.HttpMethod[route.method]),
                integration=feature_integrations[route.feature],
                authorizer=public_authorizer if route.public else authorizer,
            )

    @property
    def url(self) -> str:
        # The $default stage serves at the API root. No trailing "/": it is MLFLOW_TRACKING_URI as is.
        return self.api.api_endpoint
