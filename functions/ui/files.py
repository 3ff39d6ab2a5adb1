"""Where the ui function reads the gzipped build from: the stack's bucket, or (locally) the wheel itself."""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from serverless_mlflow.http.static_files import UI_PREFIX, compress
from serverless_mlflow.storage import s3


@dataclass(frozen=True)
class StaticFile:
    gzipped: bytes
    etag: str


class NotModified(Exception):
    """The browser's copy (If-None-Match) is current."""


def read(relative: str, if_none_match: str | None = None) -> StaticFile | None:
    """The gzipped bytes of one build file; None when the build has no such file."""
    directory = os.environ.get("UI_STATIC_DIR")
    found = _from_directory(directory, relative) if directory else _from_bucket(relative, if_none_match)
    if found is not None and if_none_match and found.etag in _etags(if_none_match):
        raise NotModified
    return found


def _etags(header: str) -> set[str]:
    return {tag.strip().removeprefix("W/") for tag in header.split(",")}


@lru_cache(maxsize=1024)
def _from_directory(directory: str, relative: str) -> StaticFile | None:
    root = Path(directory).resolve()
    try:
        path = (root / relative).resolve()
        if not path.is_file() or root not in path.parents:
            return None
    except (OSError, ValueError):  # a name too long for the file system, a NUL in it: no such file
        return None
    gzipped = compress(path.read_bytes())
    return StaticFile(gzipped, f'"{hashlib.sha256(gzipped).hexdigest()[:32]}"')


def _from_bucket(relative: str, if_none_match: str | None) -> StaticFile | None:
    from botocore.exceptions import ClientError

    extra = {"IfNoneMatch": if_none_match} if if_none_match else {}
    try:
        found = s3.client().get_object(Bucket=s3.bucket_name(), Key=UI_PREFIX + relative, **extra)
    except ClientError as error:
        code = s3.error_code(error)
        if code == "304":
            raise NotModified from None
        if code in ("NoSuchKey", "404", "AccessDenied", "403", "KeyTooLongError"):
            # A key outside the deployed build is AccessDenied when the role may not list: the same 404.
            return None
        raise
    return StaticFile(found["Body"].read(), found["ETag"])
