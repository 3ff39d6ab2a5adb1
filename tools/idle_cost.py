"""What the stack costs per month with no traffic at all, from the synthesized templates.

    python -m tools.idle_cost                         # the default context (monitoring=basic)
    python -m tools.idle_cost -c monitoring=full -c authorization=basic
    python -m tools.idle_cost --cdk-out cdk.out      # templates already synthesized

Everything request-priced (Lambda, API Gateway, DynamoDB on-demand, SQS, SNS, EventBridge, X-Ray) costs nothing
idle. What is billed by the month whatever the traffic is priced below (us-east-1 list prices, read 2026-12; no
free tier counted: an account's first 10 alarm metrics and 3 dashboards are free, shared with everything else it
runs). Storage grows with use and is not idle cost: DynamoDB $0.25 and PITR $0.20 per GB-month, S3 $0.023 per
GB-month (the web UI's 8.5 MB build: $0.0002), CloudWatch Logs $0.03 per GB-month.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# USD per month.
ALARM_METRIC = 0.10  # standard resolution (period >= 60 s), per metric an alarm evaluates
HIGH_RESOLUTION_ALARM_METRIC = 0.30  # period < 60 s
DASHBOARD = 3.00
KMS_KEY = 1.00  # a customer-managed key; each of its first two yearly rotations adds $1 (then $2, $3 a month)
SECRET = 0.40  # Secrets Manager, per secret


@dataclass(frozen=True)
class Line:
    item: str
    count: int
    unit: float

    @property
    def cost(self) -> float:
        return self.count * self.unit


def alarm_metrics(properties: dict[str, Any]) -> tuple[int, bool]:
    """(metrics billed, high resolution) for one alarm: a metric alarm is one metric; a metric-math alarm is
    billed per metric its expressions read (the expressions themselves are free)."""
    if "Metrics" in properties:
        stats = [m["MetricStat"] for m in properties["Metrics"] if "MetricStat" in m]
        return len(stats), any(int(stat.get("Period", 300)) < 60 for stat in stats)
    return 1, int(properties.get("Period", 300)) < 60


def lines(templates: Iterable[dict[str, Any]]) -> list[Line]:
    alarms = high = dashboards = keys = secrets = 0
    for template in templates:
        for resource in template.get("Resources", {}).values():
            kind, properties = resource["Type"], resource.get("Properties", {})
            if kind == "AWS::CloudWatch::Alarm":
                count, high_resolution = alarm_metrics(properties)
                if high_resolution:
                    high += count
                else:
                    alarms += count
            elif kind == "AWS::CloudWatch::Dashboard":
                dashboards += 1
            elif kind == "AWS::KMS::Key":
                keys += 1
            elif kind == "AWS::SecretsManager::Secret":
                secrets += 1
    out = [
        Line("CloudWatch alarm metrics", alarms, ALARM_METRIC),
        Line("CloudWatch alarm metrics (high resolution)", high, HIGH_RESOLUTION_ALARM_METRIC),
        Line("CloudWatch dashboards", dashboards, DASHBOARD),
        Line("KMS customer-managed keys", keys, KMS_KEY),
        Line("Secrets Manager secrets", secrets, SECRET),
    ]
    return [line for line in out if line.count]


def idle_cost(templates: Iterable[dict[str, Any]]) -> float:
    return round(sum(line.cost for line in lines(templates)), 2)


def templates_in(cdk_out: Path) -> list[dict[str, Any]]:
    """Every template of a cloud assembly: the stack's and its nested stacks'."""
    return [json.loads(path.read_text()) for path in sorted(cdk_out.glob("*.template.json"))]


def synthesize(context: dict[str, str], outdir: Path) -> list[dict[str, Any]]:
    import aws_cdk as cdk

    import infra
    from infra.stack import MlflowServerlessStack

    app = cdk.App(outdir=str(outdir), context={**infra.cdk_json_context(), **context})
    MlflowServerlessStack(app, "MlflowServerless")
    app.synth()
    return templates_in(outdir)


def report(templates: list[dict[str, Any]]) -> str:
    rows = [f"{line.item:<45} {line.count:>4} x ${line.unit:.2f} = ${line.cost:6.2f}" for line in lines(templates)]
    return "\n".join([*rows, f"{'idle total per month':<45} {'':>4}            ${idle_cost(templates):6.2f}"])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-c", "--context", action="append", default=[], metavar="KEY=VALUE", help="CDK context, as for cdk synth")
    parser.add_argument("--cdk-out", type=Path, help="read these synthesized templates instead of synthesizing")
    args = parser.parse_args(argv)
    if args.cdk_out:
        templates = templates_in(args.cdk_out)
    else:
        context = dict(item.split("=", 1) for item in args.context)
        with tempfile.TemporaryDirectory() as outdir:
            templates = synthesize(context, Path(outdir))
    print(report(templates))


if __name__ == "__main__":
    main()
