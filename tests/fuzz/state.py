"""Whether a request changed anything, cheaply: the fuzz runtime's own table's stream, read by the test.

The table's stream holds one record per item a write changed (NEW_AND_OLD_IMAGES). Before a request the
watcher reads up to the stream's end; after a refused request, any new record that changes a source item is
a change the request made. Records of the indexer's own items (derived items, the "not indexed yet" flag it
clears) follow a change and never make one, and a MODIFY whose images are equal changed nothing. Requests of
a function that may write to the bucket (its IAM declaration says so) also compare the bucket's listing.

A full Scan digest of the table (``Snapshot.items``) serves the failure message and the suite's own test.
"""

from __future__ import annotations

import base64
import json
import os
from dataclasses import dataclass
from typing import Any

import boto3

from serverless_mlflow.index import derived
from serverless_mlflow.storage import schema, table

_DERIVED = frozenset(entity.name for entity in schema.ENTITIES if entity.derived)


def _text(value: Any) -> str:
    if isinstance(value, bytes):  # a binary attribute (B)
        return base64.b64encode(value).decode("ascii")
    raise TypeError(type(value).__name__)


def dump(item: dict[str, Any]) -> str:
    return json.dumps(item, sort_keys=True, default=_text)


def is_change(record: dict[str, Any]) -> bool:
    """Whether a stream record is a change a request made (not the indexer's own bookkeeping)."""
    images = record["dynamodb"]
    old, new = table.from_item(images.get("OldImage") or {}), table.from_item(images.get("NewImage") or {})
    if (new or old).get(schema.ENTITY_TYPE) in _DERIVED:
        return False
    if record.get("eventName") == "MODIFY" and (old == new or derived.only_flag_removed(old, new)):
        return False
    return True


class StreamWatcher:
    """The records written to a table's stream since the last read, across its shards."""

    def __init__(self, table_name: str, endpoint: str) -> None:
        self._streams = boto3.client("dynamodbstreams", endpoint_url=endpoint)
        self._arn = boto3.client("dynamodb", endpoint_url=endpoint).describe_table(TableName=table_name)["Table"]["LatestStreamArn"]
        self._iterators: dict[str, str | None] = {}  # shard id -> next iterator (None: closed and read)
        self._last: dict[str, str] = {}  # shard id -> last sequence number read

    def read(self) -> list[dict[str, Any]]:
        records: list[dict[str, Any]] = []
        shards = self._streams.describe_stream(StreamArn=self._arn)["StreamDescription"]["Shards"]
        for shard in shards:
            shard_id = shard["ShardId"]
            if shard_id not in self._iterators:
                self._iterators[shard_id] = self._iterator(shard_id)
            while self._iterators[shard_id]:
                try:
                    page = self._streams.get_records(ShardIterator=self._iterators[shard_id], Limit=1000)
                except self._streams.exceptions.ExpiredIteratorException:
                    self._iterators[shard_id] = self._iterator(shard_id)
                    continue
                records.extend(page["Records"])
                if page["Records"]:
                    self._last[shard_id] = page["Records"][-1]["dynamodb"]["SequenceNumber"]
                self._iterators[shard_id] = page.get("NextShardIterator")
                if not page["Records"]:
                    break  # caught up (an open shard keeps its iterator; a closed one has none left)
        return records

    def _iterator(self, shard_id: str) -> str:
        args: dict[str, Any] = {"StreamArn": self._arn, "ShardId": shard_id}
        if shard_id in self._last:
            args.update(ShardIteratorType="AFTER_SEQUENCE_NUMBER", SequenceNumber=self._last[shard_id])
        else:
            args["ShardIteratorType"] = "TRIM_HORIZON"
        return self._streams.get_shard_iterator(**args)["ShardIterator"]


@dataclass
class Snapshot:
    table_name: str
    bucket_name: str
    dynamodb_endpoint: str

    def __post_init__(self) -> None:
        self._dynamodb = boto3.client("dynamodb", endpoint_url=self.dynamodb_endpoint)
        self._s3 = boto3.client("s3", endpoint_url=os.environ["S3_ENDPOINT_URL"])
        self.stream = StreamWatcher(self.table_name, self.dynamodb_endpoint)
        self.stream_reads = 0
        self.listings = 0

    def items(self) -> list[str]:
        out: list[str] = []
        kwargs: dict[str, Any] = {"TableName": self.table_name, "ConsistentRead": True}
        while True:
            page = self._dynamodb.scan(**kwargs)
            out.extend(dump(table.from_item(item)) for item in page.get("Items", []))
            if not page.get("LastEvaluatedKey"):
                return out
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    def objects(self) -> tuple[tuple[str, str], ...]:
        self.listings += 1
        out: list[tuple[str, str]] = []
        for page in self._s3.get_paginator("list_objects_v2").paginate(Bucket=self.bucket_name):
            out.extend((obj["Key"], obj["ETag"]) for obj in page.get("Contents", []))
        return tuple(sorted(out))

    def changes(self) -> list[dict[str, Any]]:
        """The changes requests made since the last call."""
        self.stream_reads += 1
        return [record for record in self.stream.read() if is_change(record)]
