"""The half-written-state scan: after the fuzz's writes, read back everything a fuzzed runtime holds and collect
every answer of 5xx. A write that was answered (2xx, or refused) but left an item no read can answer (a duration
protobuf cannot write, a NaN in a job) shows up here, whichever route wrote it (issue 41).

Bounded: the lists' first pages (up to 200 entries), each experiment's runs and traces (up to 50 experiments,
50 runs and 100 traces each), every run's and trace's own reads."""

from __future__ import annotations

import os
import urllib.parse
from collections.abc import Callable
from typing import Any

import requests

M2, M3, AJAX3, JOBS = "/api/2.0/mlflow", "/api/3.0/mlflow", "/ajax-api/3.0/mlflow", "/ajax-api/3.0/jobs"
MAX_EXPERIMENTS, MAX_RUNS, MAX_TRACES = 50, 50, 100


class Scan:
    def __init__(self, url: str, headers: dict[str, str]) -> None:
        self.url, self.headers = url, headers
        self.failures: list[str] = []
        self.reads = 0

    def read(self, method: str, path: str, params: Any = None, body: Any = None) -> Any:
        """The answer's JSON (None unless 200); a 5xx is recorded."""
        self.reads += 1
        response = requests.request(method, self.url + path, params=params, json=body, headers=self.headers, timeout=120)
        if response.status_code >= 500:
            self.failures.append(f"{method} {path} {params or body or ''} -> {response.status_code} {response.text[:300]}"[:700])
        if response.status_code != 200:
            return None
        try:
            return response.json()
        except ValueError:
            self.failures.append(f"{method} {path}: a 200 that is not JSON")
            return None


def _items(answer: Any, field: str) -> list[Any]:
    found = answer.get(field) if isinstance(answer, dict) else None
    return found if isinstance(found, list) else []


def scan(url: str, headers: dict[str, str]) -> Scan:
    """Read back every kind of object the route table serves; ``Scan.failures`` lists the 5xx answers."""
    s = Scan(url, headers)
    experiments = _items(s.read("POST", f"{M2}/experiments/search", body={"max_results": 200, "view_type": "ALL"}), "experiments")
    ids = [e["experiment_id"] for e in experiments[:MAX_EXPERIMENTS]]
    for experiment_id in ids:
        _experiment(s, experiment_id)
    if ids:
        s.read("POST", f"{M2}/logged-models/search", body={"experiment_ids": ids[:100], "max_results": 100})
        s.read("POST", f"{M3}/datasets/search", body={"experiment_ids": ids, "max_results": 100})
        s.read("POST", "/ajax-api/2.0/mlflow/experiments/search-datasets", body={"experiment_ids": ids[:20]})
    for dataset in _items(s.read("POST", f"{M3}/datasets/search", body={"max_results": 100}), "datasets"):
        s.read("GET", f"{M3}/datasets/{dataset['dataset_id']}")
        s.read("GET", f"{M3}/datasets/{dataset['dataset_id']}/records")
    for model in _items(s.read("GET", f"{M2}/registered-models/search", {"max_results": 200}), "registered_models"):
        s.read("GET", f"{M2}/registered-models/get", {"name": model["name"]})
    for version in _items(s.read("GET", f"{M2}/model-versions/search", {"max_results": 200}), "model_versions"):
        s.read("GET", f"{M2}/model-versions/get", {"name": version["name"], "version": version["version"]})
    for job in _items(s.read("POST", f"{JOBS}/search", body={}), "jobs")[:200]:
        s.read("GET", f"{JOBS}/{job['job_id']}")
    _gateway(s)
    for path in (f"{M2}/webhooks", f"{M3}/workspaces", f"{M3}/label-schemas/list", f"{M3}/review-queues/list"):
        s.read("GET", path)
    return s


def _experiment(s: Scan, experiment_id: str) -> None:
    s.read("GET", f"{M2}/experiments/get", {"experiment_id": experiment_id})
    runs = _items(s.read("POST", f"{M2}/runs/search", body={"experiment_ids": [experiment_id], "max_results": MAX_RUNS, "run_view_type": "ALL"}), "runs")  # fmt: skip
    for run in runs:
        run_id = run["info"]["run_id"]
        answer = s.read("GET", f"{M2}/runs/get", {"run_id": run_id})
        metrics = _items((answer or {}).get("run", {}).get("data", {}), "metrics")
        for key in {m["key"] for m in metrics}:
            s.read("GET", f"{M2}/metrics/get-history", {"run_id": run_id, "metric_key": key})
        s.read("GET", f"{M2}/artifacts/list", {"run_id": run_id})
    location = {"type": "MLFLOW_EXPERIMENT", "mlflow_experiment": {"experiment_id": experiment_id}}
    traces = _items(s.read("POST", f"{M3}/traces/search", body={"locations": [location], "max_results": MAX_TRACES}), "traces")
    s.read("GET", f"{M2}/traces", {"experiment_ids": experiment_id, "max_results": MAX_TRACES})
    for trace in traces:
        trace_id = trace["trace_id"]
        s.read("GET", f"{M3}/traces/{urllib.parse.quote(trace_id, safe='')}")
        s.read("GET", f"{M2}/traces/{urllib.parse.quote(trace_id, safe='')}/info")
        s.read("GET", f"{M3}/traces/get", {"trace_id": trace_id})
    for path, params in (
        (f"{M3}/scorers/list", {"experiment_id": experiment_id}),
        (f"{M3}/prompt-optimization/jobs/search", {"experiment_id": experiment_id}),
    ):
        s.read("GET", path, params)
    s.read("POST", f"{M3}/issues/search", body={"experiment_id": experiment_id})
    s.read("POST", f"{M2}/logged-models/search", body={"experiment_ids": [experiment_id]})


def _gateway(s: Scan) -> None:
    lists: list[tuple[str, str, Callable[[dict[str, Any]], dict[str, str]] | None, str]] = [
        ("secrets/list", "secrets", lambda e: {"secret_id": e["secret_id"]}, "secrets/get"),
        (
            "model-definitions/list",
            "model_definitions",
            lambda e: {"model_definition_id": e["model_definition_id"]},
            "model-definitions/get",
        ),
        ("endpoints/list", "endpoints", lambda e: {"endpoint_id": e["endpoint_id"]}, "endpoints/get"),
        ("guardrails/list", "guardrails", lambda e: {"guardrail_id": e["guardrail_id"]}, "guardrails/get"),
        ("budgets/list", "budget_policies", None, ""),
        ("budgets/windows", "windows", None, ""),
    ]
    for list_path, field, key, get_path in lists:
        for entry in _items(s.read("GET", f"{M3}/gateway/{list_path}"), field)[:200]:
            if key is not None:
                s.read("GET", f"{M3}/gateway/{get_path}", key(entry))
            if field == "endpoints":
                s.read("GET", f"{M3}/gateway/guardrails/list-for-endpoint", {"endpoint_id": entry["endpoint_id"]})
    for server in _items(s.read("GET", f"{M3}/mcp-servers"), "mcp_servers")[:100]:
        name = urllib.parse.quote(str(server.get("name", "")), safe="")
        s.read("GET", f"{M3}/mcp-servers/{name}")
        s.read("GET", f"{M3}/mcp-servers/{name}/versions")
    s.read("GET", f"{M3}/mcp-servers/endpoints")
    s.read("GET", f"{M3}/skills")


def record_5xx(line: str) -> bool:
    """With ``FUZZ_5XX_LOG`` set (a measuring run: how many 5xx a long run finds), append the answer there and
    go on instead of failing; False (fail as usual) otherwise."""
    log = os.environ.get("FUZZ_5XX_LOG")
    if not log:
        return False
    with open(log, "a", encoding="utf-8") as sink:
        sink.write(line.replace("\n", " ")[:2000] + "\n")
    return True
