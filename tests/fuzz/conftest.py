"""The fuzz suite's runtimes: ``python -m local`` processes with their own table and bucket (plain, and
``AUTHORIZATION=basic`` with the admin's credentials), seeded with one object of each kind the routes name.

Bounded by default: ``FUZZ_EXAMPLES`` examples per route (``--long`` or ``FUZZ_LONG=1``: ``FUZZ_LONG_EXAMPLES``).
"""

from __future__ import annotations

import base64
import json
import os
import urllib.parse
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
import requests

from tests.conftest import runtime_process, unique

from .scan import record_5xx, scan
from .state import Snapshot

ADMIN_PASSWORD = "fuzz-admin-" + os.urandom(6).hex()
M2, M3 = "/api/2.0/mlflow", "/api/3.0/mlflow"
WEBHOOK_URL = "https://127.0.0.1:9/fuzz-hook"


@dataclass
class Target:
    """One fuzzed runtime: its URL, credentials (basic mode), seeded ids and the state last seen."""

    mode: str
    url: str
    snapshot: Snapshot
    headers: dict[str, str] = field(default_factory=dict)
    seeds: dict[str, Any] = field(default_factory=dict)
    mock_url: str = ""
    # A request was answered 2xx/3xx since the last settle: it may have left run writes the indexer has not had.
    unsettled: bool = False
    # No request that may write (any method but a read's) was answered 2xx/3xx since the seeds were last found
    # alive: none can have been deleted, renamed or archived since, and ``ensure_seeds`` need not read them all again
    # (13 reads before each of the suite's ~900 tests, most of which only send refused requests).
    seeds_intact: bool = False

    def call(self, method: str, path: str, body: Any = None, params: Any = None) -> Any:
        response = requests.request(method, self.url + path, json=body, params=params, headers=self.headers, timeout=60)
        self.unsettled = True
        assert response.status_code < 300, f"seeding {method} {path}: {response.status_code} {response.text[:500]}"
        return response.json() if response.content else {}

    def settle(self) -> None:
        """Index what earlier requests wrote, then read the table's stream to its end: what a request changes is
        what comes after. A run's writes are indexed when the next other request arrives (``local/barrier.py``),
        or a second later: a read is that request, whatever it answers."""
        if self.unsettled:
            requests.get(f"{self.url}{M2}/experiments/search", params={"max_results": 1}, headers=self.headers, timeout=60)
            self.unsettled = False
        self.snapshot.changes()


def seed(target: Target) -> None:
    """One live object of each kind (re-created when a fuzzed request deleted it)."""
    seeds, call = target.seeds, target.call
    seeds["experiment_name"] = unique("fz-exp")
    seeds["experiment_id"] = exp = call("POST", f"{M2}/experiments/create", {"name": seeds["experiment_name"]})["experiment_id"]
    run = call("POST", f"{M2}/runs/create", {"experiment_id": exp})["run"]["info"]
    seeds["run_id"] = run["run_id"]
    call("POST", f"{M2}/runs/log-batch", {"run_id": run["run_id"], "metrics": [{"key": "m", "value": 1.0, "timestamp": 1, "step": 0}], "params": [{"key": "p", "value": "v"}], "tags": [{"key": "k", "value": "v"}]})  # fmt: skip
    root = run["artifact_uri"].removeprefix("mlflow-artifacts:/")
    seeds["artifact_path"] = f"{root}/model/MLmodel"
    upload = requests.put(
        f"{target.url}{M2}-artifacts/artifacts/{seeds['artifact_path']}", data=b"flavors: {}\n", headers=target.headers, timeout=60
    )
    assert upload.status_code == 200, upload.text
    seeds["static_path"] = "favicon.ico"
    seeds["model_id"] = call("POST", f"{M2}/logged-models", {"experiment_id": exp, "source_run_id": run["run_id"]})["model"]["info"][
        "model_id"
    ]
    seeds["model_name"] = unique("fz-model")
    call("POST", f"{M2}/registered-models/create", {"name": seeds["model_name"]})
    version = call("POST", f"{M2}/model-versions/create", {"name": seeds["model_name"], "source": f"runs:/{run['run_id']}/model", "run_id": run["run_id"]})  # fmt: skip
    seeds["model_version"] = version["model_version"]["version"]
    call("POST", f"{M2}/registered-models/alias", {"name": seeds["model_name"], "alias": "champion", "version": seeds["model_version"]})
    trace_id = f"tr-{uuid.uuid4().hex}"
    location = {"type": "MLFLOW_EXPERIMENT", "mlflow_experiment": {"experiment_id": exp}}
    call("POST", f"{M3}/traces", {"trace": {"trace_info": {"trace_id": trace_id, "trace_location": location, "request_time": "2024-01-01T00:00:00Z", "state": "OK"}}})  # fmt: skip
    seeds["trace_id"] = trace_id
    assessment = {"assessment_name": "quality", "trace_id": trace_id, "source": {"source_type": "HUMAN", "source_id": "fuzz"}, "feedback": {"value": True}}  # fmt: skip
    seeds["assessment_id"] = call("POST", f"{M3}/traces/{trace_id}/assessments", {"assessment": assessment})["assessment"]["assessment_id"]
    seeds["dataset_id"] = dataset = call("POST", f"{M3}/datasets/create", {"name": unique("fz-ds"), "experiment_ids": [exp]})["dataset"][
        "dataset_id"
    ]
    call("POST", f"{M3}/datasets/{dataset}/records", {"records": json.dumps([{"inputs": {"q": "a"}, "expectations": {"e": "b"}}])})
    seeds["record_id"] = json.loads(call("GET", f"{M3}/datasets/{dataset}/records")["records"])[0]["dataset_record_id"]
    seeds["scorer_name"] = "fz-scorer"
    seeds["scorer_id"] = call("POST", f"{M3}/scorers/register", {"experiment_id": exp, "name": "fz-scorer", "serialized_scorer": json.dumps({"name": "fz-scorer"})})["scorer_id"]  # fmt: skip
    seeds["issue_id"] = call("POST", f"{M3}/issues", {"experiment_id": exp, "name": "fz-issue", "description": "d"})["issue"]["issue_id"]
    # The gateway runtime's calls go to the local mock provider (the fuzz's chat bodies reach a provider that
    # refuses what it cannot read with a 400, as a real one does).
    auth_config = {"api_base": f"{target.mock_url}/v1"}
    seeds["secret_id"] = secret = call("POST", f"{M3}/gateway/secrets/create", {"secret_name": unique("fz-secret"), "secret_value": {"api_key": "sk-fuzz"}, "provider": "openai", "auth_config": auth_config})["secret"]["secret_id"]  # fmt: skip
    seeds["model_definition_id"] = definition = call("POST", f"{M3}/gateway/model-definitions/create", {"name": unique("fz-def"), "secret_id": secret, "provider": "openai", "model_name": "gpt-4o"})["model_definition"]["model_definition_id"]  # fmt: skip
    seeds["endpoint_name"] = unique("fz-endpoint")
    endpoint = call("POST", f"{M3}/gateway/endpoints/create", {"name": seeds["endpoint_name"], "model_configs": [{"model_definition_id": definition, "linkage_type": "PRIMARY", "weight": 1.0}], "usage_tracking": False})  # fmt: skip
    seeds["endpoint_id"] = endpoint["endpoint"]["endpoint_id"]
    guardrail = {"name": "fz-guardrail", "scorer_id": seeds["scorer_id"], "scorer_version": 1, "stage": "BEFORE", "action": "VALIDATION"}
    seeds["guardrail_id"] = call("POST", f"{M3}/gateway/guardrails/create", guardrail)["guardrail"]["guardrail_id"]
    events = [{"entity": "MODEL_VERSION", "action": "CREATED"}]
    seeds["webhook_id"] = call("POST", f"{M2}/webhooks", {"name": unique("fz-hook"), "url": WEBHOOK_URL, "events": events})["webhook"]["webhook_id"]  # fmt: skip
    # A job (no worker runs it here: it stays PENDING until a fuzzed cancel ends it).
    seeds["job_id"] = call("POST", "/ajax-api/3.0/jobs/", {"job_name": "demo_delete", "params": {}})["job_id"]
    # An MCP server with a draft version (deletable by a fuzzed request), an alias and an endpoint bound to it.
    seeds["mcp_name"] = mcp = f"com.fuzz/{unique('fz-mcp')}"
    mcp_path = f"{M3}/mcp-servers/{urllib.parse.quote(mcp, safe='')}"
    call("POST", f"{mcp_path}/versions", {"server_json": {"name": mcp, "version": "1.0.0"}, "tools": [{"name": "t"}]})
    call("POST", f"{mcp_path}/aliases", {"alias": "champion", "version": "1.0.0"})
    seeds["mcp_endpoint_id"] = call("POST", f"{mcp_path}/endpoints", {"url": "https://mcp.example/mcp", "server_version": "1.0.0"})["id"]  # fmt: skip
    seeds["skill_name"] = skill = unique("fz-skill")
    for prefix in (f"{M3}/skills/{skill}", f"{M3}/skills/@fuzz/{skill}"):
        call("POST", f"{prefix}/versions", {"source": "https://example.com/fuzz.zip"})
        call("POST", f"{prefix}/aliases", {"alias": "champion", "version": 1})
    if target.mode == "basic":
        seeds["username"] = unique("fz-user")
        call("POST", f"{M2}/users/create", {"username": seeds["username"], "password": "fuzz-password-0"})


# Reads that fail once a seeded object was deleted (or renamed) by a fuzzed request that succeeded.
_ALIVE = (
    ("GET", M2 + "/experiments/get", "experiment_id", lambda body: body["experiment"]["lifecycle_stage"] == "active"),
    ("GET", M2 + "/runs/get", "run_id", lambda body: body["run"]["info"]["lifecycle_stage"] == "active"),
    ("GET", M2 + "/registered-models/get", "model_name", None),
    ("GET", M2 + "/model-versions/get", None, None),
    ("GET", M3 + "/gateway/endpoints/get", "endpoint_id", None),
    ("GET", M3 + "/gateway/model-definitions/get", "model_definition_id", None),
    ("GET", M3 + "/gateway/secrets/get", "secret_id", None),
    ("GET", M3 + "/traces/get", "trace_id", None),
    ("GET", M3 + "/gateway/guardrails/get", "guardrail_id", None),
)


def ensure_seeds(target: Target) -> None:
    """Seed again when a fuzzed request deleted, renamed or archived one of the seeded objects."""
    if target.seeds_intact:
        target.settle()
        return
    seeds = target.seeds
    queries = {
        "experiment_id": {"experiment_id": seeds["experiment_id"]},
        "run_id": {"run_id": seeds["run_id"]},
        "model_name": {"name": seeds["model_name"]},
        None: {"name": seeds["model_name"], "version": seeds["model_version"]},
        "endpoint_id": {"endpoint_id": seeds["endpoint_id"]},
        "model_definition_id": {"model_definition_id": seeds["model_definition_id"]},
        "secret_id": {"secret_id": seeds["secret_id"]},
        "trace_id": {"trace_id": seeds["trace_id"]},
        "guardrail_id": {"guardrail_id": seeds["guardrail_id"]},
    }
    checks = [(f"{M2}/logged-models/{seeds['model_id']}", {}, None), (f"{M3}/datasets/{seeds['dataset_id']}", {}, None)]
    checks.append((f"{M2}/webhooks/{seeds['webhook_id']}", {}, None))
    mcp_path = f"{M3}/mcp-servers/{urllib.parse.quote(seeds['mcp_name'], safe='')}"
    checks.append((f"{mcp_path}/endpoints/{seeds['mcp_endpoint_id']}", {}, None))
    checks += [(path, queries[name], alive) for _, path, name, alive in _ALIVE]
    for path, params, alive in checks:
        response = requests.get(target.url + path, params=params, headers=target.headers, timeout=60)
        if response.status_code != 200 or (alive is not None and not alive(response.json())):
            seed(target)
            break
    target.seeds_intact = True
    target.settle()


def long_mode(config: pytest.Config) -> bool:
    return bool(config.getoption("--long", default=False)) or os.environ.get("FUZZ_LONG") == "1"


def examples(config: pytest.Config, mode: str) -> int:
    """Examples per route: bounded in ``make test`` (plain 10, basic-auth 3), many more with ``--long``."""
    if long_mode(config):
        return int(os.environ.get("FUZZ_LONG_EXAMPLES", "300" if mode == "plain" else "60"))
    return int(os.environ.get("FUZZ_EXAMPLES" if mode == "plain" else "FUZZ_BASIC_EXAMPLES", "10" if mode == "plain" else "3"))


@pytest.fixture(scope="session")
def fuzz_engine(server: str) -> Iterator[str]:
    """The fuzzed runtimes' own DynamoDB Local: the session's engine slows down as the tests before this suite fill
    it with tables and stream records, and every fuzzed request reads the stream twice (measured: the suite's
    884 tests took 1,181 test-seconds on the shared engine late in a full run, 257 s on a fresh one)."""
    from local.engine import DynamoDBLocal

    engine = DynamoDBLocal().start()
    yield engine.endpoint
    engine.stop()


@pytest.fixture(scope="session")
def fuzz_mock_llm() -> Iterator[str]:
    from tools.mock_llm import MockLLM

    mock = MockLLM().start()
    yield mock.url
    mock.stop()


def _runtime(mode: str, dynamodb_endpoint: str, mock_url: str) -> Iterator[Target]:
    table, bucket = unique("fuzz"), unique("fuzz")
    # Webhooks may name a loopback URL (port 9: refused at once), so the test route answers without the network.
    # No job worker: a submitted job (a demo generation) stays PENDING instead of writing in the background while the
    # suite checks that refused requests change nothing.
    env = {
        "TABLE_NAME": table,
        "BUCKET_NAME": bucket,
        "INDEXER_MODE": "sync",
        "MLFLOW_WEBHOOK_ALLOW_PRIVATE_IPS": "true",
        "JOB_WORKER_CONCURRENCY": "0",
        "DYNAMODB_ENDPOINT_URL": dynamodb_endpoint,
        # The mock provider is on loopback http (as the gateway runtime's own tests allow it).
        "MLFLOW_GATEWAY_API_BASE_ALLOWED_SCHEMES": "http,https",
        "MLFLOW_GATEWAY_API_BASE_ALLOW_PRIVATE_IPS": "true",
    }
    headers = {}
    if mode == "basic":
        env.update(AUTHORIZATION="basic", MLFLOW_AUTH_ADMIN_PASSWORD=ADMIN_PASSWORD, AUTHORIZER_CACHE_SECONDS="60")
        headers["Authorization"] = "Basic " + base64.b64encode(f"admin:{ADMIN_PASSWORD}".encode()).decode()
    with runtime_process(env, drop=("MLFLOW_TRACKING_USERNAME", "MLFLOW_TRACKING_PASSWORD")) as url:
        target = Target(mode, url, Snapshot(table, bucket, dynamodb_endpoint), headers, mock_url=mock_url)
        seed(target)
        yield target
        # The half-written-state scan once more after everything this worker fuzzed on the runtime (the test of it
        # runs wherever xdist puts it): a write that left state no read can answer fails the session here.
        result = scan(url, headers)
        result.failures = [f for f in result.failures if not record_5xx(f"scan\t{mode}: {f}")]
        assert not result.failures, f"{mode}: reads answering 5xx after the fuzz:\n" + "\n".join(result.failures[:20])


@pytest.fixture(scope="session")
def plain_target(fuzz_engine: str, fuzz_mock_llm: str) -> Iterator[Target]:
    yield from _runtime("plain", fuzz_engine, fuzz_mock_llm)


@pytest.fixture(scope="session")
def basic_target(fuzz_engine: str, fuzz_mock_llm: str) -> Iterator[Target]:
    yield from _runtime("basic", fuzz_engine, fuzz_mock_llm)
