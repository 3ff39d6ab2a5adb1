"""Registry events delivered to webhooks, end to end with the real client: ours against stock ``mlflow server``.

The same registry session (models, versions, tags, aliases, prompts, renames and deletes) runs against both
servers, each with a webhook subscribed to every registry event and pointing at its own local receiver.
Both receivers must get the same events with the same payloads (MLflow's envelope, signed with the webhook's
secret), and none for the changes MLflow sends none for (deletes, renames, tags of a plain model).
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

import boto3
import mlflow
import pytest
import requests
from mlflow.webhooks.delivery import _generate_hmac_signature

from serverless_mlflow.store.registry_events import VALID_ENTITY_ACTIONS
from tests.conftest import unique
from tests.webhooks.conftest import HookRuntime, Receiver, serve_receiver

pytestmark = pytest.mark.e2e

SECRET = "webhook-secret-" + os.urandom(4).hex()
EVERY_EVENT = [f"{entity}.{action}" for entity, actions in VALID_ENTITY_ACTIONS.items() for action in actions if entity != "budget_policy"]


def _client(url: str) -> mlflow.MlflowClient:
    return mlflow.MlflowClient(url, registry_uri=url)


def _registry_session(url: str, model: str, prompt: str) -> dict[str, str]:
    """The same calls on either server; returns the values that legitimately differ between servers."""
    client = _client(url)
    experiment = client.create_experiment(unique("hooks"))
    run = client.create_run(experiment)
    client.create_registered_model(model, tags={"team": "a"}, description="first")
    version = client.create_model_version(
        model, f"runs:/{run.info.run_id}/model", run_id=run.info.run_id, tags={"stage": "dev"}, description="v1"
    )
    client.set_model_version_tag(model, "1", "quality", "good")
    client.delete_model_version_tag(model, "1", "quality")
    client.set_registered_model_alias(model, "champion", "1")
    client.delete_registered_model_alias(model, "champion")
    # A plain model's tags send nothing (MLflow has no such event).
    client.set_registered_model_tag(model, "k", "v")
    client.delete_registered_model_tag(model, "k")
    mlflow.set_registry_uri(url)
    mlflow.genai.register_prompt(name=prompt, template="Hello {{name}}!", tags={"lang": "en"}, commit_message="first")
    mlflow.genai.set_prompt_alias(prompt, "prod", 1)
    mlflow.genai.set_prompt_tag(prompt, "owner", "me")
    mlflow.genai.delete_prompt_tag(prompt, "owner")
    mlflow.genai.set_prompt_version_tag(prompt, 1, "reviewed", "yes")
    mlflow.genai.delete_prompt_version_tag(prompt, 1, "reviewed")
    mlflow.genai.delete_prompt_alias(prompt, "prod")
    # Deletes and renames cascade through a model's items: MLflow sends nothing for them.
    client.delete_model_version(model, "1")
    client.rename_registered_model(model, model + "-renamed")
    client.delete_registered_model(model + "-renamed")
    return {"run_id": run.info.run_id, "source": version.source}


def _normalized(received: list[Any], differing: dict[str, str]) -> list[str]:
    out = []
    for request in received:
        body = request.json
        data = dict(body["data"])
        for field, value in differing.items():
            if data.get(field) == value:
                data[field] = f"<{field}>"
        out.append(json.dumps({"entity": body["entity"], "action": body["action"], "data": data}, sort_keys=True))
    return sorted(out)


def _check_signed(request: Any) -> None:
    headers = request.headers
    assert headers["content-type"] == "application/json"
    expected = _generate_hmac_signature(SECRET, headers["x-mlflow-delivery-id"], headers["x-mlflow-timestamp"], request.body)
    assert headers["x-mlflow-signature"] == expected


def _settled(receiver: Receiver, at_least: int) -> list[Any]:
    """Every request once at least ``at_least`` arrived and nothing more came for two seconds."""
    receiver.wait_for(lambda seen: len(seen) >= at_least)
    count = -1
    while count != len(receiver.requests):
        count = len(receiver.requests)
        time.sleep(2)
    return list(receiver.requests)


def test_same_events_and_payloads_as_mlflow(webhook_server: str, stock_webhook_server: str, receiver: Receiver) -> None:
    stock_receiver = Receiver()
    stock_http = serve_receiver(stock_receiver)
    try:
        model, prompt = unique("hook-model"), unique("hook-prompt")
        _client(stock_webhook_server).create_webhook(name="all-events", url=f"{stock_receiver.url}/hook", events=EVERY_EVENT, secret=SECRET)
        theirs = _registry_session(stock_webhook_server, model, prompt)
        stock = _settled(stock_receiver, 12)
        _client(webhook_server).create_webhook(name="all-events", url=f"{receiver.url}/hook", events=EVERY_EVENT, secret=SECRET)
        ours = _registry_session(webhook_server, model, prompt)
        delivered = _settled(receiver, len(stock))
    finally:
        stock_http.shutdown()
    assert _normalized(delivered, ours) == _normalized(stock, theirs)
    kinds = {(r.json["entity"], r.json["action"]) for r in delivered}
    assert ("registered_model", "created") in kinds and ("prompt_alias", "deleted") in kinds
    assert not any(entity == "registered_model" and action != "created" for entity, action in kinds)
    for request in delivered:
        _check_signed(request)
    # One delivery id per (event, webhook): no duplicates on a clean run.
    assert len({r.headers["x-mlflow-delivery-id"] for r in delivered}) == len(delivered)


def test_a_failing_receiver_gets_the_event_again_with_the_same_delivery_id(webhook_server: str, receiver: Receiver) -> None:
    client = _client(webhook_server)
    hook = client.create_webhook(name="flaky", url=f"{receiver.url}/flaky", events=["registered_model.created"], secret=SECRET)
    receiver.answers = [503, 500]
    name = unique("flaky-model")
    client.create_registered_model(name)
    seen = receiver.wait_for(lambda got: len([r for r in got if r.path == "/flaky"]) >= 3)
    attempts = [r for r in seen if r.path == "/flaky"]
    assert len(attempts) == 3, "two failures, then the delivery that succeeded"
    assert len({r.headers["x-mlflow-delivery-id"] for r in attempts}) == 1
    for attempt in attempts:
        _check_signed(attempt)
        assert attempt.json["data"]["name"] == name
    client.delete_webhook(hook.webhook_id)


def test_a_refused_delivery_is_dead_lettered_with_its_reason_not_retried(hook_runtime: HookRuntime, receiver: Receiver) -> None:
    client = _client(hook_runtime.url)
    hook = client.create_webhook(name="refusing", url=f"{receiver.url}/refuse", events=["registered_model.created"])
    receiver.answers = [400]
    name = unique("refused-model")
    client.create_registered_model(name)
    receiver.wait_for(lambda got: any(r.path == "/refuse" for r in got))
    sqs = boto3.client("sqs", endpoint_url=os.environ["S3_ENDPOINT_URL"])
    queue = sqs.get_queue_url(QueueName=hook_runtime.dead_letter_queue)["QueueUrl"]
    found = []
    deadline = time.monotonic() + 20
    while not found and time.monotonic() < deadline:
        answer = sqs.receive_message(QueueUrl=queue, MessageAttributeNames=["All"], WaitTimeSeconds=1, MaxNumberOfMessages=10)
        found += [m for m in answer.get("Messages", []) if json.loads(m["Body"])["webhook_id"] == hook.webhook_id]
    assert found and found[0]["MessageAttributes"]["reason"]["StringValue"] == "HTTP 400"
    time.sleep(3)  # a retry would have come by now (local backoff: 1 s)
    assert len(receiver.at("/refuse")) == 1
    client.delete_webhook(hook.webhook_id)


def test_disabled_and_unsubscribed_webhooks_get_nothing(webhook_server: str, receiver: Receiver) -> None:
    client = _client(webhook_server)
    disabled = client.create_webhook(name="off", url=f"{receiver.url}/off", events=["registered_model.created"], status="DISABLED")
    other = client.create_webhook(name="other", url=f"{receiver.url}/other", events=["prompt.created"])
    live = client.create_webhook(name="live", url=f"{receiver.url}/live", events=["registered_model.created"])
    client.create_registered_model(unique("quiet-model"))
    receiver.wait_for(lambda got: any(r.path == "/live" for r in got))
    time.sleep(2)
    assert receiver.at("/off") == [] and receiver.at("/other") == []
    for hook in (disabled, other, live):
        client.delete_webhook(hook.webhook_id)


def test_test_call_answers_as_mlflow(webhook_server: str, stock_webhook_server: str, receiver: Receiver) -> None:
    results = []
    for url in (webhook_server, stock_webhook_server):
        client = _client(url)
        hook = client.create_webhook(name="tested", url=f"{receiver.url}/test", events=["model_version_alias.created"], secret=SECRET)
        results.append(client.test_webhook(hook.webhook_id))
        client.delete_webhook(hook.webhook_id)
    ours, theirs = results
    assert (ours.success, ours.response_status, ours.response_body) == (theirs.success, theirs.response_status, theirs.response_body)
    sent = receiver.at("/test")
    assert len(sent) == 2
    assert sent[0].json["data"] == sent[1].json["data"] == {"name": "example_model", "alias": "example_alias", "version": "1"}
    for request in sent:
        _check_signed(request)


def test_registry_events_reach_the_event_bus_with_the_alias_split(hook_runtime: HookRuntime) -> None:
    """EventBridge (beyond MLflow): a rule on the stack's bus forwards every registry event to a queue."""
    webhook_server = hook_runtime.url
    endpoint = os.environ["S3_ENDPOINT_URL"]
    events, sqs = boto3.client("events", endpoint_url=endpoint), boto3.client("sqs", endpoint_url=endpoint)
    queue = sqs.create_queue(QueueName=unique("bus-target"))["QueueUrl"]
    queue_arn = sqs.get_queue_attributes(QueueUrl=queue, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    rule = unique("registry")
    events.put_rule(Name=rule, EventBusName=hook_runtime.event_bus, EventPattern=json.dumps({"source": ["mlflow-serverless"]}))
    events.put_targets(Rule=rule, EventBusName=hook_runtime.event_bus, Targets=[{"Id": "queue", "Arn": queue_arn}])

    client = _client(webhook_server)
    name = unique("canary")
    client.create_registered_model(name)
    run = client.create_run(client.create_experiment(unique("bus")))
    for _ in range(2):
        client.create_model_version(name, f"runs:/{run.info.run_id}/model", run_id=run.info.run_id)
    answer = requests.post(
        f"{webhook_server}/api/2.0/mlflow/registered-models/alias",
        json={"name": name, "alias": "champion", "version": "1", "secondary_version": "2", "secondary_version_weight": 20},
        timeout=30,
    )
    assert answer.status_code == 200, answer.text
    details: list[dict[str, Any]] = []
    deadline = time.monotonic() + 30
    while len([d for d in details if d["data"].get("name") == name]) < 4 and time.monotonic() < deadline:
        for message in sqs.receive_message(QueueUrl=queue, WaitTimeSeconds=1, MaxNumberOfMessages=10).get("Messages", []):
            details.append(json.loads(message["Body"])["detail"])
    mine = {(d["entity"], d["action"]): d for d in details if d["data"].get("name") == name}
    assert set(mine) == {("registered_model", "created"), ("model_version", "created"), ("model_version_alias", "created")}
    alias_event = mine[("model_version_alias", "created")]
    assert alias_event["data"] == {"name": name, "alias": "champion", "version": "1"}
    assert alias_event["split"] == {"secondary_version": "2", "secondary_version_weight": 20}
    assert alias_event["event_id"] and alias_event["workspace"] == "default"
