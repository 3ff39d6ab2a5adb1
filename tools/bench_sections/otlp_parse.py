"""OTLP parse time of a 458 KB trace export (``serverless_mlflow.request.otlp.parse_otlp``) with the layer's own protobuf.

The layer is built for this machine from ``requirements/layer.lock`` (``infra/assets.py``: the recipe that builds
Lambda's arm64 layer) and the parse runs in fresh ``python -S`` interpreters with only that layer on the path, so
protobuf is the layer's: its compiled upb module, as on Lambda. The same parse with protobuf forced to its
pure-Python implementation (``PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION=python``: what a layer without the ``.so``
runs) is the comparison. ``OTLP_PARSE_RUNS`` sets the timed parses per interpreter.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

from infra import assets
from tools.bench_sections import Figures, table

TITLE = "OTLP parse of a 458 KB trace export (the layer's protobuf)"
RUNS = int(os.environ.get("OTLP_PARSE_RUNS", "50"))
TARGET_BYTES = 458 * 1024
BUDGET_MS = 5.0

# An agent-like export: one resource, spans with a dozen attributes each (inputs/outputs as JSON strings), until the
# request reaches TARGET_BYTES.
_PROBE = """
import json, os, statistics, sys, time
from google.protobuf.internal import api_implementation
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from serverless_mlflow.request.otlp import parse_otlp

target, runs = int(sys.argv[1]), int(sys.argv[2])
request = ExportTraceServiceRequest()
scope = request.resource_spans.add().scope_spans.add()
index = 0
while request.ByteSize() < target:
    span = scope.spans.add(trace_id=bytes(16), span_id=index.to_bytes(8, "big"), name=f"step-{index}", kind=1,
                           start_time_unix_nano=1_700_000_000_000_000_000 + index, end_time_unix_nano=1_700_000_000_000_000_999 + index)
    for key in range(10):
        span.attributes.add(key=f"attribute.{key}").value.string_value = f"value {index} {key}"
    span.attributes.add(key="mlflow.spanInputs").value.string_value = json.dumps({"messages": [{"role": "user", "content": "x" * 200}]})
    span.attributes.add(key="mlflow.spanOutputs").value.string_value = json.dumps({"choices": [{"text": "y" * 150}]})
    index += 1
body = request.SerializeToString()
parse_otlp(body, "application/x-protobuf", None)
times = []
for _ in range(runs):
    started = time.perf_counter()
    parsed = parse_otlp(body, "application/x-protobuf", None)
    times.append((time.perf_counter() - started) * 1000)
assert len(parsed.resource_spans[0].scope_spans[0].spans) == index
print(json.dumps({"bytes": len(body), "spans": index, "implementation": api_implementation.Type(),
                  "median_ms": statistics.median(times), "min_ms": min(times)}))
"""


def parse_times(layer_python: str, implementation: str | None = None, runs: int = RUNS) -> dict[str, Any]:
    env = {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": layer_python, "PYTHONDONTWRITEBYTECODE": "1"}
    if implementation:
        env["PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION"] = implementation
    done = subprocess.run(
        [sys.executable, "-S", "-c", _PROBE, str(TARGET_BYTES), str(runs)], env=env, capture_output=True, text=True, check=True
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def section(context: Any) -> Figures:
    layer = str(assets.build_layer(assets.HOST).path / "python")
    compiled = parse_times(layer)
    pure = parse_times(layer, "python", max(3, RUNS // 10))
    verdict = "within" if compiled["median_ms"] <= BUDGET_MS else "OVER"
    load = " / ".join(f"{x:.1f}" for x in os.getloadavg())
    rows = [
        ("request", f"{compiled['bytes'] / 1024:.0f} KB, {compiled['spans']} spans (protobuf)"),
        (
            f"parse with the layer's protobuf ({compiled['implementation']}), target <= {BUDGET_MS:.0f} ms",
            f"{compiled['median_ms']:.2f} ms median of {RUNS} (min {compiled['min_ms']:.2f}): {verdict}",
        ),
        (f"parse with pure-Python protobuf ({pure['implementation']}: a layer without the .so)", f"{pure['median_ms']:.1f} ms median"),
        ("load average (1 / 5 / 15 min) after", load),
    ]
    return Figures([table(rows)])
