"""Migration step ``trace_names``: list every named trace's name in its trace partition, then drop what earlier
releases kept for trace-name search (issue 39).

Earlier releases posted each trace's name as trigram postings in its trace partition (``fts_forward`` with its
``gsi2`` copy, ``fts_reverse``), flagged the info "not yet indexed" (lsi5) until the indexer had posted it, and
wrote no name entries. This code lists names per partition (``store.trace_names``) and reads those postings and
flags as well only until this step is recorded (``layout.trace_names_complete``). Per partition, in this order:

1. an entry for every name its infos carry (read through the name index, lsi4), so every trace is found by
   the new path before anything of the old one goes;
2. the partition's trace postings (found through their reverse items), forward ones last-but-reverse (as the
   indexer orders them: a forward posting never outlives its reverse item);
3. the flags of its infos (conditional on the flag being the one read: an info rewritten meanwhile keeps its own).

Online, idempotent and resumable: running it again redoes what a stop left; a trace written meanwhile is written
with its entry already. When every experiment's partitions are done, the step is recorded in ``CONFIG / CFG#layout``.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "layers" / "shared" / "python"))

from serverless_mlflow.index import derived, fts
from serverless_mlflow.index.derived import FLAG_ATTRIBUTE
from serverless_mlflow.storage import layout, table
from serverless_mlflow.storage.schema import COLLECTIONS, ENTITY_TYPE, PK, SK, TTL_ATTRIBUTE
from serverless_mlflow.store import trace_names, trace_partitions
from serverless_mlflow.store import traces as store
from serverless_mlflow.store.trace_partitions import Partition

STEP = layout.TRACE_NAMES


@dataclass
class Progress:
    partitions: int = 0
    names: int = 0
    postings_removed: int = 0
    flags_cleared: int = 0


def migrate_partition(partition: Partition, progress: Progress) -> None:
    query = store.TRACE.query("by_name", experiment_id=partition.experiment_id, bucket=partition.bucket, shard=partition.shard)
    latest: dict[str, dict[str, Any]] = {}  # name -> the info whose expiry its entry must cover (None: never)
    for info in table.iter_query(**query):
        name, kept = info.get("trace_name"), latest.get(info.get("trace_name"))
        if name is not None and (kept is None or _outlives(info.get(TTL_ATTRIBUTE), kept.get(TTL_ATTRIBUTE))):
            latest[name] = info
    for info in latest.values():
        trace_names.ensure_for(info)  # conditional: never shortens an entry a writer stored
    progress.names += len(latest)
    reverse = table.query(partition.pk, fts.REVERSE.sk_prefix(entity_kind=fts.TRACE))
    forward = [fts.posting_items(partition.pk, fts.TRACE, item["entity_id"], item["level"], item["token"])[0] for item in reverse]
    table.batch_write(deletes=[{PK: i[PK], SK: i[SK]} for i in forward])
    table.batch_write(deletes=[{PK: i[PK], SK: i[SK]} for i in reverse])
    progress.postings_removed += len(forward)
    for item in table.iter_query(**COLLECTIONS["unindexed"].query(scope=partition.pk)):
        if item.get(ENTITY_TYPE) != "trace" or FLAG_ATTRIBUTE not in item:
            continue
        # False: rewritten meanwhile, and the new version's name has its entry (its writer put it first).
        if derived.remove_flag(item):
            progress.flags_cleared += 1
    progress.partitions += 1


def _outlives(expires: int | None, other: int | None) -> bool:
    return other is not None and (expires is None or expires > other)


def run(experiment_ids: Iterable[str], record: bool = True) -> Progress:
    """Migrate every trace partition of these experiments (every experiment of the table); record the step."""
    progress = Progress()
    trace_names.forget()  # write every entry this step needs, whatever this process remembers having written
    for experiment_id in experiment_ids:
        for partition in trace_partitions.partitions(experiment_id, descending=False):
            migrate_partition(partition, progress)
    if record:
        layout.record_steps([STEP])
    return progress
