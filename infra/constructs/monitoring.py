"""Alarms and a dashboard for what an operator must hear about: records the indexer gave up on, an indexer
falling behind the stream, server errors seen by clients, throttling, and functions failing.

Alarms notify an SNS topic when the context names one (``alarm_topic_arn``) or an e-mail address
(``alarm_email``, for a topic the stack creates); without either they still show in the console.
"""

from __future__ import annotations

from collections.abc import Mapping

from aws_cdk import Duration
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
TABLE_OPERATIONS = (
    dynamodb.Operation.GET_ITEM,
    dynamodb.Operation.BATCH_GET_ITEM,
    dynamodb.Operation.QUERY,
    dynamodb.Operation.PUT_ITEM,
    dynamodb.Operation.UPDATE_ITEM,
    dynamodb.Operation.DELETE_ITEM,
    dynamodb.Operation.BATCH_WRITE_ITEM,
    dynamodb.Operation.TRANSACT_WRITE_ITEMS,
)


class Monitoring(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: StackConfig,
        api: apigw.HttpApi,
        table: dynamodb.Table,
        functions: Mapping[str, lambda_.IFunction],
        indexer: lambda_.IFunction,
        dead_letter_queue: sqs.IQueue,
        webhook_dead_letters: sqs.IQueue | None = None,
        job_dead_letters: sqs.IQueue | None = None,
        workers: Mapping[str, lambda_.IFunction] | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        self.topic = self._topic(config)
        self.alarms: dict[str, cloudwatch.Alarm] = {}

        dlq_depth = dead_letter_queue.metric_approximate_number_of_messages_visible(period=PERIOD, statistic="Maximum")
        self._alarm(
            "IndexerDeadLetters",
            dlq_depth,
            threshold=1,
            description="Stream records the indexer gave up on are waiting in its dead-letter queue: see docs/indexer.md, "
            "then `make reindex` after fixing the cause.",
        )
        if webhook_dead_letters is not None:
            self._alarm(
                "WebhookDeadLetters",
                webhook_dead_letters.metric_approximate_number_of_messages_visible(period=PERIOD, statistic="Maximum"),
                threshold=1,
                description="Webhook deliveries failed for good (receiver refused, unreachable after every retry, or a "
                "blocked address): the messages in the webhooks' dead-letter queue say which and why (attribute 'reason').",
            )
        if job_dead_letters is not None:
            self._alarm(
                "JobDeadLetters",
                job_dead_letters.metric_approximate_number_of_messages_visible(period=PERIOD, statistic="Maximum"),
                threshold=1,
                description="Server-side jobs failed for good after their retries (or their worker stopped every time): "
                "the job ids are in the jobs' dead-letter queue; GET /ajax-api/3.0/jobs/<id> shows each one's error.",
            )
        iterator_age = indexer.metric("IteratorAge", period=PERIOD, statistic="Maximum")
        self._alarm(
            "IndexerIteratorAge",
            iterator_age,
            threshold=ITERATOR_AGE_THRESHOLD_MS,
            evaluation_periods=2,
            description="The stream indexer is more than 10 minutes behind the table's stream.",
        )
        requests = api.metric_count(period=PERIOD, statistic="Sum")
        server_errors = api.metric_server_error(period=PERIOD, statistic="Sum")
        error_rate = cloudwatch.MathExpression(
            expression="IF(requests > 0, 100 * errors / requests, 0)",
            using_metrics={"requests": requests, "errors": server_errors},
            label="5xx (% of requests)",
            period=PERIOD,
        )
        self._alarm(
            "ApiServerErrorRate",
            error_rate,
            threshold=SERVER_ERROR_RATE_PERCENT,
            evaluation_periods=2,
            description="More than 1% of API requests answered 5xx for 10 minutes.",
        )
        throttles = table.metric_throttled_requests_for_operations(operations=list(TABLE_OPERATIONS), period=PERIOD)
        self._alarm("TableThrottles", throttles, threshold=1, description="DynamoDB throttled requests on the table.")
        for name, function in sorted({**functions, "indexer": indexer, **(workers or {})}.items()):
            failures = cloudwatch.MathExpression(
                expression="errors + throttles",
                using_metrics={
                    "errors": function.metric_errors(period=PERIOD, statistic="Sum"),
                    "throttles": function.metric_throttles(period=PERIOD, statistic="Sum"),
                },
                label=f"{name} errors + throttles",
                period=PERIOD,
            )
            self._alarm(
                f"{_camel(name)}Failures",
                failures,
                threshold=1,
                description=f"The '{name}' function failed (unhandled error or timeout) or was throttled.",
            )

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
            cloudwatch.GraphWidget(title="Table throttles", left=[throttles]),
            cloudwatch.GraphWidget(title="Indexer", left=[iterator_age], right=[dlq_depth]),
        )

    def _topic(self, config: StackConfig) -> sns.ITopic | None:
        if config.alarm_topic_arn:
            return sns.Topic.from_topic_arn(self, "AlarmTopic", config.alarm_topic_arn)
        if config.alarm_email:
            topic = sns.Topic(self, "AlarmTopic", display_name="mlflow-serverless alarms", enforce_ssl=True)
            topic.add_subscription(subscriptions.EmailSubscription(config.alarm_email))
            return topic
        return None

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
        if self.topic is not None:
            alarm.add_alarm_action(actions.SnsAction(self.topic))
            alarm.add_ok_action(actions.SnsAction(self.topic))
        self.alarms[name] = alarm


def _camel(name: str) -> str:
    return "".join(part.capitalize() for part in name.split("_"))
