"""The idle cost the README states is computed from the synthesized templates (tools/idle_cost.py)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.infra.test_stack import Synth
from tools import idle_cost

pytestmark = pytest.mark.xdist_group("infra")

README = Path(__file__).resolve().parents[2] / "README.md"


def _cost(synth: Synth) -> float:
    return idle_cost.idle_cost(idle_cost.templates_in(synth.outdir))


def test_an_alarm_is_billed_per_metric_it_reads() -> None:
    math = {
        "Metrics": [
            {"Id": "e", "Expression": "a + b"},
            {"Id": "a", "MetricStat": {"Period": 300}},
            {"Id": "b", "MetricStat": {"Period": 300}},
        ]
    }
    template = {
        "Resources": {
            "Math": {"Type": "AWS::CloudWatch::Alarm", "Properties": math},
            "Plain": {"Type": "AWS::CloudWatch::Alarm", "Properties": {"MetricName": "Errors", "Period": 300}},
            "Board": {"Type": "AWS::CloudWatch::Dashboard", "Properties": {}},
            "Key": {"Type": "AWS::KMS::Key", "Properties": {}},
            "Queue": {"Type": "AWS::SQS::Queue", "Properties": {}},
        }
    }
    assert idle_cost.idle_cost([template]) == round(3 * 0.10 + 3.00 + 1.00, 2)


def test_the_default_stack_costs_at_most_3_dollars_a_month_idle_and_the_readme_says_what_each_costs(synth: Synth, largest: Synth) -> None:
    basic, full = _cost(synth), _cost(largest)
    print(idle_cost.report(idle_cost.templates_in(synth.outdir)))
    assert basic <= 3.00 < full
    readme = README.read_text()
    assert "costs nothing while idle" not in readme
    stated = re.search(r"idle cost: \*\*\$(\d+\.\d\d)\*\* a month with the default `monitoring=basic`", readme)
    assert stated and float(stated.group(1)) == basic
