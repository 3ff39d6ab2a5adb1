"""Registry events: the table's stream -> ``webhook_events`` -> EventBridge and an SQS queue -> ``webhook_delivery``.

* The events function is the stream's second consumer (the indexer is the first; a DynamoDB stream serves
  two without throttling). Its filter passes only inserts of ``registry_event`` items, the outbox that every
  registry change writes in its own transaction. Failed records are retried, then their coordinates go to the
  indexer's dead-letter queue (one queue for "stream records a consumer gave up on").
* One SQS message per (event, webhook). The delivery function backs off on its own (a message's visibility
  is set per attempt) and SQS moves a message to the webhooks' dead-letter queue after ``MAX_RECEIVES``.
* The same events go to an EventBridge bus: the one named by the ``event_bus_name`` context, or one the stack
  creates, so CodePipeline, Step Functions or SageMaker deployments can follow "alias champion moved".
"""

from __future__ import annotations

from typing import Any

from aws_cdk import Duration
from aws_cdk import aws_events as events
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_event_sources as sources
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from infra.constructs.functions import ServerlessFunction, SharedResources, feature_code
from infra.constructs.indexer import MAX_RECORD_AGE, RETRY_ATTEMPTS
from serverless_mlflow.storage import schema

EVENTS_FUNCTION = "webhook_events"
DELIVERY_FUNCTION = "webhook_delivery"
# Delivery attempts before a message moves to the dead-letter queue (local/webhooks.py MAX_RECEIVES).
MAX_RECEIVES = 6
# MLFLOW_WEBHOOK_REQUEST_TIMEOUT (30 s) plus the function's own work.
DELIVERY_TIMEOUT = Duration.seconds(40)
EVENTS_TIMEOUT = Duration.seconds(60)
# Reserved concurrency: the stream's second consumer (one invocation per shard with outbox inserts) and the
# deliveries (as many as their event source's maximum concurrency).
EVENTS_CONCURRENCY = 10
DELIVERY_CONCURRENCY = 10


def outbox_filters() -> list[dict[str, Any]]:
    return [
        lambda_.FilterCriteria.filter({"eventName": ["INSERT"], "dynamodb": {"NewImage": {schema.ENTITY_TYPE: {"S": ["registry_event"]}}}})
    ]


class RegistryEvents(Construct):
    def __init__(
        self, scope: Construct, construct_id: str, *, shared: SharedResources, stream_dead_letters: sqs.IQueue, settings: dict[str, str]
    ) -> None:
        super().__init__(scope, construct_id)
        config = shared.config
        self.bus: events.IEventBus
        if config.event_bus_name.startswith("arn:"):
            self.bus = events.EventBus.from_event_bus_arn(self, "Bus", config.event_bus_name)
        elif config.event_bus_name:
            self.bus = events.EventBus.from_event_bus_name(self, "Bus", config.event_bus_name)
        else:
            self.bus = events.EventBus(self, "Bus", description="mlflow-serverless registry events (the webhook events, for AWS consumers)")
        self.dead_letter_queue = sqs.Queue(
            self, "DeliveryDeadLetters", encryption=sqs.QueueEncryption.SQS_MANAGED, enforce_ssl=True, retention_period=Duration.days(14)
        )
        self.queue = sqs.Queue(
            self,
            "Deliveries",
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
            retention_period=Duration.days(4),
            # Lambda's guidance: at least six times the function's timeout.
            visibility_timeout=Duration.seconds(DELIVERY_TIMEOUT.to_seconds() * 6),
            dead_letter_queue=sqs.DeadLetterQueue(queue=self.dead_letter_queue, max_receive_count=MAX_RECEIVES),
        )
        self.events_function = ServerlessFunction(
            self,
            "Dispatcher",
            name=EVENTS_FUNCTION,
            code=feature_code(EVENTS_FUNCTION),
            handler=f"{EVENTS_FUNCTION}.handler.lambda_handler",
            shared=shared,
            memory_size=256,
            timeout=EVENTS_TIMEOUT,
            description="mlflow-serverless registry events -> EventBridge and webhook deliveries",
            environment={"WEBHOOK_QUEUE_URL": self.queue.queue_url, "EVENT_BUS_NAME": self.bus.event_bus_name},
            reserved_concurrency=config.reserved(EVENTS_CONCURRENCY),
        )
        self.events_function.alias.add_event_source(
            sources.DynamoEventSource(
                shared.table,
                starting_position=lambda_.StartingPosition.TRIM_HORIZON,
                batch_size=100,
                report_batch_item_failures=True,
                bisect_batch_on_error=True,
                retry_attempts=RETRY_ATTEMPTS,
                max_record_age=MAX_RECORD_AGE,
                on_failure=sources.SqsDlq(stream_dead_letters),
                filters=outbox_filters(),
            )
        )
        self.queue.grant_send_messages(self.events_function.role)
        self.bus.grant_put_events_to(self.events_function.role)

        self.delivery_function = ServerlessFunction(
            self,
            "Delivery",
            name=DELIVERY_FUNCTION,
            code=feature_code(DELIVERY_FUNCTION),
            handler=f"{DELIVERY_FUNCTION}.handler.lambda_handler",
            shared=shared,
            memory_size=256,
            timeout=DELIVERY_TIMEOUT,
            description="mlflow-serverless webhook deliveries (signed as MLflow signs them)",
            environment={
                "WEBHOOK_QUEUE_URL": self.queue.queue_url,
                "WEBHOOK_DEAD_LETTER_QUEUE_URL": self.dead_letter_queue.queue_url,
                **settings,
            },
            reserved_concurrency=config.reserved(DELIVERY_CONCURRENCY),
        )
        self.delivery_function.alias.add_event_source(
            sources.SqsEventSource(self.queue, batch_size=10, report_batch_item_failures=True, max_concurrency=DELIVERY_CONCURRENCY)
        )
        self.queue.grant(self.delivery_function.role, "sqs:ChangeMessageVisibility")
        self.dead_letter_queue.grant_send_messages(self.delivery_function.role)
