"""The registry events pipeline in the synthesized stack: the stream's second consumer, the delivery queue and
its worker, the event bus, and the rights each holds (nothing beyond its queue, bus and key)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.infra.test_stack import Synth, function_of, mapping_of, policy_statements_of

pytestmark = pytest.mark.xdist_group("infra")


@pytest.fixture
def stack(synth: Synth) -> Synth:
    """The session's default synth (tests/infra/conftest.py)."""
    return synth


def _actions(statement: dict[str, Any]) -> set[str]:
    action = statement["Action"]
    return {action} if isinstance(action, str) else set(action)


def test_events_function_reads_only_outbox_inserts_from_the_stream(stack: Synth) -> None:
    _, events = function_of(stack, "webhook_events")
    mapping = mapping_of(stack, "webhook_events")["Properties"]
    assert mapping["EventSourceArn"] == {"Fn::GetAtt": [stack.logical_id(stack.stack.table), "StreamArn"]}
    assert mapping["FunctionResponseTypes"] == ["ReportBatchItemFailures"] and mapping["BisectBatchOnFunctionError"] is True
    assert mapping["DestinationConfig"]["OnFailure"]["Destination"] == {
        "Fn::GetAtt": [stack.logical_id(stack.stack.indexer.dead_letter_queue), "Arn"]
    }
    (pattern,) = [json.loads(f["Pattern"]) for f in mapping["FilterCriteria"]["Filters"]]
    assert pattern == {"eventName": ["INSERT"], "dynamodb": {"NewImage": {"entity_type": {"S": ["registry_event"]}}}}
    variables = events["Properties"]["Environment"]["Variables"]
    assert variables["WEBHOOK_QUEUE_URL"] == {"Ref": stack.logical_id(stack.stack.registry_events.queue)}
    assert variables["EVENT_BUS_NAME"] == {"Ref": stack.logical_id(stack.stack.registry_events.bus)}


def test_delivery_queue_redrives_to_its_dead_letters_and_feeds_the_worker(stack: Synth) -> None:
    queue_id = stack.logical_id(stack.stack.registry_events.queue)
    dead_id = stack.logical_id(stack.stack.registry_events.dead_letter_queue)
    queue = stack.json["Resources"][queue_id]["Properties"]
    assert queue["RedrivePolicy"] == {"deadLetterTargetArn": {"Fn::GetAtt": [dead_id, "Arn"]}, "maxReceiveCount": 6}
    _, delivery = function_of(stack, "webhook_delivery")
    assert queue["VisibilityTimeout"] >= 6 * delivery["Properties"]["Timeout"]
    mapping = mapping_of(stack, "webhook_delivery")["Properties"]
    assert mapping["EventSourceArn"] == {"Fn::GetAtt": [queue_id, "Arn"]}
    assert mapping["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    variables = delivery["Properties"]["Environment"]["Variables"]
    assert variables["MLFLOW_WEBHOOK_ALLOWED_SCHEMES"] == "https" and variables["MLFLOW_WEBHOOK_ALLOW_PRIVATE_IPS"] == "false"


def test_queue_and_bus_rights_are_each_functions_own(stack: Synth) -> None:
    queue = {"Fn::GetAtt": [stack.logical_id(stack.stack.registry_events.queue), "Arn"]}
    dead = {"Fn::GetAtt": [stack.logical_id(stack.stack.registry_events.dead_letter_queue), "Arn"]}
    bus = {"Fn::GetAtt": [stack.logical_id(stack.stack.registry_events.bus), "Arn"]}

    def rights(name: str, prefix: str) -> list[tuple[set[str], Any]]:
        return [(_actions(s), s["Resource"]) for s in policy_statements_of(stack, name) if any(a.startswith(prefix) for a in _actions(s))]

    # The delivery queue, and the stream's dead-letter queue (the event source mapping's on-failure destination).
    stream_dead = {"Fn::GetAtt": [stack.logical_id(stack.stack.indexer.dead_letter_queue), "Arn"]}
    events_sqs = rights("webhook_events", "sqs:")
    sent_to = [
        r
        for actions, resources in events_sqs
        if "sqs:SendMessage" in actions
        for r in (resources if isinstance(resources, list) else [resources])
    ]
    assert queue in sent_to and all(r in (queue, stream_dead) for r in sent_to)
    assert rights("webhook_events", "events:") == [({"events:PutEvents"}, bus)]
    delivery_sqs = rights("webhook_delivery", "sqs:")
    assert {str(resource) for _, resource in delivery_sqs} == {str(queue), str(dead)}
    assert any("sqs:SendMessage" in actions for actions, resource in delivery_sqs if resource == dead)
    assert not any("sqs:SendMessage" in actions for actions, resource in delivery_sqs if resource == queue)
    for name in (n for n in ("webhooks", "webhook_delivery", "indexer", "runs", "registry")):
        assert not rights(name, "events:"), name
    for name in ("webhooks", "registry"):
        assert not rights(name, "sqs:SendMessage"), name
    # runs submits prompt-optimization jobs: it sends to the jobs queue only, never to the webhook queues.
    jobs_queue = {"Fn::GetAtt": [stack.logical_id(stack.stack.jobs.queue), "Arn"]}
    assert all(resource == jobs_queue for _, resource in rights("runs", "sqs:SendMessage"))


def test_an_existing_bus_is_used_when_the_context_names_one(variant_synth: Synth) -> None:
    assert not variant_synth.resources("AWS::Events::EventBus")
    _, events = function_of(variant_synth, "webhook_events")
    assert events["Properties"]["Environment"]["Variables"]["EVENT_BUS_NAME"] == "team-events"
