"""AI gateway overhead per call: chat calls through the runtime's gateway vs the same calls straight to the mock
provider (``tools/mock_llm.py``), and the DynamoDB work each gateway call costs (``table.STATS``)."""

from __future__ import annotations

import os
import statistics
import time
import uuid
from collections.abc import Callable
from typing import Any

import requests

from tools.bench_sections import Figures, table

TITLE = "AI gateway overhead per call"
GW = "/api/3.0/mlflow/gateway"
# The gateway refuses loopback http api_base values unless told otherwise (as ``mlflow server`` does).
_LOOSE_API_BASE = {"MLFLOW_GATEWAY_API_BASE_ALLOWED_SCHEMES": "http,https", "MLFLOW_GATEWAY_API_BASE_ALLOW_PRIVATE_IPS": "true"}


def _post(session: requests.Session, url: str, body: dict[str, Any]) -> dict[str, Any]:
    response = session.post(url, json=body, timeout=60)
    if response.status_code != 200:
        raise RuntimeError(f"POST {url} -> {response.status_code} {response.text[:300]}")
    return response.json()


def _endpoint(session: requests.Session, base: str, mock_url: str, usage_tracking: bool) -> str:
    name = f"bench-{uuid.uuid4().hex[:8]}"
    secret = _post(
        session,
        f"{base}{GW}/secrets/create",
        {"secret_name": name, "secret_value": {"api_key": "sk-bench"}, "provider": "openai", "auth_config": {"api_base": f"{mock_url}/v1"}},
    )["secret"]
    definition = _post(
        session,
        f"{base}{GW}/model-definitions/create",
        {"name": name, "secret_id": secret["secret_id"], "provider": "openai", "model_name": "gpt-4o-mini"},
    )["model_definition"]
    config = {"model_definition_id": definition["model_definition_id"], "linkage_type": "PRIMARY", "weight": 1.0}
    _post(session, f"{base}{GW}/endpoints/create", {"name": name, "model_configs": [config], "usage_tracking": usage_tracking})
    return name


def _timed(call: Callable[[], None], n: int) -> list[float]:
    """Milliseconds of each of ``n`` calls, after two unmeasured warm-up calls."""
    for _ in range(2):
        call()
    out = []
    for _ in range(n):
        started = time.perf_counter()
        call()
        out.append((time.perf_counter() - started) * 1000)
    return out


def _chat(session: requests.Session, url: str, body: dict[str, Any], headers: dict[str, str] | None = None) -> Callable[[], None]:
    def call() -> None:
        # A streamed answer is read to its last byte: the figure is the whole answer's time.
        response = session.post(url, json=body, headers=headers, timeout=60, stream=bool(body.get("stream")))
        response.raise_for_status()
        for _ in response.iter_content(chunk_size=None):
            pass

    return call


def _dynamodb_per_call(runtime: Any, call: Callable[[], None], n: int) -> dict[str, Any]:
    """DynamoDB work of ``n`` calls, the usage trace's asynchronous export included, per call."""
    from serverless_mlflow.storage.table import STATS

    runtime.wait_for_async_invocations()
    STATS.reset()
    for _ in range(n):
        call()
    runtime.wait_for_async_invocations()
    snap = STATS.snapshot()
    by_type = ", ".join(f"{k} {v / n:g}" for k, v in sorted(snap["requests"].items()))
    return {
        "requests": sum(snap["requests"].values()) / n,
        "by_type": by_type,
        "read": snap["items_read"] / n,
        "written": snap["items_written"] / n,
    }


def section(context: Any) -> Figures:
    from tools import bench
    from tools.mock_llm import MockLLM

    n = int(os.environ.get("BENCH_GATEWAY_CALLS", "50"))
    saved = {name: os.environ.get(name) for name in _LOOSE_API_BASE}
    os.environ.update(_LOOSE_API_BASE)
    mock = MockLLM().start()
    runtime = bench.fresh_runtime()
    session = requests.Session()
    try:
        tracked = _endpoint(session, runtime.url, mock.url, usage_tracking=True)
        untracked = _endpoint(session, runtime.url, mock.url, usage_tracking=False)
        messages = [{"role": "user", "content": "how much does the gateway add"}]
        direct_headers = {"Authorization": "Bearer sk-bench"}
        latency_rows, work_rows = [], []
        for label, stream in (("non-streamed", False), ("streamed", True)):
            extra = {"stream": True} if stream else {}
            direct = _timed(
                _chat(session, f"{mock.url}/v1/chat/completions", {"model": "gpt-4o-mini", "messages": messages, **extra}, direct_headers),
                n,
            )
            through = _timed(_chat(session, f"{runtime.url}/gateway/{tracked}/mlflow/invocations", {"messages": messages, **extra}), n)
            added = statistics.median(through) - statistics.median(direct)
            latency_rows.append(
                (
                    f"{label} chat: median ms straight to the mock / through the gateway (usage traced) / added",
                    f"{statistics.median(direct):.1f} / {statistics.median(through):.1f} / **{added:.1f}**",
                )
            )
            for name, tracking in ((tracked, "usage traced"), (untracked, "usage not tracked")):
                work = _dynamodb_per_call(
                    runtime, _chat(session, f"{runtime.url}/gateway/{name}/mlflow/invocations", {"messages": messages, **extra}), n
                )
                work_rows.append(
                    (f"{label}, {tracking}", f"{work['requests']:g}", work["by_type"], f"{work['read']:g}", f"{work['written']:g}")
                )
        load = " / ".join(f"{x:.1f}" for x in os.getloadavg())
        latency_rows.append(("calls per series (after 2 warm-up calls); load average (1 / 5 / 15 min) after", f"{n}; {load}"))
        lines = ["| gateway call | DynamoDB requests | by type | items read | items written |", "|---|---|---|---|---|"]
        lines += [f"| {' | '.join(row)} |" for row in work_rows]
        return Figures([table(latency_rows), "\n".join(lines)])
    finally:
        runtime.stop()
        mock.stop()
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
