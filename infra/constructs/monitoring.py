"""Alarms (and, with ``monitoring=full``, a dashboard) in a nested stack of their own: what an operator must hear
about, sent to the stack's SNS topic, which always exists (output ``AlarmTopicArn``).

* ``basic`` (default, billed per alarm metric: ``tools/idle_cost.py``): records a consumer gave up on (four
  dead-letter queues), both stream consumers falling behind, queues whose oldest message waits too long, the
  API's 5xx rate, table throttles, Lambda throttles, and the long-running workers' duration near their timeout.
* ``full``: those, plus per function errors + throttles and duration near the timeout, and the dashboard.

An e-mail address (``alarm_email``) subscribes to the topic; an existing topic (``alarm_topic_arn``) is notified
as well. The alarms read the parent stack's resources through the nested stack's parameters (CDK adds them).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from aws_cdk import Duration, NestedStack
from aws_cdk import aws_apigatewayv2 as apigw
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as actions
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subscriptions
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from infra.config import StackConfig

PERIOD = Duration.minutes(5)
# The indexer is behind when its oldest unprocessed record is older than this (searches stay exact through
# the "not yet indexed" flags, but read more while it lags).
ITERATOR_AGE_THRESHOLD_MS = 10 * 60 * 1000
# Share of API requests answered 5xx, in percent, over a period.
SERVER_ERROR_RATE_PERCENT = 1
# A job or webhook delivery waiting this long: the worker is stuck, throttled or failing (deliveries back off
# for minutes, jobs may queue behind the worker's five concurrent ones).
OLDEST_MESSAGE_SECONDS = 60 * 60
# Duration alarms fire at this share of the function's timeout (its Maximum over a period).
NEAR_TIMEOUT = 0.8
# Workers whose duration near the timeout is alarmed in the basic set (API functions show as 5xx instead).
LONG_RUNNING = ("indexer", "webhook_events", "job_worker")


@dataclass(frozen=True)
class Watched:
    """What the alarms watch, from the parent stack."""

    api: apigw.HttpApi
    table: dynamodb.ITable
    # Every function of the stack by name (API features, workers, the streaming gateway).
    functions: Mapping[str, lambda_.Function]
    # Dead-letter queues by alarm name stem, and the queues whose oldest message's age is watched.
    dead_letters: Mapping[str, sqs.IQueue]
    queues: Mapping[str, sqs.IQueue]
    # The stream consumers (IteratorAge), by alarm name stem.
    stream_consumers: Mapping[str, lambda_.IFunction]


class Monitoring(NestedStack):
    def __init__(self, scope: Construct, construct_id: str, *, config: StackConfig, watched: Watched) -> None:
        super().__init__(scope, construct_id, description="mlflow-serverless alarms and dashboard")
        self.full = config.monitoring == "full"
        self.topic = sns.Topic(self, "AlarmTopic", display_name="mlflow-serverless alarms", enforce_ssl=True)
        if config.alarm_email:
            self.topic.add_subscription(subscriptions.EmailSubscription(config.alarm_email))
        self.actions: list[cloudwatch.IAlarmAction] = [actions.SnsAction(self.topic)]
        if config.alarm_topic_arn:
            self.actions.append(actions.SnsAction(sns.Topic.from_topic_arn(self, "ExistingTopic", config.alarm_topic_arn)))
        self.alarms: dict[str, cloudwatch.Alarm] = {}
        self.dashboard: cloudwatch.Dashboard | None = None

        for stem, queue in watched.dead_letters.items():
            self._alarm(
                f"{stem}DeadLetters",
                queue.metric_approximate_number_of_messages_visible(period=PERIOD, statistic="Maximum"),
                threshold=1,
                description=DEAD_LETTER_DESCRIPTIONS[stem],
            )
        for stem, queue in watched.queues.items():
            self._alarm(
                f"{stem}OldestMessage",
                queue.metric_approximate_age_of_oldest_message(period=PERIOD, statistic="Maximum"),
                threshold=OLDEST_MESSAGE_SECONDS,
                evaluation_periods=2,
                description=f"A message of the {stem} queue has waited over an hour: its worker is stuck, failing or throttled.",
            )
        for stem, consumer in watched.stream_consumers.items():
            self._alarm(
                f"{stem}IteratorAge",
                consumer.metric("IteratorAge", period=PERIOD, statistic="Maximum"),
                threshold=ITERATOR_AGE_THRESHOLD_MS,
                evaluation_periods=2,
                description=f"The stream consumer {stem} is more than 10 minutes behind the table's stream.",
            )
        requests = watched.api.metric_count(period=PERIOD, statistic="Sum")
        server_errors = watched.api.metric_server_error(period=PERIOD, statistic="Sum")
        self._alarm(
            "ApiServerErrorRate",
            cloudwatch.MathExpression(
                expression="IF(requests > 0, 100 * errors / requests, 0)",
                using_metrics={"requests": requests, "errors": server_errors},
                label="5xx (% of requests)",
                period=PERIOD,
            ),
            threshold=SERVER_ERROR_RATE_PERCENT,
            evaluation_periods=2,
            description="More than 1% of API requests answered 5xx for 10 minutes (failing, timed-out or throttled functions).",
        )
        # Table-wide read and write throttle events: two metrics (the per-operation ones would be eight).
        table_throttles = cloudwatch.MathExpression(
            expression="reads + writes",
            using_metrics={
                "reads": watched.table.metric("ReadThrottleEvents", period=PERIOD, statistic="Sum"),
                "writes": watched.table.metric("WriteThrottleEvents", period=PERIOD, statistic="Sum"),
            },
            label="Table throttle events",
            period=PERIOD,
        )
        self._alarm("TableThrottles", table_throttles, threshold=1, description="DynamoDB throttled requests on the table.")
        for name in LONG_RUNNING if not self.full else sorted(watched.functions):
            self._near_timeout(name, watched.functions[name])
        if self.full:
            for name, function in sorted(watched.functions.items()):
                self._failures(name, function)
        else:
            self._alarm(
                "LambdaThrottles",
                cloudwatch.Metric(namespace="AWS/Lambda", metric_name="Throttles", period=PERIOD, statistic="Sum"),
                threshold=1,
                description="Lambda throttled invocations in this account and region: this stack's functions are capped by "
                "their reserved concurrency (API functions answer 5xx, workers retry). `monitoring=full` names the function.",
            )
            self._alarm(
                "WorkerErrors",
                cloudwatch.MathExpression(
                    expression=" + ".join(f"e{i}" for i, _ in enumerate(watched.stream_consumers)),
                    using_metrics={
                        f"e{i}": function.metric_errors(period=PERIOD, statistic="Sum")
                        for i, function in enumerate(watched.stream_consumers.values())
                    },
                    label="Stream consumer errors",
                    period=PERIOD,
                ),
                threshold=1,
                description="A stream consumer failed (its batch is retried, then dead-lettered).",
            )
        if self.full:
            self._dashboard(watched, requests, server_errors, table_throttles)

    def _near_timeout(self, name: str, function: lambda_.Function) -> None:
        timeout = function.timeout or Duration.seconds(3)
        self._alarm(
            f"{_camel(name)}NearTimeout",
            function.metric_duration(period=PERIOD, statistic="Maximum"),
            threshold=int(timeout.to_milliseconds() * NEAR_TIMEOUT),
            description=f"The '{name}' function ran for over {int(NEAR_TIMEOUT * 100)}% of its {timeout.to_seconds()} s timeout.",
        )

    def _failures(self, name: str, function: lambda_.IFunction) -> None:
        self._alarm(
            f"{_camel(name)}Failures",
            cloudwatch.MathExpression(
                expression="errors + throttles",
                using_metrics={
                    "errors": function.metric_errors(period=PERIOD, statistic="Sum"),
                    "throttles": function.metric_throttles(period=PERIOD, statistic="Sum"),
                },
                label=f"{name} errors + throttles",
                period=PERIOD,
            ),
            threshold=1,
            description=f"The '{name}' function failed (unhandled error or timeout) or was throttled.",
        )

    def _dashboard(
        self, watched: Watched, requests: cloudwatch.IMetric, server_errors: cloudwatch.IMetric, table_throttles: cloudwatch.IMetric
    ) -> None:
        api, table, functions = watched.api, watched.table, watched.functions
        self.dashboard = cloudwatch.Dashboard(self, "Dashboard", default_interval=Duration.hours(3))
        self.dashboard.add_widgets(
            cloudwatch.GraphWidget(title="API requests and errors", left=[requests, api.metric_client_error(period=PERIOD), server_errors]),
            cloudwatch.GraphWidget(
                title="API latency (ms)",
                left=[api.metric_latency(period=PERIOD, statistic="p50"), api.metric_latency(period=PERIOD, statistic="p99")],
            ),
            cloudwatch.AlarmStatusWidget(title="Alarms", alarms=list(self.alarms.values())),
        )
        self.dashboard.add_widgets(
            cloudwatch.GraphWidget(
                title="Function errors",
                left=[function.metric_errors(period=PERIOD, label=name) for name, function in sorted(functions.items())],
            ),
            cloudwatch.GraphWidget(
                title="Function duration p99 (ms)",
                left=[function.metric_duration(period=PERIOD, statistic="p99", label=name) for name, function in sorted(functions.items())],
            ),
        )
        self.dashboard.add_widgets(
            cloudwatch.GraphWidget(
                title="Table capacity consumed",
                left=[table.metric_consumed_read_capacity_units(period=PERIOD), table.metric_consumed_write_capacity_units(period=PERIOD)],
            ),
            cloudwatch.GraphWidget(title="Table throttles", left=[table_throttles]),
            cloudwatch.GraphWidget(
                title="Stream consumers",
                left=[consumer.metric("IteratorAge", period=PERIOD, statistic="Maximum") for consumer in watched.stream_consumers.values()],
            ),
        )

    def _alarm(self, name: str, metric: cloudwatch.IMetric, *, threshold: float, description: str, evaluation_periods: int = 1) -> None:
        alarm = metric.create_alarm(
            self,
            name,
            alarm_description=description,
            threshold=threshold,
            evaluation_periods=evaluation_periods,
            comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
            # No traffic is the normal idle state, not a reason to alarm.
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
        )
        alarm.add_alarm_action(*self.actions)
        alarm.add_ok_action(*self.actions)
        self.alarms[name] = alarm


DEAD_LETTER_DESCRIPTIONS = {
    "Indexer": "Stream records a consumer gave up on are waiting in the stream dead-letter queue: see docs/indexer.md, "
    "then `make reindex` after fixing the cause.",
    "Webhook": "Webhook deliveries failed for good (receiver refused, unreachable after every retry, or a blocked address): "
    "the messages in the webhooks' dead-letter queue say which and why (attribute 'reason').",
    "Job": "Server-side jobs failed for good after their retries (or their worker stopped every time): the job ids are in "
    "the jobs' dead-letter queue; GET /ajax-api/3.0/jobs/<id> shows each one's error.",
    "Traces": "Gateway usage traces the traces function failed to record after Lambda's retries: the events are in the "
    "traces' failure queue (the invocation's request and error).",
}


def _camel(name: str) -> str:
    return "".join(part.capitalize() for part in name.split("_"))
