"""Test what we ship: the local runtime on the built assets (``python -m local --built``, local/built.py) serves
the stock mlflow client. The layer, every function and the job worker are loaded from their builds for this
machine (requirements/*.lock, the recipe synth uses for Lambda), not from the source tree; the runtime says so
only after checking every loaded module of ours (and protobuf) came from them.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from infra import assets
from tests.conftest import runtime_process, unique

pytestmark = pytest.mark.xdist_group("built-assets")

LOADED_FROM_BUILT = "all loaded from them"


def _wait_for_line(log: Path, text: str, timeout: float = 300) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        content = log.read_text(errors="replace") if log.exists() else ""
        if text in content or "were loaded from elsewhere" in content:
            return content
        time.sleep(0.5)
    raise TimeoutError(f"no {text!r} in {log}")


def test_stock_client_logs_a_run_a_metric_and_a_trace_through_the_built_assets(server: str, tmp_path: Path) -> None:
    import mlflow

    # Built before the process starts (minutes on a fresh machine), so its start is only a start.
    assets.build_layer(assets.HOST)
    assets.build_worker(assets.HOST)
    log = tmp_path / "built-runtime.log"
    environment = {"LOCAL_ASSETS": "built", "TABLE_NAME": unique("built"), "BUCKET_NAME": unique("built"), "ACCESS_LOG": "false"}
    with runtime_process(environment, output=log) as url:
        output = _wait_for_line(log, LOADED_FROM_BUILT)
        assert LOADED_FROM_BUILT in output, output[-3000:]
        assert str(assets.ASSETS_DIR / assets.HOST.name) in output

        client = mlflow.MlflowClient(url)
        experiment_id = client.create_experiment(unique("built"))
        run = client.create_run(experiment_id)
        client.log_metric(run.info.run_id, "loss", 0.25, step=3)
        client.set_terminated(run.info.run_id)
        mlflow.set_tracking_uri(url)
        mlflow.set_experiment(experiment_id=experiment_id)
        with mlflow.start_span(name="built-span") as span:
            span.set_inputs({"question": "what ships?"})
            span.set_outputs({"answer": "the built assets"})
        mlflow.flush_trace_async_logging()

        logged = client.get_run(run.info.run_id)
        assert logged.data.metrics == {"loss": 0.25}
        assert [m.step for m in client.get_metric_history(run.info.run_id, "loss")] == [3]
        traces = mlflow.search_traces(locations=[experiment_id], return_type="list")
        assert [trace.info.trace_id for trace in traces] == [span.trace_id]
        assert [s.name for s in traces[0].data.spans] == ["built-span"]


def test_the_throttle_hook_throttles_the_built_layers_botocore(server: str, tmp_path: Path) -> None:
    """The sustained-load bench's storm runs on the built assets: ``tools/throttle_hook`` (loaded at interpreter
    start) must neither import the venv's botocore ahead of the layer's (the runtime refuses to serve then) nor miss
    the layer's: a throttled request answers MLflow's 429 and writes nothing; unthrottled, the same request works."""
    import requests

    assets.build_layer(assets.HOST)
    assets.build_worker(assets.HOST)
    log = tmp_path / "built-throttled.log"
    throttle = tmp_path / "throttle"
    throttle.write_text("1")
    hook = str(Path(__file__).resolve().parents[2] / "tools" / "throttle_hook")
    environment = {
        "LOCAL_ASSETS": "built",
        "TABLE_NAME": unique("built"),
        "BUCKET_NAME": unique("built"),
        "ACCESS_LOG": "false",
        "PYTHONPATH": hook,
        "TRACE_LOAD_THROTTLE_FILE": str(throttle),
    }
    name = unique("throttled")
    with runtime_process(environment, output=log) as url:
        output = _wait_for_line(log, LOADED_FROM_BUILT)
        assert LOADED_FROM_BUILT in output, output[-3000:]

        refused = requests.post(f"{url}/api/2.0/mlflow/experiments/create", json={"name": name}, timeout=60)
        assert refused.status_code == 429, refused.text
        assert refused.json()["error_code"] == "REQUEST_LIMIT_EXCEEDED"
        assert throttle.with_name("throttle.count").read_text().split()

        throttle.write_text("0")
        # The hook rereads its file at most every 0.5 s: MLflow's client retries a 429 as this loop does.
        for _ in range(100):
            answer = requests.post(f"{url}/api/2.0/mlflow/experiments/create", json={"name": name}, timeout=60)
            if answer.status_code != 429:
                break
            time.sleep(0.1)
        assert answer.status_code == 200, answer.text
        found = requests.get(f"{url}/api/2.0/mlflow/experiments/get-by-name", params={"experiment_name": name}, timeout=60)
        assert found.json()["experiment"]["experiment_id"] == answer.json()["experiment_id"]
