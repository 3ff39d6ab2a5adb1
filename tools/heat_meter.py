"""Write units and bytes per partition key, counted with DynamoDB's rules on every write of this process.

``HeatMeter`` hooks the boto3 default session (every DynamoDB client the local runtime creates after
``install``: the feature handlers' and the stream indexer's). Around each write it reads the items the write
names before and after it (consistent reads through a separate, unhooked client) and charges:

* the base table: ``ceil(max(before, after) / 1 KB)`` units (at least 1: a delete of nothing, a failed
  condition), twice that inside ``TransactWriteItems`` (a ``ConditionCheck`` included: it is billed as a
  write);
* every index the item is in before or after, on its projected entry (ALL: the item; KEYS_ONLY: the table and
  index keys): added or removed ``ceil(entry)``, moved (its key changed) ``ceil(old) + ceil(new)``, rewritten in
  place ``max(ceil(old), ceil(new))``, unchanged nothing; never doubled by a transaction. An LSI entry is
  charged to the item's own partition key; a GSI entry to ``<gsi>:<its gsi partition key>``, another partition.
* bytes: an item collection (a partition key: its table items and their LSI entries, what the 10 GB cap
  counts) gains ``after - before`` of both; a GSI partition gains its entries' bytes (not capped, reported).

The index rules are those captured against DynamoDB by dynoxide's conformance suite
(``src/actions/index_capacity.rs``: the transactional factor applies to the table arm only). A failed
conditional write charges the table arm on the larger of the item and the attempted put; a cancelled
transaction charges every item's table arm twice. Concurrent writes to one item between a shadow read and
the write can shift a unit from one write to the next; totals per partition are what this is for.
"""

from __future__ import annotations

import logging
import math
import os
import threading
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from serverless_mlflow.storage import schema
from serverless_mlflow.storage.item_size import item_bytes

Raw = dict[str, dict[str, Any]]  # an item in DynamoDB's wire format
Key = tuple[str, str]

KB = 1024
_WRITES = frozenset({"PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems"})
_CONTEXT = "partition_heat"
log = logging.getLogger("tools.heat_meter")


@dataclass
class Usage:
    """What one partition key took: write units (table arm + index entries) and the bytes it gained."""

    units: float = 0.0
    table_units: float = 0.0
    index_units: float = 0.0
    bytes: int = 0
    writes: int = 0

    def add(self, other: Usage) -> None:
        self.units += other.units
        self.table_units += other.table_units
        self.index_units += other.index_units
        self.bytes += other.bytes
        self.writes += other.writes


def units(size: int) -> int:
    """Write units of one image: one per started KB, at least one."""
    return max(1, math.ceil(size / KB))


def _string(raw: Raw | None, attribute: str) -> str | None:
    value = (raw or {}).get(attribute)
    return value.get("S") if value else None


def _normal(value: Any) -> Any:
    """A wire value with sets sorted, so a re-put listing a set's members in another order compares equal."""
    if isinstance(value, dict):
        return {k: (sorted(v) if k in ("SS", "NS", "BS") else _normal(v)) for k, v in value.items()}
    if isinstance(value, list):
        return [_normal(v) for v in value]
    return value


def _entry(raw: Raw | None, index: schema.Index) -> tuple[tuple[str, str], Raw] | None:
    """An index's stored view of an item: (its key in the index, the projected attributes), or None if absent."""
    if raw is None:
        return None
    pk_value = _string(raw, index.pk)
    sk_value = _string(raw, index.sk)
    if pk_value is None or sk_value is None:
        return None
    if index.projection == "ALL":
        return (pk_value, sk_value), raw
    kept = {schema.PK, schema.SK, index.pk, index.sk}
    return (pk_value, sk_value), {name: value for name, value in raw.items() if name in kept}


def charge(pk: str, old: Raw | None, new: Raw | None, transactional: bool = False) -> dict[str, Usage]:
    """Partition key -> what one successful write of an item of partition ``pk`` (``old`` -> ``new``) costs it."""
    out: dict[str, Usage] = defaultdict(Usage)
    old_size = item_bytes(old) if old else None
    new_size = item_bytes(new) if new else None
    table_arm = max(units(old_size or 0) if old else 0, units(new_size or 0) if new else 0) or 1
    table_arm *= 2 if transactional else 1
    home = out[pk]
    home.units += table_arm
    home.table_units += table_arm
    home.bytes += (new_size or 0) - (old_size or 0)
    home.writes += 1
    for index in schema.INDEXES:
        before, after = _entry(old, index), _entry(new, index)
        if before is None and after is None:
            continue

        def where(entry: tuple[tuple[str, str], Raw], index: schema.Index = index) -> str:
            # An LSI entry lives in its item's partition; a GSI entry in the GSI's own partition key.
            return pk if index.kind == "LSI" else f"{index.name}:{entry[0][0]}"

        before_size = item_bytes(before[1]) if before else 0
        after_size = item_bytes(after[1]) if after else 0
        if before is not None and after is not None and before[0] == after[0]:
            if _normal(before[1]) == _normal(after[1]):
                continue
            cost = max(units(before_size), units(after_size))
            target = out[where(after)]
            target.units += cost
            target.index_units += cost
            target.bytes += after_size - before_size
            continue
        if before is not None:
            target = out[where(before)]
            target.units += units(before_size)
            target.index_units += units(before_size)
            target.bytes -= before_size
        if after is not None:
            target = out[where(after)]
            target.units += units(after_size)
            target.index_units += units(after_size)
            target.bytes += after_size
    return out


def charge_failed(pk: str, old: Raw | None, attempted: Raw | None, transactional: bool = False) -> dict[str, Usage]:
    """A write whose condition failed (or a cancelled transaction's item): the table arm only, nothing stored."""
    cost = max(units(item_bytes(old)) if old else 1, units(item_bytes(attempted)) if attempted else 1)
    cost *= 2 if transactional else 1
    return {pk: Usage(units=cost, table_units=cost, writes=1)}


@dataclass
class _Pending:
    """One write request between its two hooks: the items it names and what they held before."""

    operation: str
    keys: list[Key]
    before: dict[Key, Raw | None]
    puts: dict[Key, Raw] = field(default_factory=dict)  # items a Put names (failed conditions are sized on them)
    checks: set[Key] = field(default_factory=set)  # ConditionCheck keys (charged, never changed)


class HeatMeter:
    """Counts write units and bytes per partition key for every DynamoDB write made in this process."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.usage: dict[str, Usage] = defaultdict(Usage)
        self.entities: dict[str, Usage] = defaultdict(Usage)  # the same units by the written item's entity_type
        self._installed = False
        self._reader: Any = None
        self.enabled = True
        self.failures = 0  # writes the meter could not size (logged; reported by the scenario)

    # --- lifecycle -------------------------------------------------------------------------------
    def install(self) -> None:
        """Hook every DynamoDB client created from now on (the layer's cached client must be reset after)."""
        import boto3

        if self._installed:
            return
        events = boto3._get_default_session().events
        events.register("before-parameter-build.dynamodb", self._before)
        events.register("after-call.dynamodb", self._after)
        self._installed = True

    def uninstall(self) -> None:
        import boto3

        if not self._installed:
            return
        events = boto3._get_default_session().events
        events.unregister("before-parameter-build.dynamodb", self._before)
        events.unregister("after-call.dynamodb", self._after)
        self._installed = False

    def reset(self) -> dict[str, Usage]:
        """Start counting afresh; returns what was counted until now."""
        with self._lock:
            counted, self.usage = self.usage, defaultdict(Usage)
        return dict(counted)

    def reset_entities(self) -> dict[str, Usage]:
        """Start counting by entity afresh; returns what was counted until now (``transaction`` marks the units
        written inside TransactWriteItems, whose table arm costs twice)."""
        with self._lock:
            counted, self.entities = self.entities, defaultdict(Usage)
        return dict(counted)

    def snapshot(self) -> dict[str, Usage]:
        with self._lock:
            return {pk: Usage(**vars(usage)) for pk, usage in self.usage.items()}

    # --- shadow reads --------------------------------------------------------------------------
    def _client(self) -> Any:
        if self._reader is None:
            import boto3

            # Its own session: the meter's reads are not hooked (and not counted by anything).
            self._reader = boto3.session.Session().client("dynamodb", endpoint_url=os.environ.get("DYNAMODB_ENDPOINT_URL") or None)
        return self._reader

    def _read(self, table: str, keys: Iterable[Key]) -> dict[Key, Raw | None]:
        wanted = list(dict.fromkeys(keys))
        found: dict[Key, Raw | None] = dict.fromkeys(wanted)
        for start in range(0, len(wanted), 100):
            chunk = wanted[start : start + 100]
            pending: dict[str, Any] = {
                table: {"Keys": [{schema.PK: {"S": pk}, schema.SK: {"S": sk}} for pk, sk in chunk], "ConsistentRead": True}
            }
            while pending:
                response = self._client().batch_get_item(RequestItems=pending)
                for raw in response.get("Responses", {}).get(table, []):
                    found[(raw[schema.PK]["S"], raw[schema.SK]["S"])] = raw
                pending = response.get("UnprocessedKeys") or {}
        return found

    # --- hooks ---------------------------------------------------------------------------------
    def _before(self, params: dict[str, Any], model: Any, context: dict[str, Any] | None = None, **_: Any) -> None:
        try:
            self._note_before(params, model, context)
        except Exception:
            # The meter must never change what the code under test does: a write it cannot size is not counted.
            log.exception("heat meter: cannot size a %s", model.name)
            self.failures += 1

    def _after(self, http_response: Any, parsed: dict[str, Any], model: Any, context: dict[str, Any] | None = None, **_: Any) -> None:
        try:
            self._note_after(http_response, parsed, context)
        except Exception:
            log.exception("heat meter: cannot size a %s", model.name)
            self.failures += 1

    def _note_before(self, params: dict[str, Any], model: Any, context: dict[str, Any] | None) -> None:
        if not self.enabled or model.name not in _WRITES or context is None:
            return
        table, pending = _describe(model.name, params)
        if pending is None:
            return
        pending.before = self._read(table, pending.keys)
        context[_CONTEXT] = (table, pending)

    def _note_after(self, http_response: Any, parsed: dict[str, Any], context: dict[str, Any] | None) -> None:
        stashed = (context or {}).pop(_CONTEXT, None)
        if stashed is None:
            return
        table, pending = stashed
        transactional = pending.operation == "TransactWriteItems"
        charges: list[dict[str, Usage]] = []
        kinds: list[str] = []
        if http_response.status_code >= 300:
            # Nothing was written: a failed condition or a cancelled transaction still costs its table arms.
            code = (parsed.get("Error") or {}).get("Code", "")
            if code in ("ConditionalCheckFailedException", "TransactionCanceledException"):
                charges = [charge_failed(key[0], pending.before.get(key), pending.puts.get(key), transactional) for key in pending.keys]
                kinds = [_kind(pending.puts.get(key) or pending.before.get(key), transactional) + " (failed)" for key in pending.keys]
        else:
            written = [key for key in pending.keys if key not in _unprocessed(parsed, table)]
            after = self._read(table, [key for key in written if key not in pending.checks])
            for key in written:
                if key in pending.checks:
                    charges.append(charge_failed(key[0], pending.before.get(key), None, transactional=True))
                    kinds.append(_kind(pending.before.get(key), True) + " (check)")
                else:
                    charges.append(charge(key[0], pending.before.get(key), after.get(key), transactional))
                    kinds.append(_kind(after.get(key) or pending.before.get(key), transactional))
        with self._lock:
            for one, kind in zip(charges, kinds, strict=True):
                for pk, usage in one.items():
                    self.usage[pk].add(usage)
                    self.entities[kind].add(usage)


def _kind(raw: Raw | None, transactional: bool) -> str:
    """The entity a write is charged to in the per-entity figures."""
    kind = _string(raw, schema.ENTITY_TYPE) or "(unknown)"
    return f"{kind} (transaction)" if transactional else kind


def _key(raw: Raw) -> Key:
    return raw[schema.PK]["S"], raw[schema.SK]["S"]


def _describe(operation: str, params: dict[str, Any]) -> tuple[str, _Pending | None]:
    """The table and the items a write request names."""
    if operation in ("PutItem", "UpdateItem", "DeleteItem"):
        raw = params.get("Item") if operation == "PutItem" else params.get("Key")
        if not raw:
            return "", None
        pending = _Pending(operation, [_key(raw)], {})
        if operation == "PutItem":
            pending.puts[_key(raw)] = raw
        return params["TableName"], pending
    if operation == "BatchWriteItem":
        ((table, requests),) = params["RequestItems"].items()
        pending = _Pending(operation, [], {})
        for request in requests:
            raw = request["PutRequest"]["Item"] if "PutRequest" in request else request["DeleteRequest"]["Key"]
            pending.keys.append(_key(raw))
            if "PutRequest" in request:
                pending.puts[_key(raw)] = raw
        return table, pending
    pending = _Pending(operation, [], {})
    table = ""
    for op in params.get("TransactItems", []):
        ((kind, body),) = op.items()
        table = body["TableName"]
        raw = body.get("Item") or body["Key"]
        pending.keys.append(_key(raw))
        if kind == "Put":
            pending.puts[_key(raw)] = raw
        if kind == "ConditionCheck":
            pending.checks.add(_key(raw))
    return table, pending


def _unprocessed(parsed: dict[str, Any], table: str) -> set[Key]:
    out: set[Key] = set()
    for request in (parsed.get("UnprocessedItems") or {}).get(table, []):
        raw = request["PutRequest"]["Item"] if "PutRequest" in request else request["DeleteRequest"]["Key"]
        out.add(_key(raw))
    return out
