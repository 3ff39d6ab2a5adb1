"""The mlflow-artifacts routes over HTTP against the local runtime (embedded moto S3), without the mlflow client.

These pin the wire contract the 3.17 client relies on (``http_artifact_repo`` / ``mlflow_artifacts_repo``)
and the security rules: traversal rejected, presigned URLs scoped and short-lived, aborted uploads
leave no parts behind.
"""

from __future__ import annotations

import hashlib
import http.client
import json
import os
from concurrent.futures import ThreadPoolExecutor
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import boto3
import pytest
import requests

from tests.conftest import unique

pytestmark = pytest.mark.e2e

BUCKET = os.environ.get("BUCKET_NAME", "mlflow-serverless-artifacts")
PREFIX = "mlartifacts"


@pytest.fixture
def api(server: str) -> str:
    return f"{server}/api/2.0/mlflow-artifacts"


@pytest.fixture
def s3(server: str) -> Any:  # a boto3 S3 client on the runtime's (moto) endpoint
    return boto3.client("s3", endpoint_url=os.environ["S3_ENDPOINT_URL"])


def _raw(server: str, method: str, path: str, body: bytes | None = None, headers: dict[str, str] | None = None) -> tuple[int, dict]:
    """Send a path byte-for-byte (requests would resolve ``..`` before sending)."""
    split = urlsplit(server)
    conn = http.client.HTTPConnection(split.hostname, split.port, timeout=30)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        response = conn.getresponse()
        raw = response.read()
        return response.status, json.loads(raw) if raw else {}
    finally:
        conn.close()


def _upload_parts(credentials: list[dict], data: bytes, chunk: int) -> list[dict]:
    parts = []
    for idx, credential in enumerate(credentials):
        response = requests.put(credential["url"], data=data[idx * chunk : (idx + 1) * chunk], headers=credential["headers"])
        response.raise_for_status()
        parts.append({"part_number": credential["part_number"], "etag": response.headers["ETag"], "url": credential["url"]})
    return parts


def test_put_list_presigned_download_and_delete(api: str) -> None:
    root = unique("art")
    response = requests.put(f"{api}/artifacts/{root}/dir/hello.txt", data=b"hello", headers={"Content-Type": "text/plain"})
    assert response.status_code == 200 and response.json() == {}
    requests.put(f"{api}/artifacts/{root}/top.json", data=b"{}").raise_for_status()

    listing = requests.get(f"{api}/artifacts", params={"path": root}).json()
    assert listing == {"files": [{"path": "dir", "is_dir": True}, {"path": "top.json", "is_dir": False, "file_size": 2}]}
    assert requests.get(f"{api}/artifacts", params={"path": f"{root}/dir"}).json()["files"] == [
        {"path": "hello.txt", "is_dir": False, "file_size": 5}
    ]

    presigned = requests.get(f"{api}/presigned/{root}/dir/hello.txt").json()
    assert presigned["file_size"] == 5 and presigned["headers"] == {}
    assert requests.get(presigned["url"]).content == b"hello"

    # The proxied download route redirects to S3: the body never passes through the function.
    redirected = requests.get(f"{api}/artifacts/{root}/dir/hello.txt", allow_redirects=False)
    assert redirected.status_code == 302 and urlsplit(redirected.headers["Location"]).path.endswith(f"/{PREFIX}/{root}/dir/hello.txt")
    assert requests.get(f"{api}/artifacts/{root}/dir/hello.txt").content == b"hello"

    assert requests.delete(f"{api}/artifacts/{root}/dir").json() == {}
    assert requests.get(f"{api}/artifacts", params={"path": root}).json()["files"] == [
        {"path": "top.json", "is_dir": False, "file_size": 2}
    ]


def test_empty_or_missing_directory_lists_as_empty_object(api: str) -> None:
    response = requests.get(f"{api}/artifacts", params={"path": unique("nothing-here")})
    assert response.status_code == 200 and response.json() == {}


def test_missing_file_is_resource_does_not_exist(api: str) -> None:
    for url in (f"{api}/presigned/{unique('none')}/x.bin", f"{api}/artifacts/{unique('none')}/x.bin"):
        response = requests.get(url)
        assert response.status_code == 404
        assert response.json()["error_code"] == "RESOURCE_DOES_NOT_EXIST"


def test_listing_follows_s3_pagination_past_1000_entries(api: str, s3) -> None:
    root = unique("many")
    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(lambda idx: s3.put_object(Bucket=BUCKET, Key=f"{PREFIX}/{root}/f{idx:04d}.txt", Body=b"x"), range(1003)))
    s3.put_object(Bucket=BUCKET, Key=f"{PREFIX}/{root}/sub/inner.txt", Body=b"xy")
    files = requests.get(f"{api}/artifacts", params={"path": root}).json()["files"]
    assert len(files) == 1004
    assert {"path": "sub", "is_dir": True} in files
    assert files[0] == {"path": "f0000.txt", "is_dir": False, "file_size": 1}


def test_multipart_upload_roundtrip_and_retried_complete(api: str) -> None:
    root = unique("mpu")
    chunk = 5 * 1024 * 1024  # S3's minimum size for every part but the last
    data = os.urandom(chunk + 1234)
    created = requests.post(f"{api}/mpu/create/{root}/dir", json={"path": "/home/me/data/blob.bin", "num_parts": 2}).json()
    assert [c["part_number"] for c in created["credentials"]] == [1, 2]
    parts = _upload_parts(created["credentials"], data, chunk)
    body = {"path": "/home/me/data/blob.bin", "upload_id": created["upload_id"], "parts": parts}
    assert requests.post(f"{api}/mpu/complete/{root}/dir", json=body).json() == {}
    # A retry whose first answer was lost finds the object built from the same parts: still success.
    assert requests.post(f"{api}/mpu/complete/{root}/dir", json=body).status_code == 200

    presigned = requests.get(f"{api}/presigned/{root}/dir/blob.bin").json()
    assert presigned["file_size"] == len(data)
    assert hashlib.sha256(requests.get(presigned["url"]).content).digest() == hashlib.sha256(data).digest()


def test_windows_client_path_uses_the_file_name(api: str) -> None:
    root = unique("win")
    created = requests.post(f"{api}/mpu/create/{root}", json={"path": "C:\\Users\\me\\model.pkl", "num_parts": 1}).json()
    assert urlsplit(created["credentials"][0]["url"]).path.endswith(f"/{PREFIX}/{root}/model.pkl")
    requests.post(
        f"{api}/mpu/abort/{root}", json={"path": "C:\\Users\\me\\model.pkl", "upload_id": created["upload_id"]}
    ).raise_for_status()


def test_empty_file_completes_with_zero_parts(api: str) -> None:
    # The 3.17 client computes ceil(0 / chunk) = 0 parts for an empty file when every upload is multipart.
    root = unique("empty")
    created = requests.post(f"{api}/mpu/create/{root}", json={"path": "/tmp/empty.txt", "num_parts": 0}).json()
    assert created["credentials"] == []
    body = {"path": "/tmp/empty.txt", "upload_id": created["upload_id"], "parts": []}
    assert requests.post(f"{api}/mpu/complete/{root}", json=body).status_code == 200
    assert requests.get(f"{api}/presigned/{root}/empty.txt").json()["file_size"] == 0
    assert requests.post(f"{api}/mpu/complete/{root}", json=body).status_code == 200  # retried: idempotent

    # Newer clients (presigned-only mode) send an empty file as one empty part.
    created = requests.post(f"{api}/mpu/create/{root}", json={"path": "/tmp/empty2.txt", "num_parts": 1}).json()
    parts = _upload_parts(created["credentials"], b"", 1)
    body = {"path": "/tmp/empty2.txt", "upload_id": created["upload_id"], "parts": parts}
    assert requests.post(f"{api}/mpu/complete/{root}", json=body).status_code == 200
    assert requests.get(f"{api}/presigned/{root}/empty2.txt").json()["file_size"] == 0


def test_aborted_multipart_upload_leaves_no_parts(api: str, s3) -> None:
    root = unique("abort")
    created = requests.post(f"{api}/mpu/create/{root}", json={"path": "/tmp/big.bin", "num_parts": 2}).json()
    _upload_parts(created["credentials"][:1], os.urandom(5 * 1024 * 1024), 5 * 1024 * 1024)
    key = f"{PREFIX}/{root}/big.bin"
    assert len(s3.list_parts(Bucket=BUCKET, Key=key, UploadId=created["upload_id"])["Parts"]) == 1

    body = {"path": "/tmp/big.bin", "upload_id": created["upload_id"]}
    assert requests.post(f"{api}/mpu/abort/{root}", json=body).json() == {}
    uploads = s3.list_multipart_uploads(Bucket=BUCKET, Prefix=f"{PREFIX}/{root}/").get("Uploads", [])
    assert uploads == []
    with pytest.raises(s3.exceptions.NoSuchUpload):
        s3.list_parts(Bucket=BUCKET, Key=key, UploadId=created["upload_id"])
    # Aborting again (the client aborts after any failure) is not an error.
    assert requests.post(f"{api}/mpu/abort/{root}", json=body).status_code == 200
    assert requests.get(f"{api}/artifacts", params={"path": root}).json() == {}


def test_completing_an_unknown_upload_fails_without_an_object(api: str) -> None:
    # S3 answers NoSuchUpload: RESOURCE_DOES_NOT_EXIST (the local engine's moto is taught to answer it too).
    root = unique("nope")
    body = {"path": "/tmp/x.bin", "upload_id": "no-such-upload", "parts": [{"part_number": 1, "etag": '"abc"'}]}
    response = requests.post(f"{api}/mpu/complete/{root}", json=body)
    assert response.status_code == 404 and response.json()["error_code"] == "RESOURCE_DOES_NOT_EXIST", response.text
    assert requests.get(f"{api}/artifacts", params={"path": root}).json() == {}


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"num_parts": 1}, "Missing value for required parameter 'path'"),
        ({"path": "/tmp/x", "num_parts": "many"}, "Invalid value \"many\" for parameter 'num_parts'"),
        ({"path": "/tmp/x", "num_parts": 10001}, "num_parts must be between 0 and 10000"),
        ({"path": "/tmp/..", "num_parts": 1}, "Invalid path"),
    ],
)
def test_create_validates_before_writing(api: str, s3, body: dict, message: str) -> None:
    root = unique("bad")
    response = requests.post(f"{api}/mpu/create/{root}", json=body)
    assert response.status_code == 400 and response.json()["error_code"] == "INVALID_PARAMETER_VALUE"
    assert message in response.json()["message"]
    assert s3.list_multipart_uploads(Bucket=BUCKET, Prefix=f"{PREFIX}/{root}").get("Uploads", []) == []


def test_presigned_urls_are_short_lived_and_scoped_to_one_object(api: str) -> None:
    root = unique("scope")
    requests.put(f"{api}/artifacts/{root}/a.txt", data=b"a").raise_for_status()
    download = urlsplit(requests.get(f"{api}/presigned/{root}/a.txt").json()["url"])
    query = parse_qs(download.query)
    assert int(query["X-Amz-Expires"][0]) <= 300
    assert unquote(download.path).endswith(f"/{PREFIX}/{root}/a.txt")
    assert query["response-content-disposition"] == ['attachment; filename="a.txt"']

    created = requests.post(f"{api}/mpu/create/{root}", json={"path": "/tmp/b.bin", "num_parts": 3}).json()
    for number, credential in enumerate(created["credentials"], start=1):
        upload = urlsplit(credential["url"])
        query = parse_qs(upload.query)
        assert int(query["X-Amz-Expires"][0]) <= 900
        assert unquote(upload.path).endswith(f"/{PREFIX}/{root}/b.bin")
        assert query["partNumber"] == [str(number)] and query["uploadId"] == [created["upload_id"]]
    requests.post(f"{api}/mpu/abort/{root}", json={"path": "/tmp/b.bin", "upload_id": created["upload_id"]}).raise_for_status()


def test_put_over_the_lambda_limit_names_the_fix(api: str) -> None:
    root = unique("big")
    response = requests.put(f"{api}/artifacts/{root}/big.bin", data=b"\0" * (4 * 1024 * 1024 + 1))
    assert response.status_code == 400
    error = response.json()
    assert error["error_code"] == "INVALID_PARAMETER_VALUE"
    assert "MLFLOW_MULTIPART_UPLOAD_MINIMUM_FILE_SIZE" in error["message"] and "s3://" in error["message"]
    assert requests.get(f"{api}/artifacts", params={"path": root}).json() == {}
    # Exactly at the limit is accepted (4 MiB of binary is ~5.6 MB of base64: under the 6 MB payload cap).
    assert requests.put(f"{api}/artifacts/{root}/ok.bin", data=b"\1" * (4 * 1024 * 1024)).status_code == 200


def test_a_body_over_lambda_s_payload_cap_never_reaches_the_function(api: str) -> None:
    # 5 MiB of binary is ~7 MB of base64: Lambda refuses the invocation and API Gateway answers by itself.
    root = unique("huge")
    response = requests.put(f"{api}/artifacts/{root}/huge.bin", data=b"\2" * (5 * 1024 * 1024))
    assert response.status_code == 413 and response.json()["error_code"] == "BAD_REQUEST"
    assert requests.get(f"{api}/artifacts", params={"path": root}).json() == {}


TRAVERSALS = [
    "../escape.txt",
    "1/../../escape.txt",
    "%2e%2e/escape.txt",
    "1/%2E%2E/%2e%2e/escape.txt",
    "%252e%252e/escape.txt",
    "..%2fescape.txt",
    "1/..%5c..%5cescape.txt",
    "1\\..\\escape.txt",
    "%2Fetc/passwd",
    "/etc/passwd",
    "C:/Windows/win.ini",
    "file:///etc/passwd",
    "1/a%23b",
    "1/a%00b",
]


@pytest.mark.parametrize("path", TRAVERSALS)
def test_traversal_in_the_url_is_rejected_on_every_route(server: str, path: str) -> None:
    art = "/api/2.0/mlflow-artifacts"
    json_headers = {"Content-Type": "application/json"}
    attempts = [
        ("GET", f"{art}/presigned/{path}", None, {}),
        ("GET", f"{art}/artifacts/{path}", None, {}),
        ("PUT", f"{art}/artifacts/{path}", b"x", {"Content-Type": "text/plain"}),
        ("DELETE", f"{art}/artifacts/{path}", None, {}),
        ("POST", f"{art}/mpu/create/{path}", json.dumps({"path": "/tmp/f.txt", "num_parts": 1}).encode(), json_headers),
        ("POST", f"{art}/mpu/complete/{path}", json.dumps({"path": "/tmp/f.txt", "upload_id": "u", "parts": []}).encode(), json_headers),
        ("POST", f"{art}/mpu/abort/{path}", json.dumps({"path": "/tmp/f.txt", "upload_id": "u"}).encode(), json_headers),
        ("GET", f"{art}/artifacts?path={path}", None, {}),
    ]
    for method, url, body, headers in attempts:
        status, payload = _raw(server, method, url, body, headers)
        assert (status, payload.get("error_code"), payload.get("message")) == (400, "INVALID_PARAMETER_VALUE", "Invalid path"), (
            method,
            url,
        )


@pytest.mark.parametrize("local_path", ["..", "/tmp/..", "/tmp/%2e%2e", "/tmp/%252E%252E", "C:\\data\\..", "/tmp/a#b", "/tmp/", ""])
def test_bad_file_name_in_the_body_is_rejected(api: str, local_path: str) -> None:
    for op, extra in (("create", {"num_parts": 1}), ("abort", {"upload_id": "u"})):
        response = requests.post(f"{api}/mpu/{op}/{unique('body')}", json={"path": local_path, **extra})
        assert response.status_code == 400 and response.json()["error_code"] == "INVALID_PARAMETER_VALUE", (op, local_path)


def test_large_answers_are_gzipped_to_fit_the_lambda_response_cap(api: str, monkeypatch: pytest.MonkeyPatch) -> None:
    import artifacts.handler as handler  # the in-process runtime's handler module (functions/artifacts)

    root = unique("gz")
    created = requests.post(f"{api}/mpu/create/{root}", json={"path": "/tmp/g.bin", "num_parts": 40}).json()
    plain = requests.get(f"{api}/artifacts", params={"path": root})
    # Lower the cap so an ordinary answer counts as "large" (a real one is 5.5 MB of JSON).
    monkeypatch.setattr(handler, "MAX_PLAIN_RESPONSE", 1000)
    packed = requests.post(f"{api}/mpu/create/{root}", json={"path": "/tmp/h.bin", "num_parts": 40})
    assert packed.status_code == 200 and packed.headers["Content-Encoding"] == "gzip"
    assert len(packed.json()["credentials"]) == 40 and len(packed.content) > 1000  # requests decoded it

    refused = requests.post(
        f"{api}/mpu/create/{root}", json={"path": "/tmp/i.bin", "num_parts": 40}, headers={"Accept-Encoding": "identity"}
    )
    assert refused.status_code == 400 and "6 MB" in refused.json()["message"]
    assert plain.json() == {}
    for name, upload_id in (("g.bin", created["upload_id"]), ("h.bin", packed.json()["upload_id"])):
        requests.post(f"{api}/mpu/abort/{root}", json={"path": f"/tmp/{name}", "upload_id": upload_id}).raise_for_status()
