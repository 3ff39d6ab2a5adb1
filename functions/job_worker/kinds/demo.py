"""MLflow's demo data (``mlflow.demo``), generated and deleted by MLflow's own generators with the stock client
against this server's API (``JOB_SERVER_URL``): the data is exactly what ``mlflow server`` makes, through the same
requests. One generator per step: the job checkpoints the features done, reports progress, and stops between
generators when canceled or out of time.

Under basic auth the client calls the API as the job's creator (``credentials.as_creator``), with that user's
rights and no more. One step of MLflow's generators needs a right the creator lacks: the review-queue generator marks
items of its demo queue reviewed by the demo reviewers, which MLflow's auth allows only a member of the queue
(``validate_can_review_queue_item``: "even a manager must assign themselves first"). The creator manages the demo
experiment, so it may assign itself: it does, sets the statuses, and puts the queue's users back as they were
(``_seed_as_member``). The data ends up as MLflow's.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ..client_uri import pointed_at_server
from ..credentials import as_creator
from ..runner import JobRun, Suspend


@contextmanager
def _seed_as_member() -> Iterator[None]:
    from mlflow.demo.generators.review_queues import ReviewQueuesDemoGenerator
    from mlflow.exceptions import MlflowException

    original = ReviewQueuesDemoGenerator._seed_progress

    def seed(self: Any, store: Any, queue_id: str, item_ids: list[str]) -> None:
        try:
            original(self, store, queue_id, item_ids)
            return
        except MlflowException as error:
            if error.error_code != "PERMISSION_DENIED":
                raise
        users = list(store.get_review_queue(queue_id).users)
        store.update_review_queue(queue_id, users=[*users, os.environ["MLFLOW_TRACKING_USERNAME"]])
        try:
            original(self, store, queue_id, item_ids)
        finally:
            store.update_review_queue(queue_id, users=users)

    ReviewQueuesDemoGenerator._seed_progress = seed  # type: ignore[method-assign]
    try:
        yield
    finally:
        ReviewQueuesDemoGenerator._seed_progress = original  # type: ignore[method-assign]


def _client(url: str) -> Any:
    import mlflow

    return mlflow.MlflowClient(url, registry_uri=url)


def generate(params: dict[str, Any], run: JobRun) -> dict[str, Any]:
    with as_creator(run), _seed_as_member(), pointed_at_server() as url:
        return _generate(params, run, _client(url))


def delete(params: dict[str, Any], run: JobRun) -> dict[str, Any]:
    with as_creator(run), pointed_at_server() as url:
        return _delete(params, run, _client(url))


def _generate(params: dict[str, Any], run: JobRun, client: Any) -> dict[str, Any]:
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


def _delete(params: dict[str, Any], run: JobRun, client: Any) -> dict[str, Any]:
    """MLflow's ``_delete_demo``: each generator's data, then the demo experiment."""
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
