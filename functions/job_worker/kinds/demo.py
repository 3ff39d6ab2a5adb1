"""MLflow's demo data (``mlflow.demo``), generated and deleted by MLflow's own generators with the stock client
against this server's API (``JOB_SERVER_URL``): the data is exactly what ``mlflow server`` makes, through the same
requests. One generator per step: the job checkpoints the features done, reports progress, and stops between
generators when canceled or out of time.

Under basic auth the client calls the API as the job's creator (``credentials.as_creator``).
"""

from __future__ import annotations

import os
from typing import Any

from ..credentials import as_creator
from ..runner import JobRun, Suspend


def _client() -> Any:
    import mlflow

    url = os.environ["JOB_SERVER_URL"]
    mlflow.set_tracking_uri(url)
    mlflow.set_registry_uri(url)
    return mlflow.MlflowClient(url, registry_uri=url)


def generate(params: dict[str, Any], run: JobRun) -> dict[str, Any]:
    with as_creator(run):
        return _generate(params, run)


def delete(params: dict[str, Any], run: JobRun) -> dict[str, Any]:
    with as_creator(run):
        return _delete(params, run)


def _generate(params: dict[str, Any], run: JobRun) -> dict[str, Any]:
    client = _client()
    from mlflow.demo import DEMO_EXPERIMENT_NAME, generate_all_demos
    from mlflow.demo.registry import demo_registry

    features = params.get("features")
    names = [str(name.value) for name in demo_registry.list_generators() if features is None or name in features]
    state = run.checkpoint or {"done": [], "generated": []}
    experiment = client.get_experiment_by_name(DEMO_EXPERIMENT_NAME)
    if experiment is not None and experiment.lifecycle_stage != "active":
        client.restore_experiment(experiment.experiment_id)  # demo/delete left it deleted; Start Demo brings it back
    for name in names:
        if name in state["done"]:
            continue
        run.check()
        if not run.time_left():
            raise Suspend(state)
        state["generated"] += [str(result.feature.value) for result in generate_all_demos(features=[name])]
        state["done"].append(name)
        run.progress("generate", len(state["done"]), len(names), "features")
    experiment = client.get_experiment_by_name(DEMO_EXPERIMENT_NAME)
    return {"experiment_id": experiment.experiment_id if experiment else None, "features_generated": state["generated"]}


def _delete(params: dict[str, Any], run: JobRun) -> dict[str, Any]:
    """MLflow's ``_delete_demo``: each generator's data, then the demo experiment."""
    client = _client()
    from mlflow.demo import DEMO_EXPERIMENT_NAME
    from mlflow.demo.registry import demo_registry

    deleted = []
    for name in demo_registry.list_generators():
        run.check()
        generator = demo_registry.get(name)()
        if generator._data_exists():
            generator.delete_demo()
            deleted.append(str(name.value))
    experiment = client.get_experiment_by_name(DEMO_EXPERIMENT_NAME)
    if experiment is not None and experiment.lifecycle_stage == "active":
        client.delete_experiment(experiment.experiment_id)
    return {"features_deleted": deleted}
