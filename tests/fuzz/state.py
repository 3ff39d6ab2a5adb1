"""Whether a request changed anything: a digest of the fuzz runtime's own table (a Scan: tests only) and of
its bucket's object listing. The suite's runtime has a table of its own, so the Scan stays small."""

from __future__ import annotations

import base64
import json
import os
from dataclasses import dataclass
from typing import Any

import boto3


class Snapshot:
    def __init__(self, table_name: str, bucket_name: str) -> None:
        self.table_name = table_name
        self.bucket_name = bucket_name
        self._dynamodb = boto3.client("dynamodb", endpoint_url=os.environ["DYNAMODB_ENDPOINT_URL"])
        self._s3 = boto3.client("s3", endpoint_url=os.environ["S3_ENDPOINT_URL"])
        self.scans = 0

    def items(self) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        kwargs: dict[str, Any] = {"TableName": self.table_name, "ConsistentRead": True}
        while True:
            page = self._dynamodb.scan(**kwargs)
            out.extend(page.get("Items", []))
            if not page.get("LastEvaluatedKey"):
                break
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]
        self.scans += 1
        return out

    def objects(self) -> list[tuple[str, str]]:
        out: list[tuple[str, str]] = []
        for page in self._s3.get_paginator("list_objects_v2").paginate(Bucket=self.bucket_name):
            out.extend((obj["Key"], obj["ETag"]) for obj in page.get("Contents", []))
        return sorted(out)

    def take(self) -> State:
        items = frozenset(json.dumps(item, sort_keys=True, default=_text) for item in self.items())
        return State(items, tuple(self.objects()))


def _text(value: Any) -> str:
    if isinstance(value, bytes):  # a binary attribute (B)
        return base64.b64encode(value).decode("ascii")
    raise TypeError(type(value).__name__)


@dataclass(frozen=True)
class State:
    items: frozenset[str]
    objects: tuple[tuple[str, str], ...]

    def difference(self, later: State) -> str:
        """What ``later`` holds that this state does not, and the other way round (for a failure message)."""
        added, removed = sorted(later.items - self.items), sorted(self.items - later.items)
        objects = sorted(set(later.objects) ^ set(self.objects))
        return f"items new or changed: {[a[:400] for a in added[:5]]}; items gone or before the change: {[r[:400] for r in removed[:5]]}; objects: {objects[:5]}"
