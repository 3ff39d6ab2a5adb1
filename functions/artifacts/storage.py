"""Artifact operations on the stack's bucket: the client moves the bytes, this module only signs and lists.

Paths arrive relative to the ``mlflow-artifacts:/`` root (``1/<run>/artifacts/model/MLmodel``) and map to
``s3://$BUCKET_NAME/$ARTIFACTS_PREFIX/<path>`` (``artifact_locations``). Every path is validated
before any S3 call, and every write checks the deleted-run guard first.
"""

from __future__ import annotations

import hashlib
import mimetypes
import os
import posixpath
from collections.abc import Iterator
from typing import Any

from serverless_mlflow.core.errors import MlflowError, invalid, not_found
from serverless_mlflow.request import read_int32
from serverless_mlflow.storage import s3
from serverless_mlflow.store.artifact_locations import artifact_key, safe_relative_path

from .guard import check_writable

# S3 allows part numbers 1..10000; the 3.17 client asks for 0 parts for an empty file (ceil(0 / chunk)).
MAX_PARTS = 10_000
# DeleteObjects takes at most 1000 keys per request.
DELETE_BATCH = 1000


def _int_env(name: str, default: int) -> int:
    try:
        return int(os.environ.get(name, default))
    except ValueError:
        return default


def upload_url_ttl() -> int:
    """Seconds a presigned part URL stays valid (a part must *start* uploading before it expires)."""
    return _int_env("PRESIGNED_UPLOAD_TTL_SECONDS", 900)


def download_url_ttl() -> int:
    """MLflow's own default (MLFLOW_PRESIGNED_DOWNLOAD_URL_TTL_SECONDS); the client re-asks on retry."""
    return _int_env("PRESIGNED_DOWNLOAD_TTL_SECONDS", 300)


def max_proxy_upload_bytes() -> int:
    """Largest PUT body accepted: a Lambda request is capped at 6 MB and a binary body travels as base64
    (4/3 larger), so 4 MiB plus headers stays below the cap."""
    return _int_env("MAX_PROXY_UPLOAD_BYTES", 4 * 1024 * 1024)


# --- errors -----------------------------------------------------------------------------------


def _client_error(error: Exception, what: str) -> MlflowError:
    """S3 errors in MLflow's vocabulary (MLflow's own S3 repo maps fewer and answers the rest with 500)."""
    code = s3.error_code(error)
    message = str((getattr(error, "response", None) or {}).get("Error", {}).get("Message") or code)
    if code in ("404", "NoSuchKey"):
        return not_found(f"{what} does not exist.")
    if code == "NoSuchUpload":
        return not_found(f"{what}: the multipart upload does not exist (it was completed, aborted or has expired).")
    if code in ("InvalidPart", "InvalidPartOrder", "EntityTooSmall", "MalformedXML", "InvalidArgument", "KeyTooLongError", "414"):
        return invalid(f"{what}: {message}")
    if code in ("AccessDenied", "403"):
        return MlflowError(f"{what}: access denied by S3.", "PERMISSION_DENIED")
    return MlflowError(f"{what}: S3 error {code}: {message}", "INTERNAL_ERROR")


def _client_error_type() -> type[Exception]:
    from botocore.exceptions import ClientError

    return ClientError


# --- paths ------------------------------------------------------------------------------------


def _file_name(local_path: str) -> str:
    """The file name from the ``path`` field of an mpu call: the client sends its *local* path (any OS);
    only the last component is used, as MLflow's S3 repository does (``os.path.basename``)."""
    name = safe_relative_path(local_path.replace("\\", "/").rsplit("/", 1)[-1])
    if not name or "/" in name:
        raise invalid("Invalid path")
    return name


def _target(directory: str, local_path: str) -> str:
    """Relative path of the object an mpu call writes: the URL names the directory, the body the file."""
    return posixpath.join(safe_relative_path(directory), _file_name(local_path)).lstrip("/")


def _content_type(name: str) -> str:
    return mimetypes.guess_type(name)[0] or "application/octet-stream"


def _attachment(filename: str) -> str:
    """RFC 6266 disposition, as MLflow's S3 repo signs it: browsers save instead of rendering HTML/SVG."""
    from urllib.parse import quote

    if not filename.isascii() or not filename.isprintable():
        return f"attachment; filename*=UTF-8''{quote(filename)}"
    escaped = filename.replace("\\", "\\\\").replace('"', '\\"')
    return f'attachment; filename="{escaped}"'


# --- reads --------------------------------------------------------------------------------------


def _head(key: str, relative: str) -> dict[str, Any]:
    try:
        return s3.client().head_object(Bucket=s3.bucket_name(), Key=key)
    except _client_error_type() as error:
        raise _client_error(error, f"Artifact '{relative}'") from None


# Shown inline by the UI's viewer (and a browser opening the link), always as text/plain.
_TEXT_SUFFIXES = frozenset(
    ".txt .log .json .yaml .yml .md .csv .tsv .py .ini .cfg .toml .xml .html .htm .js .ts .sql .sh .r .properties".split()
)
_TEXT_NAMES = frozenset({"MLmodel", "MLproject", "conda.yaml", "requirements.txt", "python_env.yaml", "LICENSE"})


def is_text(name: str) -> bool:
    return name in _TEXT_NAMES or posixpath.splitext(name)[1].lower() in _TEXT_SUFFIXES


def presigned_download(path: str, inline_text: bool = False) -> dict[str, Any]:
    """``{"url", "headers", "file_size"}`` for one existing object; the URL is valid for that key only,
    for ``download_url_ttl()`` seconds. A directory or missing file is RESOURCE_DOES_NOT_EXIST (404).
    ``inline_text``: a text file is signed to display inline as text/plain (never as HTML)."""
    relative = safe_relative_path(path)
    if not relative:
        raise invalid("Invalid path")
    key = artifact_key(relative)
    size = int(_head(key, relative)["ContentLength"])
    name = posixpath.basename(relative)
    params = {"Bucket": s3.bucket_name(), "Key": key, "ResponseContentDisposition": _attachment(name)}
    if inline_text and is_text(name):
        params["ResponseContentDisposition"] = "inline"
        params["ResponseContentType"] = "text/plain; charset=utf-8"
    url = s3.presign_client().generate_presigned_url("get_object", Params=params, ExpiresIn=download_url_ttl())
    return {"url": url, "headers": {}, "file_size": size}


def viewer_url(path: str) -> str:
    """Where the UI's artifact viewer is redirected for one file (404 when missing)."""
    return presigned_download(path, inline_text=True)["url"]


# --- writes -------------------------------------------------------------------------------------


def upload_small(path: str, body: bytes, content_type: str | None) -> None:
    """A PUT of a whole file (the 3.17 client does this below MLFLOW_MULTIPART_UPLOAD_MINIMUM_FILE_SIZE)."""
    relative = safe_relative_path(path)
    if not relative:
        raise invalid("Invalid path")
    limit = max_proxy_upload_bytes()
    if len(body) > limit:
        raise invalid(
            f"Artifact '{relative}' is {len(body)} bytes; uploads through the tracking API are limited to "
            f"{limit} bytes (AWS Lambda request payload limit). Upload directly to S3 instead: set "
            f"MLFLOW_MULTIPART_UPLOAD_MINIMUM_FILE_SIZE={limit} (or 0) in the client environment so larger files "
            "use presigned multipart uploads, or log to an experiment whose artifact_location is an s3:// URI."
        )
    check_writable(relative)
    content_type = (content_type or "").strip() or _content_type(relative)
    s3.client().put_object(Bucket=s3.bucket_name(), Key=artifact_key(relative), Body=body, ContentType=content_type)


def create_multipart_upload(directory: str, local_path: str, num_parts: int) -> dict[str, Any]:
    """S3 CreateMultipartUpload plus one presigned UploadPart URL per part (that key, that upload id)."""
    relative = _target(directory, local_path)
    if not 0 <= num_parts <= MAX_PARTS:
        raise invalid(f"num_parts must be between 0 and {MAX_PARTS}, got {num_parts}.")
    check_writable(relative)
    key = artifact_key(relative)
    bucket = s3.bucket_name()
    try:
        created = s3.client().create_multipart_upload(Bucket=bucket, Key=key, ContentType=_content_type(relative))
    except _client_error_type() as error:
        raise _client_error(error, f"Artifact '{relative}'") from None
    upload_id = created["UploadId"]
    signer = s3.presign_client()
    ttl = upload_url_ttl()
    credentials = [
        {
            "url": signer.generate_presigned_url(
                "upload_part",
                Params={"Bucket": bucket, "Key": key, "PartNumber": number, "UploadId": upload_id},
                ExpiresIn=ttl,
            ),
            "part_number": number,
            "headers": {},
        }
        for number in range(1, num_parts + 1)
    ]
    return {"upload_id": upload_id, "credentials": credentials}


# S3's upload ids are a few hundred characters; a longer one was never issued (and S3 answers 414 to its URL).
MAX_UPLOAD_ID_LENGTH = 1024


def _check_upload_id(upload_id: str) -> None:
    if not upload_id:
        raise invalid("Missing value for required parameter 'upload_id'.")
    if len(upload_id) > MAX_UPLOAD_ID_LENGTH:
        raise invalid(
            f"Invalid value for parameter 'upload_id': longer than {MAX_UPLOAD_ID_LENGTH} characters, not an upload id S3 issued."
        )


def _parts(parts: list[Any]) -> list[dict[str, Any]]:
    out: dict[int, str] = {}
    for idx, part in enumerate(parts):
        number = part.get("part_number") if isinstance(part, dict) else None
        etag = part.get("etag") if isinstance(part, dict) else None
        # Read as protobuf reads the int32 (1e309, 1.5 or a word are not part numbers).
        number = read_int32(number)
        if number is None:
            raise invalid(f"Invalid value for parameter 'parts[{idx}].part_number': must be an integer.")
        if not 1 <= number <= MAX_PARTS:
            raise invalid(f"Invalid value {number} for parameter 'parts[{idx}].part_number': must be between 1 and {MAX_PARTS}.")
        if not isinstance(etag, str) or not etag:
            raise invalid(f"Missing value for required parameter 'parts[{idx}].etag'.")
        out[number] = etag
    return [{"PartNumber": number, "ETag": out[number]} for number in sorted(out)]


def _multipart_etag(parts: list[dict[str, Any]]) -> str | None:
    """The ETag S3 gives the object a CompleteMultipartUpload of these parts builds."""
    try:
        digests = b"".join(bytes.fromhex(part["ETag"].strip('"')) for part in parts)
    except ValueError:
        return None
    return f'"{hashlib.md5(digests, usedforsecurity=False).hexdigest()}-{len(parts)}"'


def complete_multipart_upload(directory: str, local_path: str, upload_id: str, parts: list[Any]) -> None:
    relative = _target(directory, local_path)
    _check_upload_id(upload_id)
    s3_parts = _parts(parts)
    key = artifact_key(relative)
    bucket = s3.bucket_name()
    client = s3.client()
    try:
        check_writable(relative)
    except MlflowError:
        # The run was deleted while its parts were uploading: drop the parts rather than leave them billed.
        abort_multipart_upload(directory, local_path, upload_id)
        raise
    try:
        if not s3_parts:
            # An empty file: S3 cannot complete an upload without parts, so end it and write the empty object.
            client.abort_multipart_upload(Bucket=bucket, Key=key, UploadId=upload_id)
            client.put_object(Bucket=bucket, Key=key, Body=b"", ContentType=_content_type(relative))
            return
        client.complete_multipart_upload(Bucket=bucket, Key=key, UploadId=upload_id, MultipartUpload={"Parts": s3_parts})
    except _client_error_type() as error:
        # A retried complete (the first answer was lost) finds the upload gone but the object built from
        # exactly these parts: that is success.
        if s3.error_code(error) == "NoSuchUpload" and _already_completed(key, s3_parts):
            return
        raise _client_error(error, f"Artifact '{relative}'") from None


def _already_completed(key: str, parts: list[dict[str, Any]]) -> bool:
    try:
        head = s3.client().head_object(Bucket=s3.bucket_name(), Key=key)
    except _client_error_type():
        return False
    if not parts:
        return int(head.get("ContentLength", -1)) == 0
    return head.get("ETag") == _multipart_etag(parts)


def abort_multipart_upload(directory: str, local_path: str, upload_id: str) -> None:
    """Abort (S3 drops the uploaded parts). Idempotent: an upload that is already gone is not an error,
    so the client's abort-after-failure never masks the original failure."""
    relative = _target(directory, local_path)
    _check_upload_id(upload_id)
    try:
        s3.client().abort_multipart_upload(Bucket=s3.bucket_name(), Key=artifact_key(relative), UploadId=upload_id)
    except _client_error_type() as error:
        if s3.error_code(error) != "NoSuchUpload":
            raise _client_error(error, f"Artifact '{relative}'") from None


def _keys_under(relative: str) -> Iterator[str]:
    """The object at ``relative`` and every object below it (not siblings sharing a name prefix)."""
    key = artifact_key(relative)
    paginator = s3.client().get_paginator("list_objects_v2")
    for page in paginator.paginate(Bucket=s3.bucket_name(), Prefix=key):
        for obj in page.get("Contents", []):
            if obj["Key"] == key or obj["Key"].startswith(key + "/"):
                yield obj["Key"]


def delete_artifacts(path: str) -> None:
    """Delete a file or a directory tree (MLflow's S3 repo semantics). Allowed under deleted runs too:
    removing a deleted run's artifacts is what ``mlflow gc`` does."""
    relative = safe_relative_path(path)
    if not relative:
        raise invalid("Invalid path")
    client = s3.client()
    batch: list[dict[str, str]] = []
    for key in _keys_under(relative):
        batch.append({"Key": key})
        if len(batch) == DELETE_BATCH:
            client.delete_objects(Bucket=s3.bucket_name(), Delete={"Objects": batch, "Quiet": True})
            batch = []
    if batch:
        client.delete_objects(Bucket=s3.bucket_name(), Delete={"Objects": batch, "Quiet": True})


def download_url(path: str) -> str:
    """Where ``GET artifacts/<path>`` redirects: a presigned URL for the object (404 when missing)."""
    return presigned_download(path)["url"]
