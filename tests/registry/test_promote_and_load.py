"""The whole promote-and-load flow with the real client: log a model (logged model + artifacts),
register it, promote with aliases, load it back by alias, by version and by 'latest'."""

from __future__ import annotations

import pytest

from tests.conftest import unique

pytestmark = pytest.mark.e2e


def test_log_register_alias_load(server: str) -> None:
    import mlflow
    import pandas as pd
    from mlflow import MlflowClient

    class AddN(mlflow.pyfunc.PythonModel):
        def __init__(self, n: int) -> None:
            self.n = n

        def predict(self, context, model_input, params=None):
            return model_input + self.n

    mlflow.set_tracking_uri(server)
    mlflow.set_experiment(unique("promote"))
    name = unique("promoted")
    client = MlflowClient(server)
    with mlflow.start_run() as run:
        first = mlflow.pyfunc.log_model(name="model", python_model=AddN(1), registered_model_name=name, pip_requirements=[])
        second = mlflow.pyfunc.log_model(name="model2", python_model=AddN(2), registered_model_name=name, pip_requirements=[])
    assert (str(first.registered_model_version), str(second.registered_model_version)) == ("1", "2")

    v1 = client.get_model_version(name, "1")
    assert v1.run_id == run.info.run_id and v1.source == f"models:/{first.model_id}"
    # The download URI is the logged model's artifact location, as MLflow resolves it.
    assert client.get_model_version_download_uri(name, "1") == client.get_logged_model(first.model_id).artifact_location

    client.set_registered_model_alias(name, "champion", "1")
    frame = pd.DataFrame({"x": [1, 2]})
    assert mlflow.pyfunc.load_model(f"models:/{name}@champion").predict(frame)["x"].tolist() == [2, 3]
    assert mlflow.pyfunc.load_model(f"models:/{name}/2").predict(frame)["x"].tolist() == [3, 4]
    assert mlflow.pyfunc.load_model(f"models:/{name}/latest").predict(frame)["x"].tolist() == [3, 4]

    # Promote version 2: the alias moves, loading by alias follows it.
    client.set_registered_model_alias(name, "champion", "2")
    assert client.get_model_version_by_alias(name, "champion").version == "2"
    assert mlflow.pyfunc.load_model(f"models:/{name}@champion").predict(frame)["x"].tolist() == [3, 4]

    # register_model from a runs:/ URI (the client maps it to the run's logged model).
    registered = mlflow.register_model(f"runs:/{run.info.run_id}/model", name)
    assert registered.version == "3"
    assert mlflow.pyfunc.load_model(f"models:/{name}/3").predict(frame)["x"].tolist() == [2, 3]
