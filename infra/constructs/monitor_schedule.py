"""GenAI monitoring that runs by itself: the ``monitor`` function on an EventBridge Scheduler schedule (every
minute, as MLflow's periodic online-scoring task), submitting online scoring jobs to the jobs queue
(``serverless_mlflow.jobs.online_scoring``). The schedule's role may invoke that function and nothing else."""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_iam as iam
from aws_cdk import aws_scheduler as scheduler
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from infra.constructs.functions import ServerlessFunction, SharedResources, feature_code

FUNCTION = "monitor"
RATE = "rate(1 minute)"


class MonitorSchedule(Construct):
    def __init__(self, scope: Construct, construct_id: str, *, shared: SharedResources, job_queue: sqs.IQueue) -> None:
        super().__init__(scope, construct_id)
        self.function = ServerlessFunction(
            self,
            "Function",
            name=FUNCTION,
            code=feature_code(FUNCTION),
            handler=f"{FUNCTION}.handler.lambda_handler",
            shared=shared,
            memory_size=512,
            timeout=Duration.seconds(50),  # under the schedule's minute: passes never overlap for long
            description="mlflow-serverless monitor (online scoring's dispatcher, every minute)",
            environment={"JOB_QUEUE_URL": job_queue.queue_url},
            # One pass at a time: a pass slowed past its minute makes the next one wait, not run beside it.
            reserved_concurrency=shared.config.reserved(1),
        )
        # A pass throttled behind a slow one is dropped, not queued for hours: the next minute's pass resumes from
        # the same checkpoints.
        self.function.alias.configure_async_invoke(retry_attempts=0, max_event_age=Duration.seconds(60))
        job_queue.grant_send_messages(self.function.role)
        self.role = iam.Role(self, "ScheduleRole", assumed_by=iam.ServicePrincipal("scheduler.amazonaws.com"))
        # Its live alias only, as every other caller (grant_invoke would add every version and alias, ``:*``).
        self.role.add_to_principal_policy(
            iam.PolicyStatement(actions=["lambda:InvokeFunction"], resources=[self.function.alias.function_arn])
        )
        self.schedule = scheduler.CfnSchedule(
            self,
            "Schedule",
            schedule_expression=RATE,
            flexible_time_window=scheduler.CfnSchedule.FlexibleTimeWindowProperty(mode="OFF"),
            target=scheduler.CfnSchedule.TargetProperty(
                arn=self.function.alias.function_arn,
                role_arn=self.role.role_arn,
                # A missed pass is not worth replaying: the next one starts from the same checkpoints.
                retry_policy=scheduler.CfnSchedule.RetryPolicyProperty(maximum_retry_attempts=0, maximum_event_age_in_seconds=60),
            ),
        )
