"""The monitor in the synthesized stack (issue #42): EventBridge Scheduler invokes the ``monitor`` function every
minute with a role that may invoke that function only; the function sends to the jobs queue and holds the table
rights its declaration names, no more."""

from __future__ import annotations

import pytest

from infra.permissions import access_for
from tests.infra.test_stack import Synth, function_of, policy_statements_of

pytestmark = pytest.mark.xdist_group("infra")


@pytest.fixture
def stack(synth: Synth) -> Synth:
    """The session's default synth (tests/infra/conftest.py)."""
    return synth


def _actions(statement: dict) -> set[str]:
    return {statement["Action"]} if isinstance(statement["Action"], str) else set(statement["Action"])


def test_the_schedule_invokes_the_monitor_every_minute(stack: Synth) -> None:
    _, function = function_of(stack, "monitor")
    (schedule,) = stack.resources("AWS::Scheduler::Schedule").values()
    properties = schedule["Properties"]
    assert properties["ScheduleExpression"] == "rate(1 minute)"
    # The live alias, as every other caller invokes a function.
    alias_id = stack.logical_id(stack.stack.monitor_schedule.function.alias)
    assert properties["Target"]["Arn"] == {"Ref": alias_id}
    assert function["Properties"]["Timeout"] < 60  # a pass ends before the next one starts
    role_id = properties["Target"]["RoleArn"]["Fn::GetAtt"][0]
    policies = [p["Properties"] for p in stack.resources("AWS::IAM::Policy").values() if {"Ref": role_id} in p["Properties"]["Roles"]]
    statements = [s for policy in policies for s in policy["PolicyDocument"]["Statement"]]
    assert {action for s in statements for action in _actions(s)} == {"lambda:InvokeFunction"}
    assert all(s["Resource"] == {"Ref": alias_id} for s in statements)


def test_the_monitor_sends_to_the_jobs_queue_and_holds_its_declared_table_rights(stack: Synth) -> None:
    _, function = function_of(stack, "monitor")
    queue_id = stack.logical_id(stack.stack.jobs.queue)
    assert function["Properties"]["Environment"]["Variables"]["JOB_QUEUE_URL"] == {"Ref": queue_id}
    granted: set[str] = set()
    for statement in policy_statements_of(stack, "monitor"):
        actions = _actions(statement)
        if any(a.startswith("sqs:") for a in actions):
            assert statement["Resource"] == {"Fn::GetAtt": [queue_id, "Arn"]}
        granted |= actions
    assert {a for a in granted if a.startswith("dynamodb:")} == set(access_for("monitor").table_actions)
    assert "sqs:SendMessage" in granted and not {a for a in granted if a.startswith("sqs:")} - {
        "sqs:SendMessage",
        "sqs:GetQueueAttributes",
        "sqs:GetQueueUrl",
    }
