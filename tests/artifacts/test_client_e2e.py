"""User flows with the real mlflow client: runs' artifacts, models, deleted runs, s3:// experiments.

Tests that need another feature (runs, logged models, the registry) are skipped until its handler exists,
so they start running as soon as the feature lands.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import boto3
import pytest

from tests.conftest import unique
from tools.artifact_bench import LambdaMeter

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
BUCKET = os.environ.get("BUCKET_NAME", "mlflow-serverless-artifacts")


def _feature(name: str) -> bool:
    return (ROOT / "functions" / name / "handler.py").exists()


needs_tracking = pytest.mark.skipif(not (_feature("experiments") and _feature("runs")), reason="experiments/runs features not built yet")
needs_models = pytest.mark.skipif(not _feature("logged_models"), reason="logged_models feature not built yet")
needs_registry = pytest.mark.skipif(not _feature("registry"), reason="registry feature not built yet")


@pytest.fixture
def mlflow_run(client: Any) -> Any:
    import mlflow

    mlflow.set_experiment(unique("art-e2e"))
    with mlflow.start_run() as run:
        yield run


def _list(client: Any, run_id: str, path: str | None = None) -> list[Any]:
    """``client.list_artifacts`` (which also lists the run's logged models, so needs that feature), else the
    run's own artifact repository: the same request to the artifacts routes."""
    if _feature("logged_models"):
        return client.list_artifacts(run_id, path)
    from mlflow.store.artifact.artifact_repository_registry import get_artifact_repository

    return get_artifact_repository(client.get_run(run_id).info.artifact_uri).list_artifacts(path)


def _paths(client: Any, run_id: str, path: str | None = None) -> list[tuple[str, bool]]:
    return [(f.path, f.is_dir) for f in _list(client, run_id, path)]


@needs_tracking
def test_logging_calls_store_in_s3_and_read_back(client: Any, mlflow_run: Any, tmp_path: Path, meter: LambdaMeter) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import mlflow
    import numpy as np

    run_id = mlflow_run.info.run_id
    assert mlflow_run.info.artifact_uri.startswith("mlflow-artifacts:/")
    assert mlflow_run.info.artifact_uri.endswith(f"/{run_id}/artifacts")

    single = tmp_path / "hello.txt"
    single.write_text("hello world")
    tree = tmp_path / "tree"
    (tree / "nested").mkdir(parents=True)
    (tree / "one.csv").write_text("a,b\n1,2\n")
    (tree / "nested" / "two.bin").write_bytes(bytes(range(256)) * 40)

    mlflow.log_artifact(str(single))
    mlflow.log_artifact(str(single), "copies")
    mlflow.log_artifacts(str(tree), "tree")
    mlflow.log_dict({"lr": 0.1, "layers": [1, 2]}, "cfg/config.json")
    mlflow.log_text("some notes", "notes/readme.txt")
    figure, axis = plt.subplots()
    axis.plot([0, 1], [1, 0])
    mlflow.log_figure(figure, "plots/line.png")
    plt.close(figure)
    mlflow.log_image(np.zeros((8, 8, 3), dtype=np.uint8), "plots/black.png")

    assert _paths(client, run_id) == [
        ("cfg", True),
        ("copies", True),
        ("hello.txt", False),
        ("notes", True),
        ("plots", True),
        ("tree", True),
    ]
    assert _paths(client, run_id, "tree") == [("tree/nested", True), ("tree/one.csv", False)]
    assert [(f.path, f.file_size) for f in _list(client, run_id, "tree/nested")] == [("tree/nested/two.bin", 10240)]
    assert _paths(client, run_id, "plots") == [("plots/black.png", False), ("plots/line.png", False)]

    out = Path(client.download_artifacts(run_id, "tree", str(tmp_path)))
    assert (out / "one.csv").read_text() == "a,b\n1,2\n"
    assert (out / "nested" / "two.bin").read_bytes() == bytes(range(256)) * 40
    assert mlflow.artifacts.load_dict(f"runs:/{run_id}/cfg/config.json") == {"lr": 0.1, "layers": [1, 2]}
    assert mlflow.artifacts.load_text(f"runs:/{run_id}/notes/readme.txt") == "some notes"
    assert Path(mlflow.artifacts.download_artifacts(f"runs:/{run_id}/plots/line.png")).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    summary = meter.summary()
    assert summary["artifact_bytes_through_lambda"] == 0
    assert "upload_artifact" not in summary["by_operation"] and "download_artifact" not in summary["by_operation"]


@needs_tracking
def test_small_put_path_when_threshold_unset(
    client: Any, mlflow_run: Any, tmp_path: Path, meter: LambdaMeter, monkeypatch: pytest.MonkeyPatch
) -> None:
    import mlflow

    monkeypatch.delenv("MLFLOW_MULTIPART_UPLOAD_MINIMUM_FILE_SIZE", raising=False)
    mlflow.log_dict({"put": True}, "via-put/data.json")
    mlflow.log_text("t", "via-put/t.txt")
    assert meter.summary()["by_operation"].get("upload_artifact") == 2
    assert "create_multipart_upload" not in meter.summary()["by_operation"]
    assert mlflow.artifacts.load_dict(f"runs:/{mlflow_run.info.run_id}/via-put/data.json") == {"put": True}


@needs_tracking
@pytest.mark.parametrize("threshold", ["0", None], ids=["multipart", "put"])
def test_writes_to_a_deleted_run_are_refused(client: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, threshold: str | None) -> None:
    if threshold is None:
        monkeypatch.delenv("MLFLOW_MULTIPART_UPLOAD_MINIMUM_FILE_SIZE", raising=False)
    experiment_id = client.create_experiment(unique("deleted-run"))
    run = client.create_run(experiment_id)
    run_id = run.info.run_id
    first = tmp_path / "first.txt"
    first.write_text("before delete")
    client.log_artifact(run_id, str(first))

    client.delete_run(run_id)
    late = tmp_path / "late.txt"
    late.write_text("after delete")
    with pytest.raises(Exception, match=f"The run {run_id} must be in the 'active' state"):
        client.log_artifact(run_id, str(late))
    with pytest.raises(Exception, match="must be in the 'active' state"):
        client.log_artifact(run_id, str(late), "sub/dir")
    # Reads still work, and nothing was written.
    assert _paths(client, run_id) == [("first.txt", False)]
    s3 = boto3.client("s3", endpoint_url=os.environ["S3_ENDPOINT_URL"])
    assert s3.list_multipart_uploads(Bucket=BUCKET, Prefix=f"mlartifacts/{experiment_id}/{run_id}/").get("Uploads", []) == []

    client.restore_run(run_id)
    client.log_artifact(run_id, str(late))
    assert _paths(client, run_id) == [("first.txt", False), ("late.txt", False)]


@needs_tracking
def test_run_deleted_during_an_upload_refuses_complete_and_drops_the_parts(client: Any, server: str) -> None:
    import requests

    experiment_id = client.create_experiment(unique("deleted-mid-upload"))
    run_id = client.create_run(experiment_id).info.run_id
    api = f"{server}/api/2.0/mlflow-artifacts"
    directory = f"{experiment_id}/{run_id}/artifacts/model"
    created = requests.post(f"{api}/mpu/create/{directory}", json={"path": "/tmp/w.bin", "num_parts": 1}).json()
    etag = requests.put(created["credentials"][0]["url"], data=b"weights").headers["ETag"]
    client.delete_run(run_id)

    body = {"path": "/tmp/w.bin", "upload_id": created["upload_id"], "parts": [{"part_number": 1, "etag": etag}]}
    refused = requests.post(f"{api}/mpu/complete/{directory}", json=body)
    assert refused.status_code == 400 and "must be in the 'active' state" in refused.json()["message"]
    s3 = boto3.client("s3", endpoint_url=os.environ["S3_ENDPOINT_URL"])
    assert s3.list_multipart_uploads(Bucket=BUCKET, Prefix=f"mlartifacts/{directory}/").get("Uploads", []) == []
    assert requests.get(f"{api}/artifacts", params={"path": directory}).json() == {}
    # Deleting a deleted run's artifacts stays allowed (mlflow gc does it).
    assert requests.delete(f"{api}/artifacts/{experiment_id}/{run_id}/artifacts").status_code == 200


@needs_tracking
def test_s3_experiment_keeps_working_in_direct_mode(
    client: Any, tmp_path: Path, meter: LambdaMeter, monkeypatch: pytest.MonkeyPatch
) -> None:
    import mlflow

    # The client talks to S3 itself (here: the runtime's moto), with its own credentials.
    monkeypatch.setenv("MLFLOW_S3_ENDPOINT_URL", os.environ["S3_ENDPOINT_URL"])
    prefix = f"direct/{unique('exp')}"
    experiment_id = client.create_experiment(unique("direct"), artifact_location=f"s3://{BUCKET}/{prefix}")
    assert client.get_experiment(experiment_id).artifact_location == f"s3://{BUCKET}/{prefix}"
    with mlflow.start_run(experiment_id=experiment_id) as run:
        mlflow.log_dict({"direct": 1}, "d/x.json")
        assert run.info.artifact_uri == f"s3://{BUCKET}/{prefix}/{run.info.run_id}/artifacts"

    s3 = boto3.client("s3", endpoint_url=os.environ["S3_ENDPOINT_URL"])
    body = s3.get_object(Bucket=BUCKET, Key=f"{prefix}/{run.info.run_id}/artifacts/d/x.json")["Body"].read()
    assert json.loads(body) == {"direct": 1}
    assert [f.path for f in _list(client, run.info.run_id, "d")] == ["d/x.json"]
    assert mlflow.artifacts.load_dict(f"runs:/{run.info.run_id}/d/x.json") == {"direct": 1}
    assert not any(
        r.operation in {"upload_artifact", "create_multipart_upload", "complete_multipart_upload", "presigned_download", "list_artifacts"}
        for r in meter.invocations
    )


def _iris() -> tuple[Any, Any, Any]:
    from sklearn.datasets import load_iris
    from sklearn.linear_model import LogisticRegression

    features, labels = load_iris(return_X_y=True)
    return LogisticRegression(max_iter=300).fit(features, labels), features, labels


@needs_tracking
@needs_models
def test_sklearn_model_logged_and_loaded_by_run_and_model_id(client: Any, meter: LambdaMeter) -> None:
    import mlflow
    import numpy as np

    model, features, _ = _iris()
    mlflow.set_experiment(unique("sk"))
    with mlflow.start_run() as run:
        info = mlflow.sklearn.log_model(model, name="model", input_example=features[:2], pip_requirements=["scikit-learn"])
    expected = model.predict(features[:5])
    by_run = mlflow.sklearn.load_model(f"runs:/{run.info.run_id}/model")
    by_id = mlflow.pyfunc.load_model(f"models:/{info.model_id}")
    assert np.array_equal(by_run.predict(features[:5]), expected)
    assert np.array_equal(by_id.predict(features[:5]), expected)
    assert meter.summary()["artifact_bytes_through_lambda"] == 0


@needs_tracking
@needs_models
@needs_registry
def test_sklearn_model_registered_and_loaded_by_alias(client: Any) -> None:
    import mlflow
    import numpy as np

    model, features, _ = _iris()
    name = unique("iris")
    mlflow.set_experiment(unique("sk-reg"))
    with mlflow.start_run():
        info = mlflow.sklearn.log_model(model, name="model", registered_model_name=name, pip_requirements=["scikit-learn"])
    assert str(info.registered_model_version) == "1"  # a string through the REST store, as against mlflow server
    client.set_registered_model_alias(name, "champion", "1")
    loaded = mlflow.pyfunc.load_model(f"models:/{name}@champion")
    assert np.array_equal(loaded.predict(features[:5]), model.predict(features[:5]))
    assert np.array_equal(mlflow.sklearn.load_model(f"models:/{name}/1").predict(features[:5]), model.predict(features[:5]))


@needs_tracking
@needs_models
def test_benchmark_model_transfer_moves_no_artifact_bytes_through_lambda(server: str, meter: LambdaMeter) -> None:
    from types import SimpleNamespace

    from tools.artifact_bench import measure_model_transfer

    result = measure_model_transfer(size_mb=12, runtime=SimpleNamespace(url=server), meter=meter)
    for phase in ("upload", "download"):
        assert result[phase]["artifact_bytes_through_lambda"] == 0
        assert result[phase]["request_bytes"] + result[phase]["response_bytes"] < 64 * 1024
    # 12 MB of weights is two 10 MB parts behind one create and one complete.
    assert result["upload"]["by_operation"]["create_multipart_upload"] == result["upload"]["by_operation"]["complete_multipart_upload"]
    assert result["download"]["by_operation"]["presigned_download"] >= 1
