"""``make serve`` on external engines (issue #42): with ``DYNAMODB_ENDPOINT_URL`` and ``S3_ENDPOINT_URL`` naming a
DynamoDB Local and a moto server of the test's own (not the runtime's), every feature still runs: a job submitted
through the jobs API runs (it answered 500 ``KeyError: 'JOB_QUEUE_URL'``), a webhook is delivered (it was silently
never sent), and a gateway endpoint's secret is encrypted and used (KMS). The queues, the event bus and the secrets
key live in the runtime's own embedded moto server, as on plain ``make serve``."""

from __future__ import annotations

import time
from collections.abc import Iterator

import mlflow
import pytest
import requests

from local.engine import DynamoDBLocal, MotoS3
from tests.conftest import runtime_process, unique
from tests.gateway_runtime.test_runtime_e2e import LOOSE_API_BASE, _endpoint
from tests.webhooks.conftest import LOCAL_TARGETS, Receiver, serve_receiver
from tools.mock_llm import MockLLM

pytestmark = pytest.mark.e2e

# What a runtime of this test session put in the environment for its own embedded engines: an external-engine
# runtime must find its way without them.
SESSION_RESOURCES = (
    "SQS_ENDPOINT_URL",
    "EVENTS_ENDPOINT_URL",
    "KMS_ENDPOINT_URL",
    "GATEWAY_KMS_KEY_ID",
    "JOB_QUEUE_URL",
    "JOB_DEAD_LETTER_QUEUE_URL",
    "WEBHOOK_QUEUE_URL",
    "WEBHOOK_DEAD_LETTER_QUEUE_URL",
    "EVENT_BUS_NAME",
    "JOB_SERVER_URL",
    "MLFLOW_TRACKING_URI",
)


@pytest.fixture
def external_runtime() -> Iterator[str]:
    dynamodb, s3 = DynamoDBLocal().start(), MotoS3().start()
    env = {
        "DYNAMODB_ENDPOINT_URL": dynamodb.endpoint,
        "S3_ENDPOINT_URL": s3.endpoint,
        "TABLE_NAME": unique("external"),
        "BUCKET_NAME": unique("external"),
        "JOB_TEST_KINDS": "true",
        **LOCAL_TARGETS,
        **LOOSE_API_BASE,
    }
    try:
        with runtime_process(env, drop=SESSION_RESOURCES) as url:
            yield url
    finally:
        s3.stop()
        dynamodb.stop()


def test_every_feature_runs_on_external_engines(external_runtime: str) -> None:
    url = external_runtime
    # A job: submitted (200, not 500) and run by the worker.
    submitted = requests.post(f"{url}/ajax-api/3.0/jobs/", json={"job_name": "test_echo", "params": {"a": 1}}, timeout=60)
    assert submitted.status_code == 200, submitted.text
    deadline = time.monotonic() + 60
    while (job := requests.get(f"{url}/ajax-api/3.0/jobs/{submitted.json()['job_id']}", timeout=60).json())["status"] != "SUCCEEDED":
        assert job["status"] in ("PENDING", "RUNNING") and time.monotonic() < deadline, job
        time.sleep(0.2)

    # A webhook: delivered.
    receiver = Receiver()
    server = serve_receiver(receiver)
    try:
        client = mlflow.MlflowClient(url, registry_uri=url)
        client.create_webhook(name="external", url=f"{receiver.url}/hook", events=["registered_model.created"])
        model = unique("external-model")
        client.create_registered_model(model)
        (delivery,) = receiver.wait_for(lambda got: len(got) > 0)
        assert delivery.json["data"]["name"] == model
    finally:
        server.shutdown()
        server.server_close()

    # The gateway: a secret encrypted on create, decrypted for a call.
    llm = MockLLM().start()
    try:
        name = unique("external-ep")
        _endpoint(url, llm.url, name, "openai", "gpt-4o-mini")
        body = {"model": name, "messages": [{"role": "user", "content": "hello"}]}
        answer = requests.post(f"{url}/gateway/mlflow/v1/chat/completions", json=body, timeout=60)
        assert answer.status_code == 200, answer.text
        assert answer.json()["choices"][0]["message"]["content"] == "mock reply: hello"
    finally:
        llm.stop()
