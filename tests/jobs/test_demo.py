"""``demo/generate`` and ``demo/delete``: MLflow's answers at once, MLflow's own generators run by the job worker
with the stock client against this server. The generation is compared with ``mlflow server`` doing it in its
request: the same answers and the same demo data (experiment tags, traces, prompts)."""

from __future__ import annotations

import time
from typing import Any

import mlflow
import pytest
import requests
from mlflow.demo.registry import demo_registry

from tests.conftest import runtime_process, unique
from tests.mlflow_reference import asgi_reference_server

GENERATE = "/ajax-api/3.0/mlflow/demo/generate"
DELETE = "/ajax-api/3.0/mlflow/demo/delete"
ALL_FEATURES = [str(name.value) for name in demo_registry.list_generators()]


def post(url: str, path: str, body: Any = None) -> tuple[int, dict[str, Any]]:
    response = requests.post(f"{url}{path}", json=body, timeout=600)
    return response.status_code, response.json()


def test_generator_catalog_is_mlflows() -> None:
    """The request path knows MLflow's generators without importing mlflow: the same names, order, versions and
    version tags."""
    from jobs.demo import GENERATORS, VERSION_TAG_PREFIX

    generators = [demo_registry.get(name)() for name in demo_registry.list_generators()]
    assert list(GENERATORS) == [(str(g.name.value), g.version) for g in generators]
    assert [f"mlflow.demo.version.{g.name}" for g in generators] == [VERSION_TAG_PREFIX + name.upper() for name, _ in GENERATORS]


def wait_for_job(url: str, job_name: str, seconds: float) -> dict[str, Any]:
    deadline = time.monotonic() + seconds
    while True:
        jobs = requests.post(f"{url}/ajax-api/3.0/jobs/search", json={"job_name": job_name}, timeout=60).json()["jobs"]
        if jobs and jobs[-1]["status"] not in ("PENDING", "RUNNING"):
            return jobs[-1]
        assert time.monotonic() < deadline, f"{job_name} still running: {jobs[-1] if jobs else None}"
        time.sleep(1)


def demo_data(url: str, experiment_id: str) -> dict[str, Any]:
    client = mlflow.MlflowClient(url, registry_uri=url)
    experiment = client.get_experiment(experiment_id)
    traces = client.search_traces(locations=[experiment_id], max_results=500)
    mlflow.set_registry_uri(url)
    prompts = mlflow.genai.search_prompts(filter_string="name LIKE 'mlflow-demo%'")
    return {
        "name": experiment.name,
        "version_tags": {k: v for k, v in experiment.tags.items() if k.startswith("mlflow.demo.version.")},
        "traces": len(traces),
        "prompts": sorted(p.name for p in prompts),
    }


@pytest.mark.long
@pytest.mark.e2e
def test_start_demo_generates_and_deletes_mlflows_demo_data(server: str) -> None:
    reference = asgi_reference_server()
    with runtime_process({"TABLE_NAME": unique("demo"), "BUCKET_NAME": unique("demo")}) as url:
        started = time.monotonic()
        status, answer = post(url, GENERATE)
        assert time.monotonic() - started < 10  # the Home page waits for this answer
        assert status == 200
        experiment_id = answer["experiment_id"]
        assert answer == {
            "status": "created",
            "experiment_id": experiment_id,
            "features_generated": ALL_FEATURES,
            "navigation_url": f"/experiments/{experiment_id}",
        }
        # A second Start Demo while the job runs starts no second job.
        assert post(url, GENERATE)[1]["experiment_id"] == experiment_id
        job = wait_for_job(url, "demo_generate", seconds=900)
        assert job["status"] == "SUCCEEDED", job
        assert job["progress"]["completed"] == job["progress"]["total"] == len(ALL_FEATURES)
        jobs = requests.post(f"{url}/ajax-api/3.0/jobs/search", json={"job_name": "demo_generate"}, timeout=60).json()["jobs"]
        assert len(jobs) == 1

        ref_status, ref_answer = post(reference.url, GENERATE)
        assert ref_status == 200 and ref_answer["status"] == "created"
        assert ref_answer["features_generated"] == answer["features_generated"]
        ours, theirs = demo_data(url, experiment_id), demo_data(reference.url, ref_answer["experiment_id"])
        assert ours == theirs
        assert ours["traces"] > 0 and ours["prompts"]

        # Generated: MLflow's "exists" answer.
        assert post(url, GENERATE) == (
            200,
            {
                "status": "exists",
                "experiment_id": experiment_id,
                "features_generated": [],
                "navigation_url": f"/experiments/{experiment_id}",
            },
        )
        assert post(reference.url, GENERATE)[1]["status"] == "exists"

        status, deleted = post(url, DELETE)
        ref_deleted = post(reference.url, DELETE)
        assert (status, deleted) == (200, {"status": "deleted", "features_deleted": ALL_FEATURES})
        assert ref_deleted == (200, deleted)
        assert wait_for_job(url, "demo_delete", seconds=600)["status"] == "SUCCEEDED"
        client = mlflow.MlflowClient(url)
        assert client.get_experiment(experiment_id).lifecycle_stage == "deleted"
        assert (
            client.get_experiment(experiment_id).lifecycle_stage
            == mlflow.MlflowClient(reference.url).get_experiment(ref_answer["experiment_id"]).lifecycle_stage
        )
