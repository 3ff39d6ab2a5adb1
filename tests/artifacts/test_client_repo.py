"""The real mlflow 3.17 artifact repository (``mlflow-artifacts:``) against the local runtime.

No tracking entities are needed here: the repository is pointed at a fresh root, so these tests pin the
transport (presigned multipart upload, presigned download, listing, small PUTs) on their own.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import boto3
import pytest
from mlflow.store.artifact.mlflow_artifacts_repo import MlflowArtifactsRepository

from serverless_mlflow.store.artifact_locations import artifact_key
from tests.conftest import unique
from tools.artifact_bench import LambdaMeter

pytestmark = pytest.mark.e2e

MB = 1024 * 1024


def _repo(server: str) -> MlflowArtifactsRepository:
    return MlflowArtifactsRepository(f"mlflow-artifacts:/{unique('repo')}", tracking_uri=server)


def _dir(path: Path) -> str:
    path.mkdir(parents=True, exist_ok=True)
    return str(path)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(MB):
            digest.update(chunk)
    return digest.hexdigest()


def _tree(tmp_path: Path) -> Path:
    src = tmp_path / "src"
    (src / "sub" / "deeper").mkdir(parents=True)
    (src / "a.txt").write_text("alpha")
    (src / "empty.txt").write_bytes(b"")
    (src / "sub" / "b.json").write_text('{"b": 1}')
    (src / "sub" / "deeper" / "c.bin").write_bytes(os.urandom(3000))
    (src / "name with spaces & ünïcode.txt").write_text("spaces")
    return src


def test_multipart_roundtrip_of_a_directory(server: str, tmp_path: Path, meter: LambdaMeter) -> None:
    # conftest sets MLFLOW_MULTIPART_UPLOAD_MINIMUM_FILE_SIZE=0: every file, even an empty one, is multipart.
    repo = _repo(server)
    src = _tree(tmp_path)
    repo.log_artifacts(str(src), "data")

    operations = meter.summary()["by_operation"]
    assert operations.get("create_multipart_upload") == 5 and operations.get("complete_multipart_upload") == 5
    assert "upload_artifact" not in operations
    assert meter.summary()["artifact_bytes_through_lambda"] == 0

    top = repo.list_artifacts("data")
    assert [(f.path, f.is_dir, f.file_size) for f in top] == [
        ("data/a.txt", False, 5),
        ("data/empty.txt", False, 0),
        ("data/name with spaces & ünïcode.txt", False, 6),
        ("data/sub", True, None),
    ]
    assert [f.path for f in repo.list_artifacts("data/sub")] == ["data/sub/b.json", "data/sub/deeper"]

    meter.reset()
    out = Path(repo.download_artifacts("data", _dir(tmp_path / "out")))
    for original in src.rglob("*"):
        if original.is_file():
            assert (out / original.relative_to(src)).read_bytes() == original.read_bytes()
    summary = meter.summary()
    assert summary["by_operation"].get("presigned_download") == 5
    assert "download_artifact" not in summary["by_operation"]
    assert summary["artifact_bytes_through_lambda"] == 0


def test_small_files_are_put_when_multipart_threshold_is_unset(
    server: str, tmp_path: Path, meter: LambdaMeter, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The 3.17 default: files under 500 MB are PUT to the server; small ones must still work.
    monkeypatch.delenv("MLFLOW_MULTIPART_UPLOAD_MINIMUM_FILE_SIZE", raising=False)
    repo = _repo(server)
    small = tmp_path / "small.txt"
    small.write_text("x" * 1000)
    repo.log_artifact(str(small), "dir")
    assert meter.summary()["by_operation"] == {"upload_artifact": 1}
    assert [(f.path, f.file_size) for f in repo.list_artifacts("dir")] == [("dir/small.txt", 1000)]
    assert Path(repo.download_artifacts("dir/small.txt", _dir(tmp_path / "out"))).read_text() == "x" * 1000


def test_put_over_the_limit_fails_with_the_fix_in_the_message(server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MLFLOW_MULTIPART_UPLOAD_MINIMUM_FILE_SIZE", raising=False)
    repo = _repo(server)
    # Over the 4 MiB PUT limit but under Lambda's 6 MB payload once base64-encoded: our function answers.
    # (A larger PUT never reaches it: API Gateway answers 413, see test_routes.)
    size = 4 * MB + 256 * 1024
    big = tmp_path / "over.bin"
    big.write_bytes(b"\0" * size)
    with pytest.raises(Exception, match="MLFLOW_MULTIPART_UPLOAD_MINIMUM_FILE_SIZE"):
        repo.log_artifact(str(big))
    # The fix named in the message works.
    monkeypatch.setenv("MLFLOW_MULTIPART_UPLOAD_MINIMUM_FILE_SIZE", str(4 * MB))
    repo.log_artifact(str(big))
    assert [(f.path, f.file_size) for f in repo.list_artifacts()] == [("over.bin", size)]


def test_download_of_a_missing_file_raises(server: str, tmp_path: Path) -> None:
    repo = _repo(server)
    with pytest.raises(Exception, match=r"does not exist|404"):
        repo._download_file("nope.txt", str(tmp_path / "nope.txt"))


@pytest.mark.slow
def test_file_over_100_mb_is_uploaded_in_parts_and_downloaded_intact(server: str, tmp_path: Path, meter: LambdaMeter) -> None:
    """What matters, not which other calls the client happens to make meanwhile (it asks ``server_info`` when its
    cache expires, for one): no artifact byte passes through Lambda either way, the upload is one multipart
    upload of 11 parts sent straight to S3, and the file comes back intact."""
    root = unique("repo")
    repo = MlflowArtifactsRepository(f"mlflow-artifacts:/{root}", tracking_uri=server)
    big = tmp_path / "big.bin"
    with big.open("wb") as handle:
        for _ in range(105):
            handle.write(os.urandom(MB))
    repo.log_artifact(str(big), "blobs")

    upload = meter.summary()
    assert upload["artifact_bytes_through_lambda"] == 0
    assert upload["by_operation"].get("create_multipart_upload") == 1 and upload["by_operation"].get("complete_multipart_upload") == 1
    assert "upload_artifact" not in upload["by_operation"]
    assert upload["request_bytes"] + upload["response_bytes"] < 64 * 1024  # presigned URLs and part ETags only
    # 105 MB in the client's 10 MB parts (MLFLOW_MULTIPART_UPLOAD_CHUNK_SIZE): S3's ETag of a multipart object
    # ends with its part count.
    s3 = boto3.client("s3", endpoint_url=os.environ["S3_ENDPOINT_URL"])
    stored = s3.head_object(Bucket=os.environ["BUCKET_NAME"], Key=artifact_key(f"{root}/blobs/big.bin"))
    assert stored["ContentLength"] == 105 * MB and stored["ETag"].strip('"').endswith("-11")

    meter.reset()
    out = Path(repo.download_artifacts("blobs/big.bin", _dir(tmp_path / "out")))
    assert _sha256(out) == _sha256(big)
    download = meter.summary()
    assert download["artifact_bytes_through_lambda"] == 0
    assert download["by_operation"].get("presigned_download") == 1 and "download_artifact" not in download["by_operation"]
    assert download["response_bytes"] < 64 * 1024


def test_proxied_download_follows_the_redirect_to_s3(
    server: str, tmp_path: Path, meter: LambdaMeter, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A client that turns presigned downloads off GETs artifacts/<path>: answered with a 302 to S3.
    monkeypatch.setenv("MLFLOW_ENABLE_PROXY_MULTIPART_DOWNLOAD", "false")
    repo = _repo(server)
    payload = os.urandom(300_000)
    source = tmp_path / "p.bin"
    source.write_bytes(payload)
    repo.log_artifact(str(source))
    meter.reset()
    assert Path(repo.download_artifacts("p.bin", _dir(tmp_path / "out"))).read_bytes() == payload
    downloads = [r for r in meter.invocations if r.operation == "download_artifact"]
    assert [(r.status, r.response_bytes) for r in downloads] == [(302, 0)]
