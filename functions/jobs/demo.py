"""``demo/generate`` and ``demo/delete``: MLflow's answers, with the work done by a job.

MLflow's server runs its demo generators (``mlflow.demo``) inside the request: about 800 calls to its own store
and two minutes here, far past API Gateway's 30 s. Ours answers at once and leaves the generators to the job
worker, which runs them with the stock client against this API. ``generate`` creates the demo experiment first,
so its answer carries the experiment id the Home page's "Start Demo" navigates to, and the data fills in as the
job runs. Whether a generator's data is there is read from the version tags MLflow's generators leave on the demo
experiment (``mlflow.demo.version.<feature>``), as their ``is_generated`` reads them.
"""

from __future__ import annotations

from typing import Any

from serverless_mlflow.auth import store as auth_store
from serverless_mlflow.auth.permissions import EXPERIMENT
from serverless_mlflow.core.errors import MlflowError
from serverless_mlflow.jobs import job_queue
from serverless_mlflow.store import experiments, job_kinds
from serverless_mlflow.store import jobs as store

DEMO_EXPERIMENT_NAME = "MLflow Demo"
# A generator's ``store_version`` tag: its name is a ``DemoFeature`` (a str enum) formatted by an f-string, which
# on Python 3.11 is the member's qualified name (``mlflow.demo.version.DemoFeature.TRACES``).
VERSION_TAG_PREFIX = "mlflow.demo.version.DemoFeature."
# MLflow's demo generators in its registry's order, with their data versions (tests compare with mlflow.demo).
GENERATORS: tuple[tuple[str, int], ...] = (
    ("prompts", 1),
    ("traces", 3),
    ("custom_view", 1),
    ("saved_views", 1),
    ("evaluation", 2),
    ("judges", 1),
    ("issues", 4),
    ("review_queues", 1),
)
IN_FLIGHT = [store.PENDING, store.RUNNING]


def _version_tags(experiment: dict[str, Any]) -> dict[str, str]:
    return {
        tag["key"][len(VERSION_TAG_PREFIX) :].lower(): tag["value"]
        for tag in experiment.get("tags", [])
        if tag["key"].startswith(VERSION_TAG_PREFIX)
    }


def _missing(experiment: dict[str, Any] | None, names: list[str]) -> list[str]:
    if experiment is None or experiment.get("lifecycle_stage") != "active":
        return names
    stored = _version_tags(experiment)
    versions = dict(GENERATORS)
    return [name for name in names if stored.get(name) != str(versions[name])]


def _experiment() -> dict[str, Any] | None:
    return experiments.get_experiment_by_name(DEMO_EXPERIMENT_NAME)


def generate(features: list[Any] | None, creator: str | None) -> dict[str, Any]:
    names = [name for name, _ in GENERATORS if features is None or name in features]
    experiment = _experiment()
    missing = _missing(experiment, names)
    if experiment is not None and not missing:
        experiment_id = experiment["experiment_id"]
        return {
            "status": "exists",
            "experiment_id": experiment_id,
            "features_generated": [],
            "navigation_url": f"/experiments/{experiment_id}",
        }
    if experiment is None:
        try:
            created = experiments.create_experiment(DEMO_EXPERIMENT_NAME, None, {})
        except MlflowError:
            pass  # created by a concurrent request: read it below
        else:
            if creator is not None:
                # The job writes into it as its creator: MANAGE, as MLflow's auth grants whoever creates an experiment.
                auth_store.set_grant(creator, EXPERIMENT, str(created), "MANAGE")
        experiment = _experiment()
    experiment_id = experiment["experiment_id"] if experiment else None
    if missing and not store.search(job_kinds.DEMO_GENERATE, IN_FLIGHT, None):
        job = store.create(job_kinds.DEMO_GENERATE, {"features": features}, None, creator)
        job_queue.submit(job["job_id"], creator)
    return {
        "status": "created",
        "experiment_id": experiment_id,
        "features_generated": missing,
        "navigation_url": f"/experiments/{experiment_id}" if experiment_id else "/experiments",
    }


def delete(creator: str | None) -> dict[str, Any]:
    """MLflow deletes each generator's data, then the experiment; the job worker does both. The answer names the
    features whose data the experiment's version tags show."""
    experiment = _experiment()
    if experiment is None:
        return {"status": "deleted", "features_deleted": []}
    stored = _version_tags(experiment)
    deleted = [name for name, _ in GENERATORS if name in stored]
    job = store.create(job_kinds.DEMO_DELETE, {}, None, creator)
    job_queue.submit(job["job_id"], creator)
    return {"status": "deleted", "features_deleted": deleted}
