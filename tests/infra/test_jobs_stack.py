"""The jobs runner in the synthesized stack: the jobs queue and its dead-letter queue, the worker reading it one
job at a time, and the rights each function holds on them (the API sends; the worker sends and backs off)."""

from __future__ import annotations

from typing import Any

import pytest

from serverless_mlflow.jobs import job_queue
from tests.infra.test_stack import Synth, function_of, mapping_of, policy_statements_of

pytestmark = pytest.mark.xdist_group("infra")


@pytest.fixture
def stack(synth: Synth) -> Synth:
    """The session's default synth (tests/infra/conftest.py)."""
    return synth


def _sqs_rights(stack: Synth, name: str) -> list[tuple[set[str], Any]]:
    out = []
    for statement in policy_statements_of(stack, name):
        actions = {statement["Action"]} if isinstance(statement["Action"], str) else set(statement["Action"])
        if any(action.startswith("sqs:") for action in actions):
            out.append((actions, statement["Resource"]))
    return out


def test_jobs_queue_redrives_to_its_dead_letters_and_feeds_the_worker_one_job_at_a_time(stack: Synth) -> None:
    queue_id = stack.logical_id(stack.stack.jobs.queue)
    dead_id = stack.logical_id(stack.stack.jobs.dead_letter_queue)
    queue = stack.json["Resources"][queue_id]["Properties"]
    assert queue["RedrivePolicy"] == {"deadLetterTargetArn": {"Fn::GetAtt": [dead_id, "Arn"]}, "maxReceiveCount": job_queue.MAX_RECEIVES}
    _, worker = function_of(stack, "job_worker")
    assert worker["Properties"]["Timeout"] == 900
    assert queue["VisibilityTimeout"] > worker["Properties"]["Timeout"]  # never redelivered while an invocation runs it
    mapping = mapping_of(stack, "job_worker")["Properties"]
    assert mapping["EventSourceArn"] == {"Fn::GetAtt": [queue_id, "Arn"]}
    assert mapping["BatchSize"] == 1
    assert mapping["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    variables = worker["Properties"]["Environment"]["Variables"]
    assert variables["JOB_QUEUE_URL"] == {"Ref": queue_id}
    assert "JOB_SERVER_URL" in variables
    assert variables["LITELLM_LOCAL_MODEL_COST_MAP"] == "True"  # no price-map download at cold start
    _, api = function_of(stack, "jobs")
    assert api["Properties"]["Environment"]["Variables"]["JOB_QUEUE_URL"] == {"Ref": queue_id}


def test_queue_rights_are_each_functions_own(stack: Synth) -> None:
    queue = {"Fn::GetAtt": [stack.logical_id(stack.stack.jobs.queue), "Arn"]}
    (api_rights,) = _sqs_rights(stack, "jobs")
    assert api_rights[1] == queue and "sqs:SendMessage" in api_rights[0]
    assert not api_rights[0] - {"sqs:SendMessage", "sqs:GetQueueAttributes", "sqs:GetQueueUrl"}
    worker_rights = _sqs_rights(stack, "job_worker")
    # Its own queue only: send (a continuation), change visibility (a retry's backoff), and the event source's reads.
    assert {str(resource) for _, resource in worker_rights} == {str(queue)}
    granted = set().union(*(actions for actions, _ in worker_rights))
    assert {"sqs:SendMessage", "sqs:ChangeMessageVisibility", "sqs:ReceiveMessage", "sqs:DeleteMessage"} <= granted
    # The features whose routes submit MLflow's jobs (prompt optimization, issue detection) send to it, and only that.
    for name in ("runs", "review"):
        (rights,) = _sqs_rights(stack, name)
        assert rights[1] == queue and not rights[0] - {"sqs:SendMessage", "sqs:GetQueueAttributes", "sqs:GetQueueUrl"}, name
    assert not any(_sqs_rights(stack, name) for name in ("experiments", "meta"))
    # traces sends only to its own failure queue (the on-failure destination of its asynchronous invocations).
    failures = {"Fn::GetAtt": [stack.logical_id(stack.stack.features.traces_failures), "Arn"]}
    assert [resource for _, resource in _sqs_rights(stack, "traces")] == [failures]


def test_worker_may_invoke_only_this_stacks_api(stack: Synth) -> None:
    invoke = [s for s in policy_statements_of(stack, "job_worker") if s["Action"] == "execute-api:Invoke"]
    (statement,) = invoke
    # arn:...:execute-api:<region>:<account>:<this API's id>/*
    assert {"Ref": stack.logical_id(stack.stack.api.api)} in statement["Resource"]["Fn::Join"][1]
    assert statement["Resource"]["Fn::Join"][1][-1] == "/*"


def test_no_job_token_key_outside_basic_auth(stack: Synth) -> None:
    # IAM mode: the worker signs its calls with its own role (SigV4); there is no token to mint.
    assert stack.stack.job_token_key is None
    assert not stack.resources("AWS::SecretsManager::Secret")
    for function in stack.resources("AWS::Lambda::Function").values():
        assert "JOB_TOKEN_SECRET_ARN" not in function["Properties"].get("Environment", {}).get("Variables", {})


def test_custom_scorers_run_only_when_the_operator_turns_them_on(stack: Synth, variant_synth: Synth) -> None:
    """``enable_custom_scorers`` is MLflow's MLFLOW_SERVER_ENABLE_CUSTOM_SCORERS on every function (registration,
    the invoke routes and the worker that runs the code); off by default."""

    def allowed(synth: Synth) -> set[str]:
        return {
            function["Properties"]["Environment"]["Variables"]["POWERTOOLS_SERVICE_NAME"]
            for function in synth.resources("AWS::Lambda::Function").values()
            if function["Properties"].get("Environment", {}).get("Variables", {}).get("MLFLOW_SERVER_ENABLE_CUSTOM_SCORERS") == "true"
        }

    assert allowed(stack) == set()
    assert {"evaluation", "jobs", "job_worker"} <= allowed(variant_synth)
