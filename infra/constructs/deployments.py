"""Opt-in canary releases (context ``canary=true``), in a nested stack of their own: each function's ``live`` alias
moves to the new version through CodeDeploy, 10% of invocations for 5 minutes, then all; an alarm on the
alias's errors during that time rolls the alias back to the previous version.

Without the context every deploy moves the aliases at once (no CodeDeploy resources, no alarms to pay for).
"""

from __future__ import annotations

from collections.abc import Mapping

from aws_cdk import CfnCodeDeployLambdaAliasUpdate, CfnResource, CfnUpdatePolicy, Duration, NestedStack, Stack
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_codedeploy as codedeploy
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

DEPLOYMENT_CONFIG = codedeploy.LambdaDeploymentConfig.CANARY_10_PERCENT_5_MINUTES


class CanaryDeployments(NestedStack):
    def __init__(self, scope: Construct, construct_id: str, *, aliases: Mapping[str, lambda_.Alias]) -> None:
        super().__init__(scope, construct_id, description="mlflow-serverless canary deployments (CodeDeploy, alarm rollback)")
        # Named: each alias's UpdatePolicy (in the parent stack) must name its application and group, and
        # CloudFormation resolves no reference into a nested stack there.
        prefix = Stack.of(scope).stack_name
        self.application = codedeploy.LambdaApplication(self, "Application", application_name=f"{prefix}-canary")
        # One service role for every deployment group (CodeDeploy's managed policy for Lambda deployments).
        self.role = iam.Role(
            self,
            "DeployRole",
            assumed_by=iam.ServicePrincipal("codedeploy.amazonaws.com"),
            managed_policies=[iam.ManagedPolicy.from_aws_managed_policy_name("service-role/AWSCodeDeployRoleForLambdaLimited")],
        )
        self.alarms: dict[str, cloudwatch.Alarm] = {}
        self.groups: dict[str, codedeploy.LambdaDeploymentGroup] = {}
        for name, alias in sorted(aliases.items()):
            stem = "".join(part.capitalize() for part in name.split("_"))
            errors = alias.metric_errors(period=Duration.minutes(1), statistic="Sum")
            self.alarms[name] = errors.create_alarm(
                self,
                f"{stem}CanaryErrors",
                alarm_description=f"The '{name}' function's live alias failed during a canary deployment: CodeDeploy rolls it back.",
                threshold=1,
                evaluation_periods=1,
                comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
                treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
            )
            group_name = f"{prefix}-{name}"
            self.groups[name] = codedeploy.LambdaDeploymentGroup(
                self,
                f"{stem}Deployment",
                deployment_group_name=group_name,
                application=self.application,
                alias=alias,
                deployment_config=DEPLOYMENT_CONFIG,
                alarms=[self.alarms[name]],
                role=self.role,
                auto_rollback=codedeploy.AutoRollbackConfig(failed_deployment=True, stopped_deployment=True, deployment_in_alarm=True),
            )
            alias_resource = alias.node.default_child
            assert isinstance(alias_resource, CfnResource)
            alias_resource.cfn_options.update_policy = CfnUpdatePolicy(
                code_deploy_lambda_alias_update=CfnCodeDeployLambdaAliasUpdate(
                    application_name=f"{prefix}-canary", deployment_group_name=group_name
                )
            )
            # The group exists before CloudFormation updates the alias through it.
            alias_resource.add_resource_dependency(self.nested_stack_resource)  # type: ignore[arg-type]
