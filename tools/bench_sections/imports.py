"""Cold import of each function's handler from its synthesized asset and the layer alone, as Lambda runs it.

The stack is synthesized (``MlflowServerlessStack``, basic auth so that the authorizer is in it) into a
temporary directory; each function is imported in a fresh interpreter without site-packages (``python -S``)
whose path is the function's asset, the layer's ``python/`` and a copy of the packages the Lambda runtime
provides (boto3 and its dependencies, with their bytecode, as the runtime ships them). Nothing else is
importable, and the asset and layer carry no bytecode (Lambda's code directories are read-only, so every
cold start compiles them). The environment is the function's own from the template, with tracing off.
The baseline is ``import boto3; boto3.client("dynamodb")`` in the same interpreter set-up: the budget is
that baseline + 100 ms. Figures are CPU time (median of ``RUNS``), which a loaded machine inflates less
than wall time; both are shown.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from infra import assets
from tools.bench_sections import Figures, table

TITLE = "Handler import time (cold start, from the synthesized asset + layer)"
ROOT = Path(__file__).resolve().parents[2]
RUNS = int(os.environ.get("BENCH_IMPORT_RUNS", "5"))
BUDGET_MS = 100

_SYNTH = """
import json, sys
import aws_cdk as cdk
import infra
from infra.stack import MlflowServerlessStack
out = sys.argv[1]
app = cdk.App(outdir=out, context={**infra.cdk_json_context(), "authorization": "basic", "nag": "false"})
MlflowServerlessStack(app, "Bench")
app.synth()
"""


def synthesize(outdir: Path) -> tuple[dict[str, dict[str, Any]], Path]:
    """{function logical id: {handler, asset, environment}} of the functions on the shared layer, and the layer's dir."""
    subprocess.run([sys.executable, "-c", _SYNTH, str(outdir)], cwd=ROOT, check=True, capture_output=True)
    template = json.loads((outdir / "Bench.template.json").read_text())
    assets = json.loads((outdir / "Bench.assets.json").read_text())["files"]

    def asset_dir(key: Any) -> Path:
        return outdir / assets[str(key).removesuffix(".zip")]["source"]["path"]

    resources = template["Resources"]
    (layer_id, layer), *_ = [(k, v) for k, v in resources.items() if v["Type"] == "AWS::Lambda::LayerVersion" and "Shared" in k]
    functions = {}
    for properties in (v["Properties"] for v in resources.values() if v["Type"] == "AWS::Lambda::Function"):
        if {"Ref": layer_id} not in properties.get("Layers", []):
            continue
        if "/" in properties["Handler"]:
            continue  # a script the Lambda Web Adapter runs (gateway_stream): not a Python handler import
        environment = {k: v for k, v in properties.get("Environment", {}).get("Variables", {}).items() if isinstance(v, str)}
        handler = properties["Handler"]
        functions[handler.split(".")[0]] = {"handler": handler, "asset": asset_dir(properties["Code"]["S3Key"]), "environment": environment}
    return functions, asset_dir(layer["Properties"]["Content"]["S3Key"]) / "python"


def timed_import(code: str, path: list[Path], environment: dict[str, str]) -> tuple[float, float]:
    """Median (CPU ms, wall ms) of ``code`` in fresh ``python -S`` interpreters on ``path`` only."""
    env = {
        "PATH": os.environ.get("PATH", ""),
        "PYTHONPATH": os.pathsep.join(map(str, path)),
        "PYTHONDONTWRITEBYTECODE": "1",
        "AWS_REGION": "us-east-1",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ACCESS_KEY_ID": "bench",
        "AWS_SECRET_ACCESS_KEY": "bench",
        "LAMBDA_TASK_ROOT": "/var/task",
        "TABLE_NAME": "bench",
        **environment,
        "POWERTOOLS_TRACE_DISABLED": "true",
    }
    probe = f"import time; c=time.process_time(); w=time.perf_counter(); {code}; print((time.process_time()-c)*1000, (time.perf_counter()-w)*1000)"
    cpu, wall = [], []
    for _ in range(RUNS):
        done = subprocess.run([sys.executable, "-S", "-c", probe], env=env, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"{code}: {done.stderr[-1500:]}")
        c, w = map(float, done.stdout.split()[-2:])
        cpu.append(c)
        wall.append(w)
    return statistics.median(cpu), statistics.median(wall)


def section(context: Any) -> Figures:
    with tempfile.TemporaryDirectory(prefix="bench-imports-") as tmp:
        functions, _ = synthesize(Path(tmp) / "cdk.out")
        # The layer built for this machine from the same lock as the synthesized (arm64) one; boto3 ships in it.
        layer = assets.build_layer(assets.HOST).path / "python"
        base_cpu, base_wall = timed_import("import boto3; boto3.client('dynamodb')", [layer], {})
        rows = [("boto3 + a DynamoDB client (the baseline)", f"{base_cpu:.0f} ms CPU / {base_wall:.0f} ms wall")]
        for name in sorted(functions):
            function = functions[name]
            module = function["handler"].rsplit(".", 1)[0]
            cpu, wall = timed_import(f"import {module}", [function["asset"], layer], function["environment"])
            verdict = "within" if cpu <= base_cpu + BUDGET_MS else "OVER"
            rows.append(
                (name, f"{cpu:.0f} ms CPU / {wall:.0f} ms wall ({cpu - base_cpu:+.0f} ms vs the baseline: {verdict} +{BUDGET_MS} ms)")
            )
    load = " / ".join(f"{x:.1f}" for x in os.getloadavg())
    rows.append(("load average (1 / 5 / 15 min) after", load))
    return Figures([table(rows, ("function", f"import (median of {RUNS})"))])
