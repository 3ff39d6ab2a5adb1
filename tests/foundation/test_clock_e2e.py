"""One clock (issue 13): every feature stamps its times from ``serverless_mlflow.core.clock``, so freezing that one
function freezes the creation and update times of experiments, runs, registered models, versions, logged
models and runs, end to end through the real mlflow client."""

from __future__ import annotations

import pytest

from serverless_mlflow.core import clock
from tests.conftest import unique

pytestmark = pytest.mark.e2e

FROZEN = 1_234_567_890_123


@pytest.fixture
def frozen_clock(server: str, monkeypatch: pytest.MonkeyPatch) -> int:
    monkeypatch.setattr(clock, "now_millis", lambda: FROZEN)
    return FROZEN


def test_every_feature_reads_the_one_clock(client, frozen_clock: int) -> None:
    experiment_id = client.create_experiment(unique("clock"))
    experiment = client.get_experiment(experiment_id)
    assert (experiment.creation_time, experiment.last_update_time) == (frozen_clock, frozen_clock)

    client.rename_experiment(experiment_id, unique("clock-renamed"))
    assert client.get_experiment(experiment_id).last_update_time == frozen_clock

    name = unique("clock-model")
    model = client.create_registered_model(name)
    assert (model.creation_timestamp, model.last_updated_timestamp) == (frozen_clock, frozen_clock)
    version = client.create_model_version(name, "s3://bucket/model")
    assert (version.creation_timestamp, version.last_updated_timestamp) == (frozen_clock, frozen_clock)

    logged = client.create_logged_model(experiment_id)
    assert (logged.creation_timestamp, logged.last_updated_timestamp) == (frozen_clock, frozen_clock)


def test_a_deleted_run_is_stamped_by_the_one_clock(client, frozen_clock: int) -> None:
    experiment_id = client.create_experiment(unique("clock-runs"))
    run = client.create_run(experiment_id)
    client.delete_run(run.info.run_id)
    # deleted_time is not on the wire: read it through the layer's store, as the restore path does.
    from serverless_mlflow.store import runs as run_store

    assert run_store.read_run(run.info.run_id).info["deleted_time"] == frozen_clock
