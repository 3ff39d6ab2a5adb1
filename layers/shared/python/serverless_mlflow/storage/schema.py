"""The single-table key schema, declared once as data.

Every item carries ``pk``, ``sk`` and ``entity_type``; index key attributes are written only by the
entities that project into that index (sparse indexes). Templates use ``{name}`` for raw
server-generated identifiers and ``{name:codec}`` for values that must be encoded (see ``keys``):
``str`` for user strings, ``i64`` for integers, ``f64`` for floats, ``ver`` for model versions.

Each entity also declares its named access patterns (as ElectroDB entities do): ``RUN.query("by_status",
experiment_id=..., status=...)`` gives the arguments of ``table.query``/``iter_query``/``query_pages``
(partition value, ``begins_with`` prefix or range, index and its key attribute names), and
``Entity.parse`` reads a key back into its fields. Code outside this module never spells a key prefix
or an index attribute (tests/foundation/test_key_patterns.py checks it).

The CDK table, the local table, ``docs/schema.md`` and the access-pattern catalog (``tools/catalog.py``)
are all generated from or checked against this module, so a key changes in exactly one place.
"""

from __future__ import annotations

import functools
import re
import zlib
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from serverless_mlflow.storage import keys
from serverless_mlflow.storage.keys import ENCODERS

PK = "pk"
SK = "sk"
ENTITY_TYPE = "entity_type"
TTL_ATTRIBUTE = "expires_at"


@dataclass(frozen=True)
class Index:
    name: str
    kind: str  # "GSI" or "LSI"
    pk: str
    sk: str
    projection: str  # "ALL" or "KEYS_ONLY"
    purpose: str


INDEXES: tuple[Index, ...] = (
    Index(
        "gsi1",
        "GSI",
        "gsi1pk",
        "gsi1sk",
        "KEYS_ONLY",
        "Reverse lookup: which experiment holds a run or logged model (and a layout 1 trace)",
    ),
    Index("gsi2", "GSI", "gsi2pk", "gsi2sk", "ALL", "Collections: experiments of a workspace; global FTS postings"),
    Index("gsi3", "GSI", "gsi3pk", "gsi3sk", "ALL", "Cross-partition lookups: model versions by run id"),
    Index("gsi4", "GSI", "gsi4pk", "gsi4sk", "KEYS_ONLY", "Permissions by resource"),
    Index("gsi5", "GSI", "gsi5pk", "gsi5sk", "ALL", "Name-ordered listings: experiments and registered models"),
    Index("lsi1", "LSI", PK, "lsi1sk", "ALL", "Runs by lifecycle stage, then start time; traces by execution time"),
    Index("lsi2", "LSI", PK, "lsi2sk", "ALL", "Runs by start time (layout 1 traces by request time)"),
    Index("lsi3", "LSI", PK, "lsi3sk", "ALL", "Runs and traces by status, then start/request time; model versions by stage, then version"),
    Index("lsi4", "LSI", PK, "lsi4sk", "ALL", "Runs by name; traces by name, then request time"),
    Index(
        "lsi5",
        "LSI",
        PK,
        "lsi5sk",
        "ALL",
        "Source items not yet indexed by the stream indexer (writers set lsi5sk, the indexer removes it)",
    ),
)
INDEX_BY_NAME = {index.name: index for index in INDEXES}
# The attribute that flags a source item as not yet indexed (set by writers, removed by the indexer).
NOT_INDEXED_FLAG = INDEX_BY_NAME["lsi5"].sk

# Sorts after every character a key holds: the inclusive upper end of a key range (``KeyQuery.ceiling``).
HIGH = "\uffff"

_PLACEHOLDER = re.compile(r"\{(\w+)(?::(\w+))?\}")

# What each codec's output looks like inside a key, for ``KeyTemplate.parse``. A ``str`` segment is escaped
# content (no code point below 4 except escape pairs) ending with the terminator; a truncated one carries
# the digest marker, which ``keys.decode_text`` refuses.
_SEGMENT = {
    "str": r"(?:[^\x00-\x03]|\x03[\x01-\x04])*(?:\x02[0-9a-f]+)?\x01",
    "i64": r"[0-9a-f]{16}",
    "f64": r"[0-9a-f]{16}",
    "ver": rf"[0-9]{{{keys.VERSION_WIDTH}}}",
}
_DECODERS = {"str": keys.decode_text, "i64": keys.decode_int64, "f64": keys.decode_float64, "ver": int}


def attributes_of(index: str | None) -> tuple[str, str]:
    """(partition key attribute, sort key attribute) of the table (``None``) or a named index."""
    if index is None:
        return PK, SK
    named = INDEX_BY_NAME[index]
    return named.pk, named.sk


@dataclass(frozen=True)
class KeyTemplate:
    template: str

    def render(self, values: dict[str, Any]) -> str:
        def substitute(match: re.Match[str]) -> str:
            name, codec = match.group(1), match.group(2)
            if name not in values or values[name] is None:
                raise KeyError(f"{self.template}: missing value for {name}")
            value = values[name]
            return ENCODERS[codec](value) if codec else keys.raw_id(str(value))

        return _PLACEHOLDER.sub(substitute, self.template)

    def prefix(self, values: dict[str, Any]) -> str:
        """Render up to the first placeholder without a value: the ``begins_with`` operand."""
        out, pos = [], 0
        for match in _PLACEHOLDER.finditer(self.template):
            out.append(self.template[pos : match.start()])
            name, codec = match.group(1), match.group(2)
            if values.get(name) is None:
                return "".join(out)
            value = values[name]
            out.append(ENCODERS[codec](value) if codec else keys.raw_id(str(value)))
            pos = match.end()
        out.append(self.template[pos:])
        return "".join(out)

    @property
    def fields(self) -> list[str]:
        return [m.group(1) for m in _PLACEHOLDER.finditer(self.template)]

    def parse(self, rendered: str, fields: Iterable[str] | None = None) -> dict[str, Any]:
        """The template's fields from a rendered key, codecs decoded (inverse of ``render``); only ``fields``
        when given (e.g. the run id of a tag whose long key was truncated).

        Raises ``ValueError`` when the key does not have this template's shape, when a wanted ``str`` field
        was truncated (only a digest of its tail is in the key: read the item's attribute instead), or when
        the template itself is ambiguous (a raw field directly followed by another field).
        """
        match = _parser(self.template).fullmatch(rendered)
        if match is None:
            raise ValueError(f"{rendered!r} does not match the key template {self.template!r}")
        wanted = set(fields) if fields is not None else None
        out: dict[str, Any] = {}
        for (name, codec), value in zip(_codecs(self.template), match.groups(), strict=True):
            if wanted is None or name in wanted:
                out[name] = _DECODERS[codec](value) if codec else value
        return out


@functools.cache
def _codecs(template: str) -> tuple[tuple[str, str | None], ...]:
    """(field, codec) of each placeholder of a key template, in order."""
    return tuple((m.group(1), m.group(2)) for m in _PLACEHOLDER.finditer(template))


@functools.cache
def _parser(template: str) -> re.Pattern[str]:
    """The regular expression of a key template: one group per field, in order (compiled once)."""
    parts, pos = [], 0
    matches = list(_PLACEHOLDER.finditer(template))
    for i, match in enumerate(matches):
        parts.append(re.escape(template[pos : match.start()]))
        codec = match.group(2)
        if codec:
            parts.append(f"({_SEGMENT[codec]})")
        elif match.end() == len(template):
            parts.append("(.*)")  # a trailing raw id (config keys such as seq#experiment hold '#')
        elif i + 1 < len(matches) and matches[i + 1].start() == match.end():
            raise ValueError(f"{template}: raw field {{{match.group(1)}}} is directly followed by another field; cannot parse")
        else:
            # A raw id ends where the rest of the template first matches: ids hold no separators (a `scope`
            # such as EXP#<id> inside fts_forward's gsi2 sort key is the exception, so that key is not parseable).
            parts.append("(.*?)")
        pos = match.end()
    parts.append(re.escape(template[pos:]))
    return re.compile("".join(parts), re.DOTALL)


@dataclass(frozen=True)
class KeyQuery(Mapping[str, Any]):
    """One key condition, ready for ``table.query(**q)`` / ``iter_query`` / ``query_pages``.

    Built by ``AccessPattern.query``: the partition value, and either a ``begins_with`` prefix or a range
    on the sort key of the table or the pattern's index (the attribute names come from ``INDEXES``).
    """

    pk_value: str
    sk_prefix: str | None
    index: str | None
    template: KeyTemplate
    given: Mapping[str, Any]  # the field values the query was built with
    sk_between: tuple[str, str] | None = None
    sk_before: str | None = None
    sk_after: str | None = None

    @property
    def pk_attr(self) -> str:
        return attributes_of(self.index)[0]

    @property
    def sk_attr(self) -> str:
        return attributes_of(self.index)[1]

    def bound(self, **values: Any) -> str:
        """The sort-key prefix with more fields filled in: a lower bound of those keys."""
        return self.template.prefix({**self.given, **values})

    def ceiling(self, **values: Any) -> str:
        """An upper bound above every key that starts with ``bound(**values)``."""
        return self.bound(**values) + HIGH

    def between(self, low: str, high: str) -> KeyQuery:
        return replace(self, sk_prefix=None, sk_between=(low, high))

    def range(self, low: Mapping[str, Any] | None = None, high: Mapping[str, Any] | None = None) -> KeyQuery:
        """Keys from ``bound(**low)`` through every key under ``bound(**high)`` (None values: open end)."""
        return self.between(self.bound(**(low or {})), self.ceiling(**(high or {})))

    def below(self) -> KeyQuery:
        """Every key of the partition sorting before this prefix."""
        return replace(self, sk_prefix=None, sk_before=self.sk_prefix)

    def after(self, sort_key: str) -> KeyQuery:
        """Every key of the partition sorting after ``sort_key``."""
        return replace(self, sk_prefix=None, sk_after=sort_key)

    @functools.cached_property
    def _arguments(self) -> dict[str, Any]:
        # Built once: ``table.query(**q)`` asks for the keys, then for every value.
        pk_attr, sk_attr = attributes_of(self.index)
        out: dict[str, Any] = {"pk_value": self.pk_value, "pk_attr": pk_attr, "sk_attr": sk_attr}
        optional = {
            # An empty prefix (a template that starts with a field) is no sort-key condition at all.
            "sk_prefix": self.sk_prefix or None,
            "index": self.index,
            "sk_between": self.sk_between,
            "sk_before": self.sk_before,
            "sk_after": self.sk_after,
        }
        out.update({name: value for name, value in optional.items() if value is not None})
        return out

    def __getitem__(self, name: str) -> Any:
        return self._arguments[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._arguments)

    def __len__(self) -> int:
        return len(self._arguments)


@dataclass(frozen=True)
class AccessPattern:
    """A named way to read a partition: the table or one index, and the sort-key template it walks.

    ``sk`` is the entity's own template for that index, or a shorter collection prefix (e.g. ``E#``: an
    experiment's metadata and its tags) when one query returns several entities.
    """

    name: str
    index: str | None  # None: the table
    pk: KeyTemplate
    sk: KeyTemplate
    description: str
    entities: tuple[str, ...] = ()

    @property
    def pk_attr(self) -> str:
        return attributes_of(self.index)[0]

    @property
    def sk_attr(self) -> str:
        return attributes_of(self.index)[1]

    def query(self, **values: Any) -> KeyQuery:
        """The partition (every pk field is required) and the sort-key prefix up to the first missing field."""
        return KeyQuery(self.pk.render(values), self.sk.prefix(values), self.index, self.sk, dict(values))


@dataclass(frozen=True)
class Entity:
    name: str
    pk: KeyTemplate
    sk: KeyTemplate
    description: str
    # index name -> (pk template, sk template); an LSI only has a sort-key template (pk is the table pk).
    indexes: dict[str, tuple[KeyTemplate | None, KeyTemplate]] = field(default_factory=dict)
    attributes: tuple[str, ...] = ()
    derived: bool = False  # maintained by the stream indexer, never by a request handler
    expires: bool = False  # carries the TTL attribute
    patterns: dict[str, AccessPattern] = field(default_factory=dict)
    # A shape of an older table layout (``LEGACY``): its items carry ``entity_type`` = ``legacy_of`` (the entity
    # that replaced the shape) and are only read while ``make migrate`` moves them, never written.
    legacy_of: str | None = None

    @property
    def type_name(self) -> str:
        """The ``entity_type`` its items carry."""
        return self.legacy_of or self.name

    def key(self, **values: Any) -> dict[str, str]:
        return {PK: self.pk.render(values), SK: self.sk.render(values)}

    def query(self, pattern: str, **values: Any) -> KeyQuery:
        """The key condition of one of this entity's named access patterns."""
        return self.patterns[pattern].query(**values)

    def templates(self, index: str | None = None) -> tuple[KeyTemplate, KeyTemplate]:
        """(partition key, sort key) templates of this entity in the table or in one of its indexes."""
        if index is None:
            return self.pk, self.sk
        pk_template, sk_template = self.indexes[index]
        return (pk_template or self.pk), sk_template

    def parse(self, sk: str, index: str | None = None, fields: Iterable[str] | None = None) -> dict[str, Any]:
        """The fields of a sort key of this entity (of the table or of ``index``), decoded."""
        return self.templates(index)[1].parse(sk, fields)

    def parse_pk(self, pk: str, index: str | None = None, fields: Iterable[str] | None = None) -> dict[str, Any]:
        return self.templates(index)[0].parse(pk, fields)

    def index_sk(self, index: str, **values: Any) -> str:
        """The sort-key value of one index for an item of this entity (e.g. to SET it in an update)."""
        return self.indexes[index][1].render(values)

    def index_keys(self, **values: Any) -> dict[str, str]:
        """Index attributes for an item of this entity; an index whose values are missing is skipped."""
        out: dict[str, str] = {}
        for index_name, (pk_template, sk_template) in self.indexes.items():
            index = INDEX_BY_NAME[index_name]
            try:
                rendered = {index.sk: sk_template.render(values)}
                if pk_template is not None:
                    rendered[index.pk] = pk_template.render(values)
            except KeyError:
                continue
            out.update(rendered)
        return out

    def item(self, attributes: dict[str, Any], **values: Any) -> dict[str, Any]:
        """A complete item: keys, index keys, entity type and the given attributes."""
        return {**attributes, **self.key(**values), **self.index_keys(**values), ENTITY_TYPE: self.type_name}

    def sk_prefix(self, **values: Any) -> str:
        return self.sk.prefix(values)


# An access pattern as declared next to its entity: (index or None for the table, description) uses the
# entity's own key templates there; a third element is a shorter sort-key template for a collection.
PatternSpec = tuple[str | None, str] | tuple[str | None, str, str]


def _e(
    name: str,
    pk: str,
    sk: str,
    description: str,
    indexes: dict[str, tuple[str | None, str]] | None = None,
    attributes: tuple[str, ...] = (),
    derived: bool = False,
    expires: bool = False,
    patterns: dict[str, PatternSpec] | None = None,
    legacy_of: str | None = None,
) -> Entity:
    entity = Entity(
        name=name,
        pk=KeyTemplate(pk),
        sk=KeyTemplate(sk),
        description=description,
        indexes={index: (KeyTemplate(ipk) if ipk is not None else None, KeyTemplate(isk)) for index, (ipk, isk) in (indexes or {}).items()},
        attributes=attributes,
        derived=derived,
        expires=expires,
        legacy_of=legacy_of,
    )
    for pattern_name, spec in (patterns or {}).items():
        index, pattern_description = spec[0], spec[1]
        pk_template, sk_template = entity.templates(index)
        if len(spec) == 3:
            sk_template = KeyTemplate(spec[2])
        entity.patterns[pattern_name] = AccessPattern(pattern_name, index, pk_template, sk_template, pattern_description, (name,))
    return entity


EXP = "EXP#{experiment_id}"
RUN = "RUN#{run_id}"
LM = "LM#{model_id}"
# A registered model's partition. ``model_scope`` is empty in the ``default`` workspace (the keys models always had,
# so existing data needs no migration) and the workspace's name elsewhere: after the name's terminator, so the
# same name in two workspaces gets two partitions and no name can spell another workspace's key.
RM = "RM#{model_name:str}{model_scope}"
EDS = "EDS#{dataset_id}"
GW = "GW#{workspace}"
# Endpoint bindings: outside GW# (the gateway configuration, its secrets among it), so the functions that bind
# resources (evaluation's register_scorer) need no write access to the gateway's partitions.
GW_BINDINGS = "GWBIND#{workspace}"
MCP = "MCP#{workspace}"
SKILLS = "SKILL#{workspace}"
REVIEW = "REVIEW#{experiment_id}"
TRACE_PARTITION = "TB#{experiment_id}#{bucket}#{shard}"

# A trace info's partition: the hour of its request time and a hash shard of its trace id (see trace_partition).
TRACE_BUCKET_MS = 3_600_000
TRACE_SHARDS = 32
# The shard count infos were written with before (an info's key is recomputed from its trace id): an info not
# at its current shard is looked for at this one (``trace_shard_candidates``), so no migration moves them.
LEGACY_TRACE_SHARDS = 8
# Write shards of an experiment's trace-metric rollups (metric_rollup): a reader queries each (in parallel).
# A 10-span trace moves about 17 rollup items, twice (in progress, then finished), in transactions (two units
# per write): about 35 write units per trace over the shards, the busiest shard about 1.3 times its share (packs
# differ in size). 64 keep the busiest under 1.0 per trace (8 took 4.7: about 210 traces/s per experiment; 48
# took 0.99); a chart over h hours reads at most h x 64 items per slice, one Query per shard. Raising it needs
# no migration (records name their shard; readers query every shard up to it).
ROLLUP_SHARDS = 64


def model_scope(workspace: str) -> str:
    """The ``model_scope`` of a registered model's partition (``RM``) in ``workspace``."""
    return "" if workspace == "default" else workspace


def trace_bucket(request_time_ms: int) -> int:
    """The hour bucket of a request time (epoch hours; floor, so times before 1970 work too)."""
    return int(request_time_ms) // TRACE_BUCKET_MS


def trace_shard(trace_id: str, shards: int = TRACE_SHARDS) -> int:
    """The write shard of a trace: a stable hash of its id (crc32, the same in every process)."""
    return zlib.crc32(trace_id.encode("utf-8")) % shards


def trace_shard_candidates(trace_id: str) -> list[int]:
    """Where a trace's info may be: its shard, then the shard an earlier release (``LEGACY_TRACE_SHARDS``) gave it."""
    return list(dict.fromkeys([trace_shard(trace_id), trace_shard(trace_id, LEGACY_TRACE_SHARDS)]))


def trace_partition(experiment_id: str, request_time_ms: int, trace_id: str) -> dict[str, Any]:
    """The key fields of a trace's partition: experiment_id, bucket and shard."""
    return {"experiment_id": experiment_id, "bucket": trace_bucket(request_time_ms), "shard": trace_shard(trace_id)}


ENTITIES: tuple[Entity, ...] = (
    # --- experiment partition -------------------------------------------------------------
    _e(
        "experiment",
        EXP,
        "E#META",
        "Experiment metadata",
        indexes={
            "gsi2": ("WS#{workspace}#EXP", "{experiment_num:i64}"),
            "gsi5": ("WS#{workspace}#EXPNAME", "{name:str}"),
            "lsi5": (None, "U#{last_update_time:i64}#E"),
        },
        attributes=("experiment_id", "name", "artifact_location", "lifecycle_stage", "creation_time", "last_update_time", "workspace"),
        patterns={
            "with_tags": (None, "The experiment's metadata and its tags (E#META, E#TAG#...), one consistent query", "E#"),
            "in_workspace": ("gsi2", "Experiments of a workspace in id order (eventually consistent)"),
            "by_name": ("gsi5", "Experiments of a workspace in name order (eventually consistent)"),
        },
    ),
    _e(
        "experiment_name",
        "EXPNAME#{workspace}#{name:str}",
        "EXPNAME",
        "Name claim: makes experiment names unique through a conditional write, and resolves a name",
        attributes=("experiment_id", "name"),
    ),
    _e("experiment_tag", EXP, "E#TAG#{key:str}", "Experiment tag", attributes=("key", "value")),
    _e(
        "pair_index",
        EXP,
        "PX#META",
        "The experiment's declared (param, metric) pair indexes and whether each is backfilled (ready for searches)",
        attributes=("pairs", "rev"),
    ),
    _e(
        "experiment_entry",
        "EXPLIST#{workspace}",
        "E#{experiment_num:i64}#META",
        "Copy of E#META in the workspace's consistent experiment collection, written in the same transaction: "
        "search_experiments reads it strongly consistent (the gsi2 collection may lag a create)",
        # lsi5: "name not yet indexed" flag for the FTS indexer (it removes lsi5sk once the name is indexed).
        indexes={"lsi5": (None, "U#{last_update_time:i64}#E#{experiment_id}")},
        attributes=("experiment_id", "name", "artifact_location", "lifecycle_stage", "creation_time", "last_update_time", "workspace"),
        patterns={
            "collection": (None, "Every experiment entry of a workspace with its tags, in id order (strongly consistent)", "E#"),
            "one": (None, "One experiment entry and its tags (E#<num>#META, E#<num>#T#...)", "E#{experiment_num:i64}#"),
        },
    ),
    _e(
        "experiment_entry_tag",
        "EXPLIST#{workspace}",
        "E#{experiment_num:i64}#T#{key:str}",
        "Copy of an experiment tag in the consistent experiment collection (search filters and returns tags)",
        attributes=("experiment_id", "key", "value"),
    ),
    _e(
        "run",
        EXP,
        "R#{run_id}",
        "Run metadata (info)",
        indexes={
            "gsi1": ("RUN#{run_id}", "EXP#{experiment_id}"),
            "lsi1": (None, "R#{lifecycle_stage}#{start_time:i64}#{run_id}"),
            "lsi2": (None, "R#{start_time:i64}#{run_id}"),
            "lsi3": (None, "R#{status}#{start_time:i64}#{run_id}"),
            "lsi4": (None, "R#{run_name:str}{run_id}"),
            "lsi5": (None, "U#{last_update_time:i64}#R#{run_id}"),
        },
        patterns={
            "with_data": (None, "Runs of an experiment (or one run, given run_id) with their params, tags, inputs and outputs"),
            "data": (None, "One run's params, tags, inputs and outputs (not the run item)", "R#{run_id}#"),
            "by_lifecycle": ("lsi1", "Runs of one lifecycle stage by start time"),
            "by_start_time": ("lsi2", "Runs by start time"),
            "by_status": ("lsi3", "Runs of one status by start time"),
            "by_name": ("lsi4", "Runs by name"),
            "locate": ("gsi1", "Run id -> experiment (eventually consistent reverse lookup)"),
        },
        attributes=(
            "run_id",
            "experiment_id",
            "run_name",
            "user_id",
            "status",
            "start_time",
            "end_time",
            "artifact_uri",
            "lifecycle_stage",
            "deleted_time",
            "last_update_time",
            # Set by create_run: every item of the run's range is on LSI5 until the indexer first writes the run's
            # summary (it does so before clearing any flag). Removed by writes of items LSI5 does not list (inputs,
            # outputs): a search then reads the run's range (run_summaries.whole_on_lsi5).
            "whole_on_lsi5",
        ),
    ),
    _e(
        "run_locator",
        RUN,
        "RUN",
        "Run id -> experiment id, read strongly consistent (a GSI could lag right after create_run)",
        attributes=("experiment_id",),
    ),
    _e(
        # Outside the experiment partition (issue 23): a training loop rewrites it at every step. get_run reads a
        # run's latest metrics with one Query of RUN#<run>; the indexer derives the RANK items and the summary.
        "latest_metric",
        RUN,
        "M#{key:str}",
        "Latest value of a run's metric (max step, then timestamp, then value)",
        # rank = int64(step) + int64(timestamp) + float64(value as SQL compares it): one string, so a
        # condition `rank < :new` keeps MLflow's rule under concurrent writers.
        attributes=("key", "value", "timestamp", "step", "is_nan", "rank", "experiment_id", "run_id"),
        patterns={"of_run": (None, "A run's latest metrics, in key order (one consistent Query)")},
    ),
    _e(
        # The "metrics changed" handshake between writers and the indexer (serverless_mlflow/index/metric_marks.py): v
        # counts metric writes, epoch is advanced by the indexer before it reads a run's metrics.
        "run_metric_state",
        RUN,
        "MS",
        "A run's metric write counter and indexer epoch (writers and the indexer)",
        attributes=("v", "epoch"),
    ),
    _e(
        # Written before metric packs (and by the layout-1 move): read with the packs of the same partition, as a
        # pack of one point. Its key is the point's position: (timestamp, step, value), the order MLflow answers
        # get-history in; value in the key is the SQL identity (+-inf as +-1.797e308, NaN distinct from 0).
        "metric_history",
        "MH#{run_id}#{key:str}",
        "{timestamp:i64}#{step:i64}#{value:f64}",
        "One metric point (written before metric packs; read as a pack of one point)",
        attributes=("key", "value", "timestamp", "step", "is_nan"),
        patterns={"of_metric": (None, "A run's points of one metric, in (timestamp, step, value) order")},
    ),
    _e(
        # The points of one metric that one request logged, in one item: write units follow bytes (about 35 per
        # point), not points, so a log_batch of 100 points of 5 keys is 5 items instead of 100. Keyed by the position
        # of its first point (the sort key of a metric_history point) and a digest of its points, so packs sort by
        # first point among the single points, and a re-sent request lands on the same key (idempotent). One
        # partition per run and key: 10 GB holds about 290 million points logged 20 per request.
        "metric_pack",
        "MH#{run_id}#{key:str}",
        "{timestamp:i64}#{step:i64}#{value:f64}#{digest}",
        "The points of one metric logged by one request, in (timestamp, step, value) order, in one item",
        attributes=("key", "points", "count"),
        patterns={"of_metric": (None, "A run's packs and points of one metric, by their first point (get-history reads both)")},
    ),
    _e(
        "param",
        EXP,
        "R#{run_id}#P#{key:str}",
        "Run parameter (immutable once logged)",
        indexes={"lsi5": (None, "U#{changed_at:i64}#P#{run_id}")},
        attributes=("key", "value"),
    ),
    _e(
        "run_tag",
        EXP,
        "R#{run_id}#T#{key:str}",
        "Run tag",
        # lsi5: "not yet indexed" flag for the tag_rank item (writers pass changed_at=<now ms>).
        indexes={"lsi5": (None, "U#{changed_at:i64}#T#{run_id}")},
        attributes=("key", "value"),
    ),
    _e(
        "run_input",
        EXP,
        "R#{run_id}#I#{dataset_name:str}{dataset_digest:str}",
        "Dataset input of a run (dataset fields copied so get_run stays one query, input tags)",
        attributes=("dataset", "tags"),
    ),
    _e(
        "run_input_part",
        EXP,
        "R#{run_id}#I#{dataset_name:str}{dataset_digest:str}#C{part:i64}",
        "Slice of a large dataset schema/profile of a run input (items stay < 400 KB)",
        attributes=("field", "data"),
    ),
    _e(
        # The indexer's copy of the run's latest metrics (RUN#<run>), in the run's range: get_run reads it with the run
        # in one Query, and the run summary copies it. Trusted while the run has no run_metrics_marker.
        "run_metrics_digest",
        EXP,
        "R#{run_id}#MD",
        "A run's latest metrics in one item, in the run's range (written by the indexer)",
        attributes=("run_id", "metrics", "oversize"),
        derived=True,
    ),
    _e(
        # Put by a metric writer (at most once per indexer pass), removed by the indexer once it has indexed the run's
        # metrics (serverless_mlflow/index/metric_marks.py). In the run's range, so get_run sees it in the same Query, and on
        # LSI5 with the other "not indexed yet" flags, so a search sees it too: both then read RUN#<run>.
        "run_metrics_marker",
        EXP,
        "R#{run_id}#MP",
        "A run whose latest metrics changed since the indexer last indexed them",
        indexes={"lsi5": (None, "U#{changed_at:i64}#MP#{run_id}")},
        attributes=("run_id", "epoch", "changed_at"),
    ),
    _e("run_model_input", EXP, "R#{run_id}#N#{model_id}", "Logged model input of a run", attributes=("model_id",)),
    _e("run_output", EXP, "R#{run_id}#O#{model_id}", "Logged model output of a run", attributes=("model_id", "step")),
    _e(
        "dataset",
        EXP,
        "D#{dataset_name:str}{dataset_digest:str}",
        "Dataset logged in an experiment: the first logged copy wins, as in MLflow's datasets table",
        # contexts / uncontexted: the mlflow.data.context tags its run inputs were logged with (search-datasets).
        attributes=("name", "digest", "source_type", "source", "schema", "profile", "contexts", "uncontexted"),
        patterns={"with_parts": (None, "Datasets of an experiment with their slices (D#<name><digest>, then its #C parts)", "D#")},
    ),
    _e(
        "dataset_part",
        EXP,
        "D#{dataset_name:str}{dataset_digest:str}#C{part:i64}",
        "Slice of a large dataset schema/profile (items stay < 400 KB)",
        attributes=("field", "data"),
        patterns={"parts": (None, "The slices of one experiment dataset, in order")},
    ),
    _e(
        "dataset_link",
        EXP,
        "DLINK#{dataset_name:str}{dataset_digest:str}{run_id}",
        "Run that used a dataset (search by datasets.*)",
        attributes=("run_id", "context"),
    ),
    _e(
        "experiment_layout",
        EXP,
        "LV",
        "The layout this experiment's items are in (version) and its derived metric items are in (ranks), set by "
        "make migrate once it has moved them; absent: the table's layout (CFG#layout_version)",
        attributes=("version", "ranks"),
    ),
    _e(
        "logged_model",
        EXP,
        "L#{model_id}",
        "Logged model (MLflow 3)",
        indexes={
            "gsi1": ("LM#{model_id}", "EXP#{experiment_id}"),
            "lsi2": (None, "L#{creation_timestamp:i64}#{model_id}"),
        },
        attributes=(
            "model_id",
            "experiment_id",
            "name",
            "artifact_location",
            "creation_timestamp",
            "last_updated_timestamp",
            "status",
            "model_type",
            "source_run_id",
            "status_message",
            "lifecycle_stage",
        ),
        patterns={"with_data": (None, "Logged models of an experiment (or one, given model_id) with their tags and params")},
    ),
    _e(
        "logged_model_locator",
        LM,
        "LM",
        "Logged model id -> experiment id",
        attributes=("experiment_id",),
        patterns={"with_metrics": (None, "A logged model's locator and its metric points (its whole partition), one consistent Query", "")},
    ),
    _e("logged_model_tag", EXP, "L#{model_id}#T#{key:str}", "Logged model tag", attributes=("key", "value")),
    _e("logged_model_param", EXP, "L#{model_id}#P#{key:str}", "Logged model parameter", attributes=("key", "value")),
    _e(
        # In the model's own partition (with its locator): a training loop logging with model_id adds a point per step.
        "logged_model_metric",
        LM,
        "M#{key:str}{step:i64}#{timestamp:i64}#{run_id}",
        "Metric logged against a logged model",
        attributes=("key", "value", "timestamp", "step", "run_id", "dataset_name", "dataset_digest"),
        patterns={"of_model": (None, "Every metric point of one logged model")},
    ),
    # --- traces (layout 2): trace partitions per (experiment, hour bucket, write shard) ------------
    # Nothing here grows with the number of traces an experiment ever logged: an info lives in the partition
    # of its request hour and a hash shard of its id (TRACE_SHARDS spread one hour's writes), its spans in the
    # trace's own partition. The experiment partition keeps one small directory item per non-empty partition.
    _e(
        "trace_bucket",
        EXP,
        "TB#{bucket:i64}#{shard}",
        "Directory of the experiment's non-empty trace partitions (hour bucket, write shard): written before the "
        "first info of that partition, expires with the last trace it can hold",
        attributes=("bucket", "shard"),
        expires=True,
        patterns={"by_bucket": (None, "The experiment's trace partitions in hour order (a range of buckets)")},
    ),
    _e(
        # The whole trace info in one item: tags, metadata and assessments are maps inside it, so get,
        # batchGet and every search page read each trace once (the LSIs project ALL). An assessment or
        # tag that would push it past 400 KB is refused (UpdateItem is atomic: nothing half-written).
        # The sort key is the request time: the table itself walks a partition in MLflow's default order.
        "trace",
        TRACE_PARTITION,
        "T#{request_time:i64}#{trace_id}",
        "Trace info (v3) with its tags, metadata and assessments, in its (hour, shard) trace partition",
        indexes={
            # Only traces with a known duration carry lsi1sk (MLflow sorts a NULL duration last).
            "lsi1": (None, "T#{execution_duration:i64}#{request_time:i64}#{trace_id}"),
            # Status filters and orders read one state's traces, newest first.
            "lsi3": (None, "T#{state}#{request_time:i64}#{trace_id}"),
            # Only traces with a name (mlflow.traceName tag) carry lsi4sk: name filters read just them, by time.
            "lsi4": (None, "T#{trace_name:str}{request_time:i64}#{trace_id}"),
            # "name not yet indexed" flag for trace-name FTS (the indexer removes it); writers pass changed_at.
            "lsi5": (None, "U#{changed_at:i64}#T#{trace_id}"),
        },
        patterns={
            "by_request_time": (None, "A trace partition's infos by request time"),
            "by_execution_time": ("lsi1", "A trace partition's infos by execution time, then request time"),
            "by_state": ("lsi3", "A trace partition's infos of one state by request time"),
            "by_name": ("lsi4", "A trace partition's named infos by name, then request time"),
        },
        attributes=(
            "trace_id",
            "experiment_id",
            "request_time",
            "execution_duration",
            "state",
            "request_preview",
            "response_preview",
            "client_request_id",
            "trace_name",
            "trace_metadata",
            "tags",
            "assessments",
            "linked_runs",
            "linked_prompts",
            "rev",
            "no_artifact_tag",
        ),
        expires=True,
    ),
    _e(
        # Trace-name search reads a partition's names, then each matching name's infos through lsi4 (by_name):
        # one small item per distinct name and partition, put by the info's writer before the info (once per
        # warm function), so a search right after a write is exact with no indexer and no flag on the info.
        "trace_name",
        TRACE_PARTITION,
        "N#{trace_name:str}",
        "A trace name used in this trace partition (expires no earlier than any trace the partition can hold)",
        attributes=("trace_name",),
        expires=True,
        patterns={"names": (None, "The distinct trace names of one trace partition")},
    ),
    _e(
        "trace_locator",
        "TRACE#{trace_id}",
        "TRACE",
        "Trace id -> experiment id and where its info is (info_time: the request time its key was made with; none: "
        "layout 1 or no info yet); span_count (spans stored anew), resent_spans (spans a batch found stored already: "
        "a retry may have stored them uncounted) and expected_spans (from the client's size stats) tell whether every "
        "span is stored; pending_runs: run links that came before the trace (link-to-run), added to the info by its "
        "writer (a locator holding only those has no experiment: no trace yet)",
        attributes=("experiment_id", "info_time", "span_count", "resent_spans", "expected_spans", "pending_runs"),
        expires=True,
        patterns={"with_spans": (None, "The trace's locator and its spans, in one query", "")},
    ),
    _e(
        "trace_spans",
        "TRACE#{trace_id}",
        "S#{span_id}",
        "One span as its OTLP protobuf bytes (a span over the item limit is spilled to S3: spill_key), in the trace's partition",
        attributes=("span", "spill_key", "start_time_unix_nano"),
        patterns={"of_trace": (None, "Every span of one trace")},
        expires=True,
    ),
    # --- traces, layout 1 (before `migrate` step traces_v2): read while a table still holds them ----------
    # Items of these templates carry entity_type trace / trace_spans (what the earlier code wrote).
    _e(
        "trace_v1",
        EXP,
        "T#{trace_id}",
        "Layout 1 trace info (entity_type trace) in the experiment partition",
        indexes={
            "gsi1": ("TRACE#{trace_id}", "EXP#{experiment_id}"),
            "lsi2": (None, "T#{request_time:i64}#{trace_id}"),
            "lsi3": (None, "T#{state}#{request_time:i64}#{trace_id}"),
            "lsi4": (None, "T#{trace_name:str}{trace_id}"),
            "lsi5": (None, "U#{changed_at:i64}#T#{trace_id}"),
        },
        patterns={
            "by_request_time": ("lsi2", "Layout 1 traces of an experiment by request time"),
            "by_state": ("lsi3", "Layout 1 traces of one state by request time"),
            "by_name": ("lsi4", "Layout 1 traces with one name"),
        },
        attributes=("trace_id", "experiment_id", "request_time", "state", "trace_name", "tags", "rev"),
        expires=True,
    ),
    _e(
        "trace_spans_v1",
        EXP,
        "T#{trace_id}#S#{span_id}",
        "Layout 1 span (entity_type trace_spans) in the experiment partition",
        attributes=("span", "spill_key", "start_time_unix_nano"),
        patterns={
            "of_trace": (None, "Layout 1 spans of one trace"),
            "everything": (None, "Every layout 1 trace item of an experiment (infos and spans), in key order", "T#"),
        },
        expires=True,
    ),
    # --- GenAI review: label schemas, review queues, issues (one small partition per experiment) ----
    # Kept out of the experiment partition: its item collection is shared with runs and traces, and these
    # are read as a whole per experiment (a few dozen items) and by id through the locator.
    _e(
        "label_schema",
        REVIEW,
        "LS#{schema_id}",
        "Label schema (a reviewer question): name, type, input config, instruction; is_default marks the protected default",
        attributes=(
            "schema_id",
            "experiment_id",
            "name",
            "type",
            "instruction",
            "enable_comment",
            "input",
            "created_by",
            "created_at",
            "last_updated_at",
            "is_default",
        ),
        patterns={"of_experiment": (None, "Every label schema of an experiment", "LS#")},
    ),
    _e(
        "label_schema_name",
        REVIEW,
        "LSN#{name:str}",
        "Name claim: label schema names are unique per experiment (case-sensitive, as MLflow's unique constraint)",
        attributes=("schema_id",),
    ),
    _e(
        "review_queue",
        REVIEW,
        "Q#{queue_id}",
        "Review queue with its assigned users and attached label schema ids",
        attributes=(
            "queue_id",
            "experiment_id",
            "name",
            "queue_type",
            "created_by",
            "creation_time_ms",
            "last_update_time_ms",
            "users",
            "schema_ids",
        ),
        patterns={"of_experiment": (None, "Every review queue of an experiment", "Q#")},
    ),
    _e(
        "review_queue_name",
        REVIEW,
        "QN#{name_key:str}",
        "Name claim: review queue names are unique per experiment, case-insensitively (name_key = name.lower())",
        attributes=("queue_id",),
    ),
    _e(
        "issue",
        REVIEW,
        "ISS#{issue_id}",
        "Issue found in an experiment's traces (name, description, status, severity, root causes, categories)",
        # gsi2: a workspace's issues across experiments (search_issues without an experiment id).
        indexes={"gsi2": ("WS#{workspace}#ISSUES", "{issue_id}")},
        attributes=(
            "issue_id",
            "experiment_id",
            "name",
            "description",
            "status",
            "severity",
            "root_causes",
            "source_run_id",
            "created_timestamp",
            "last_updated_timestamp",
            "created_by",
            "categories",
        ),
        patterns={
            "of_experiment": (None, "Every issue of an experiment", "ISS#"),
            "in_workspace": ("gsi2", "Every issue of a workspace (eventually consistent)"),
        },
    ),
    _e(
        "review_locator",
        "REVIEWID#{object_id}",
        "LOC",
        "Label schema, review queue or issue id -> experiment id (get by id: two GetItems, strongly consistent)",
        attributes=("experiment_id", "kind"),
    ),
    _e(
        # Ordered as MLflow lists a queue's items (creation time descending, then item id): `rank` is the
        # complement of the creation time, so a forward walk of lsi2/lsi3 is that order.
        "review_queue_item",
        "RQ#{queue_id}",
        "I#{item_id}",
        "A trace attached to a review queue, with its shared-pool status and who completed it",
        indexes={
            "lsi2": (None, "I#{rank:i64}#{item_id}"),
            "lsi3": (None, "I#{status}#{rank:i64}#{item_id}"),
        },
        attributes=(
            "queue_id",
            "item_type",
            "item_id",
            "status",
            "completed_by",
            "completed_time_ms",
            "creation_time_ms",
            "last_update_time_ms",
        ),
        patterns={
            "all": (None, "Every item of one queue (or one item, given item_id)"),
            "in_order": ("lsi2", "A queue's items, newest first, then by item id"),
            "by_status": ("lsi3", "A queue's items of one status, newest first, then by item id"),
        },
    ),
    _e(
        "review_item_queue",
        "RQITEM#{item_id}",
        "Q#{queue_id}",
        "Item -> a queue holding it (list queues by item, drop a deleted trace from its queues); written with the item",
        attributes=("queue_id", "experiment_id"),
        patterns={"of_item": (None, "The queues one item is attached to")},
    ),
    # --- GenAI evaluation: datasets and scorers ---------------------------------------------
    _e(
        "evaluation_dataset",
        "EDSLIST#{workspace}",
        "DS#{dataset_id}",
        "Evaluation dataset with its tags map, schema, profile and record count, in the workspace's strongly consistent "
        "collection (get is a GetItem, search without experiment ids one Query); rev guards read-modify-write updates",
        attributes=(
            "dataset_id",
            "name",
            "digest",
            "created_time",
            "last_update_time",
            "created_by",
            "last_updated_by",
            "tags",
            "schema",
            "profile",
            "num_records",
            "rev",
            "workspace",
            "deleting",
        ),
        patterns={"in_workspace": (None, "Every evaluation dataset of a workspace (strongly consistent)")},
    ),
    _e(
        "evaluation_dataset_experiment",
        EDS,
        "X#{experiment_id}",
        "Experiment a dataset is associated with (dataset side)",
        attributes=("experiment_id", "created_time"),
        patterns={"of_dataset": (None, "Experiments a dataset is associated with")},
    ),
    _e(
        "experiment_evaluation_dataset",
        EXP,
        "EVDS#{dataset_id}",
        "Dataset associated with an experiment (search by experiment ids)",
        attributes=("dataset_id",),
        patterns={"of_experiment": (None, "Evaluation datasets associated with an experiment")},
    ),
    _e(
        # Keyed by MLflow's record identity (sha256 of the sorted-key inputs JSON): an upsert finds its record by key.
        "evaluation_dataset_record",
        EDS,
        "R#{input_hash}",
        "Dataset record (inputs/outputs/expectations/tags/source as one JSON document); lsi2 orders records as MLflow pages them",
        indexes={"lsi2": (None, "DR#{created_time:i64}#{dataset_record_id}")},
        patterns={"by_created_time": ("lsi2", "A dataset's records in MLflow's page order (created time, then record id)")},
        attributes=(
            "dataset_record_id",
            "input_hash",
            "data",
            "parts",
            "parts_id",
            "source_id",
            "source_type",
            "created_time",
            "last_update_time",
            "created_by",
            "last_updated_by",
            "rev",
        ),
    ),
    _e(
        "evaluation_dataset_record_part",
        EDS,
        "R#{input_hash}#P{parts_id}#C{part:i64}",
        "Slice of a large record document (items stay < 400 KB); parts_id names one write's set, so a concurrent "
        "writer never overwrites the parts a committed record points to",
        attributes=("data",),
    ),
    _e(
        "evaluation_dataset_record_id",
        EDS,
        "RID#{dataset_record_id}",
        "Record id -> input hash (delete records by id)",
        attributes=("input_hash",),
    ),
    _e(
        "scorer",
        EXP,
        "SC#{name:str}",
        "Registered scorer: name -> scorer id (MLflow's scorers row); the gateway endpoint it is bound to",
        attributes=("scorer_id", "name", "experiment_id", "bound_endpoint_id"),
        patterns={"with_versions": (None, "Scorers of an experiment (or one, given name) with their versions, in name order")},
    ),
    _e(
        "scorer_version",
        EXP,
        "SC#{name:str}V#{version:ver}",
        "Registered scorer version (serialized scorer); version = latest + 1, claimed with a condition",
        attributes=("scorer_id", "name", "experiment_id", "version", "serialized_scorer", "creation_time"),
    ),
    _e(
        # MLflow addresses a scorer by id in a few places (gateway guardrails); scorers are keyed by experiment
        # and name, so registering a new scorer writes this pointer with it.
        "scorer_ref",
        "SCORER#{scorer_id}",
        "REF",
        "Scorer id -> its experiment and name (written and deleted with the scorer)",
        attributes=("scorer_id", "experiment_id", "name"),
    ),
    _e(
        # gsi2 only while the sample rate is positive: the monitor's minute tick reads every active configuration
        # (MLflow's get_active_online_scorers) in one GSI partition, which grows with scorers that run, not traces.
        "online_scoring_config",
        "SCORER#{scorer_id}",
        "OSC",
        "Online scoring configuration of a scorer (one per scorer id; read by id in batches)",
        indexes={"gsi2": ("MONITOR#ONLINE", "{active_workspace:str}{experiment_id}#{scorer_id}")},
        attributes=("online_scoring_config_id", "scorer_id", "sample_rate", "experiment_id", "filter_string", "workspace", "created_by"),
        patterns={"active": ("gsi2", "Online scoring configurations with a positive sample rate, every workspace (eventually consistent)")},
    ),
    _e(
        # MLflow runs one online scoring job per experiment at a time (its job's ``exclusive=["experiment_id"]``):
        # the monitor claims this item with a condition on the job it replaces before submitting the next.
        "online_scoring_job",
        EXP,
        "OSJOB",
        "The experiment's latest online scoring job (claimed with a condition: one at a time per experiment)",
        attributes=("experiment_id", "job_id", "workspace", "claimed_at"),
    ),
    _e(
        # MLflow 3.18 keeps an issue-detection schedule in experiment tags and finds scheduled experiments by a tag
        # search; here saving the schedule tag also puts this item (due now), and the monitor queries the items due
        # by time, then moves ``due`` to the schedule's next fire time. Paused or removed schedules leave gsi2.
        "issue_schedule",
        EXP,
        "ISCHED",
        "An experiment's issue-detection schedule as the monitor sees it: when it is next due, who saved it, its last job",
        indexes={"gsi2": ("MONITOR#ISSUES", "{due:i64}#{experiment_id}")},
        attributes=("experiment_id", "workspace", "due", "created_by", "job_id"),
        patterns={"due": ("gsi2", "Issue-detection schedules by the time they are next due, every workspace (eventually consistent)")},
    ),
    _e(
        # Trace archival (MLflow 3.17): the monitor's pass walks the experiment's trace partitions from this hour
        # on, so hours whose traces are all archived are never read again (the walk stays flat in history).
        "trace_archival_cursor",
        EXP,
        "TACURSOR",
        "The first hour bucket of the experiment that may still hold traces to archive",
        attributes=("bucket",),
    ),
    # --- derived items, written only by the stream indexer ----------------------------------
    _e(
        # One partition per experiment and metric key (not the experiment's): a training loop moves a run's item
        # at every indexer batch, and the experiment's keys spread over as many partitions.
        "metric_rank",
        "MRANK#{experiment_id}#{key:str}",
        "V#{value:f64}#{run_id}",
        "A run's latest metric value, in value order",
        attributes=("run_id", "key", "value", "is_nan"),
        derived=True,
        patterns={"by_value": (None, "Runs by their latest value of one metric (prefix, or a value range)")},
    ),
    _e(
        # Where metric_rank partitions are: a key's item is put the first time the indexer ranks it (and kept), so
        # admin verify reads every partition a stale RANK item could be in.
        "metric_key",
        EXP,
        "MK#{key:str}",
        "A metric key some run of the experiment has logged (its RANK partition exists)",
        attributes=("key",),
        patterns={"all": (None, "Every metric key of an experiment")},
    ),
    _e(
        # value_key is keys.text(value, 300) so key + value + run id stay under DynamoDB's 1024-byte sort key.
        "param_rank",
        EXP,
        "RANK#p#{key:str}{value_key}{run_id}",
        "A run's param value, in value order",
        attributes=("run_id", "key", "value"),
        derived=True,
        patterns={"by_value": (None, "Runs by their value of one param (value_key prefix: exact or LIKE 'v%')")},
    ),
    _e(
        # Same value_key as param_rank: filters `tags.k = 'v'` / `LIKE 'v%'` read one key range.
        "tag_rank",
        EXP,
        "RANK#t#{key:str}{value_key}{run_id}",
        "A run's tag value, in value order",
        attributes=("run_id", "key", "value"),
        derived=True,
        patterns={"by_value": (None, "Runs by their value of one tag (value_key prefix: exact or LIKE 'v%')")},
    ),
    _e(
        # A copy of the run item, its R#<run># data items and its latest metrics in one item, rebuilt by the
        # indexer after every change of the run (readers trust it only while no item of the run carries an LSI5
        # flag and the run has no run_metrics_marker): a search page reads one item per returned or verified run
        # instead of its range. In the run's partition: read by key only, rewritten once per run and indexer batch.
        "run_summary",
        RUN,
        "S",
        "A run with its latest metrics, params, tags, inputs and outputs, in one item",
        attributes=("run_id", "experiment_id", "items", "rev", "oversize"),
        derived=True,
    ),
    _e(
        # Opt-in (tools/pair_index.py): a param value and a metric's latest value in one key, so
        # `params.p = 'v'` ORDER BY metrics.m reads the page's runs in order instead of every run having p = 'v'.
        # Written by the run summary rebuild in the same transaction as the summary (which lists them);
        # position is the metric's f64 key, or "~" (after every value) for a run lacking the metric.
        "pair_rank",
        "PRANK#{experiment_id}#{pair_id}",
        "V#{value_key}{position}#{run_id}",
        "A run's param value and latest metric value, for one declared (param, metric) pair, in value order",
        attributes=("run_id", "param", "metric", "value"),
        derived=True,
        patterns={"by_value": (None, "Runs with one value of the pair's param, by the pair's metric (prefix, or a value range)")},
    ),
    _e(
        # Kept by the indexer from contribution records (trace_metrics/rollups.py): traces/metrics reads a few
        # hundred of these for a chart over any number of traces.
        # Spread over ROLLUP_SHARDS keys so that no key takes every trace's deltas: an indexer transaction picks
        # one shard for the traces it aggregates first (a trace keeps it: its contribution record names it) and
        # readers sum the shards, and the unsharded key of tables written before the shards (metric_rollup_v1).
        "metric_rollup",
        "ROLLUP#{experiment_id}#{shard}",
        "{family}#{bucket:i64}#{group_bucket:i64}#{slice}",
        "Trace metrics of one experiment (one of its rollup shards), family (T traces, S span counts/latency, C span costs, A assessments) with its "
        "level suffix (none: every dimension; s: trace status only; 0: ungrouped; 0m: ungrouped, bucket = minute), hour "
        "(minute) and slice of dimension values: row count and a summary (exact values or log-bucket sketch) per metric",
        attributes=("family", "bucket", "group_bucket", "data", "rev"),
        derived=True,
        patterns={"in_hours": (None, "One family level's rollups of an experiment over a range of hours (minutes for 0m)")},
    ),
    _e(
        "rollup_meta",
        "ROLLUP#{experiment_id}",
        "META",
        "The experiment's longest trace duration seen (how far before a range's start a span of it may have begun)",
        attributes=("max_duration_ms",),
        derived=True,
    ),
    _e(
        "trace_contribution",
        "TRACE#{trace_id}",
        "AGG",
        "What a trace currently adds to its experiment's rollups and where its content signature is (replay-safe deltas)",
        attributes=(
            "experiment_id",
            "parts",
            "parts_z",
            "shard",
            "signature_key",
            "signature_digest",
            "span_count",
            "span_ids",
            "in_progress",
            "rev",
        ),
        derived=True,
    ),
    _e(
        # Next to the trace's info (same partition, same order): a text search walks signatures, not spans.
        "trace_text_signature",
        TRACE_PARTITION,
        "X#{request_time:i64}#{trace_id}",
        "Bloom filter of the folded trigrams of a trace's span contents (768 bytes, compressed when shorter), for trace.text / span.content search",
        attributes=("trace_id", "bits", "spans"),
        derived=True,
    ),
    _e(
        # Derived from a trace's issue-reference assessments: search_issues(include_trace_count) counts an
        # issue's traces with one COUNT Query of its partition, as MLflow counts distinct traces per issue.
        "issue_trace",
        "ISSUETRACE#{issue_id}",
        "T#{trace_id}",
        "A trace holding an issue-reference assessment to the issue (any validity), kept by the indexer",
        attributes=("issue_id", "trace_id", "experiment_id"),
        derived=True,
        patterns={"of_issue": (None, "The traces referencing one issue")},
    ),
    _e(
        "fts_forward",
        "{scope}",
        "FTS#{level}#{token:str}{entity_kind}#{entity_id:str}",
        "Token -> entity posting (scope: EXP#<id> for runs, the trace partition for traces, EXPLIST#<ws> for experiments, RMFTS#<ws> for models)",
        indexes={"gsi2": ("FTS#{token:str}", "{level}#{entity_kind}#{scope}#{entity_id:str}")},
        attributes=("entity_kind", "entity_id", "token", "level"),
        derived=True,
        patterns={
            "postings": (None, "Entities of one kind holding a token, in one scope"),
            "global": ("gsi2", "Entities holding a token across every scope (eventually consistent)"),
        },
    ),
    _e(
        "fts_reverse",
        "{scope}",
        "FTS_REV#{entity_kind}#{entity_id:str}{level}#{token:str}",
        "Entity -> token, to find and remove stale postings",
        attributes=("entity_kind", "entity_id", "token", "level"),
        derived=True,
        patterns={"of_entity": (None, "Every token posted for one entity (to remove stale postings)")},
    ),
    # --- model registry partition -----------------------------------------------------------
    _e(
        "registered_model",
        RM,
        "M#META",
        "Registered model; next_version allocates version numbers; rename/delete markers make those resumable",
        # No GSI: the model list is the strongly consistent registered_model_entry collection, and a
        # GSI key on last_updated_timestamp would cost two index writes per version created.
        attributes=(
            "name",
            "description",
            "creation_timestamp",
            "last_updated_timestamp",
            "next_version",
            "workspace",
            "is_prompt",
            "renaming_to",
            "renaming_from",
            "renamed_at",
            "deleting",
        ),
        patterns={
            "everything": (None, "Every item of one registered model: aliases, META, tags, versions and their tags", "M#"),
            # Read with KeyQuery.below(): aliases, META and model tags sort before the versions.
            "head": (None, "Aliases, META and model tags: every key sorting before the versions (M#V#)", "M#V#"),
        },
    ),
    _e(
        "registered_model_entry",
        "RMLIST#{workspace}",
        "{model_name:str}",
        "Name-ordered, strongly consistent list of registered models (search reads it with ConsistentRead)",
        # lsi5: "name not yet indexed" flag for the FTS indexer; writers pass changed_at=<now ms>.
        indexes={"lsi5": (None, "U#{changed_at:i64}#M")},
        attributes=("name", "is_prompt"),
    ),
    _e(
        "model_version",
        RM,
        "M#V#{version:ver}",
        "Model version, sorted numerically by zero-padded version",
        indexes={
            "gsi3": ("MVRUN#{run_id}", "{model_name:str}{version:ver}"),
            # Latest version of each stage: one consistent LSI query per stage (descending, limit 1).
            "lsi3": (None, "MV#{current_stage}#{version:ver}"),
        },
        patterns={
            "with_tags": (None, "Versions of a model (or one, given version) with their tags, in version order"),
            "by_stage": ("lsi3", "Versions of a model in one stage, in version order"),
            "by_run": ("gsi3", "Model versions created from one run (eventually consistent)"),
        },
        attributes=(
            "name",
            "version",
            "creation_timestamp",
            "last_updated_timestamp",
            "description",
            "user_id",
            "current_stage",
            "source",
            "run_id",
            "run_link",
            "status",
            "status_message",
            "storage_location",
            "model_id",
            "deleting",
        ),
    ),
    _e(
        "model_version_tag",
        RM,
        "M#V#{version:ver}#T#{key:str}",
        "Model version tag",
        attributes=("key", "value"),
        patterns={"of_version": (None, "Tags of one model version")},
    ),
    _e(
        "registered_model_tag",
        RM,
        "M#TAG#{key:str}",
        "Registered model tag",
        attributes=("key", "value"),
        patterns={"of_model": (None, "Tags of one registered model")},
    ),
    _e(
        "model_alias",
        RM,
        "M#ALIAS#{alias:str}",
        "Alias -> version",
        attributes=("alias", "version"),
        patterns={"of_model": (None, "Aliases of one registered model (they sort first: ALIAS < META < TAG < V)")},
    ),
    # --- AI gateway configuration (one small partition per workspace) ---------------------------
    _e(
        "gateway_secret",
        GW,
        "S#{secret_id}",
        "Gateway secret: the value KMS-encrypted (ciphertext only, bound to secret_id and secret_name), its mask and metadata",
        attributes=(
            "secret_id",
            "secret_name",
            "ciphertext",
            "masked_value",
            "provider",
            "auth_config",
            "created_at",
            "last_updated_at",
            "created_by",
            "last_updated_by",
        ),
    ),
    _e("gateway_secret_name", GW, "SN#{secret_name:str}", "Secret name claim: unique per workspace", attributes=("secret_id",)),
    _e(
        "gateway_model_definition",
        GW,
        "D#{model_definition_id}",
        "Gateway model definition (provider, model name, secret); endpoint_count guards deletes while attached",
        attributes=(
            "model_definition_id",
            "name",
            "secret_id",
            "provider",
            "model_name",
            "endpoint_count",
            "created_at",
            "last_updated_at",
            "created_by",
            "last_updated_by",
        ),
    ),
    _e(
        "gateway_model_definition_name",
        GW,
        "DN#{name:str}",
        "Model definition name claim: unique per workspace",
        attributes=("model_definition_id",),
    ),
    _e(
        "gateway_endpoint",
        GW,
        "E#{endpoint_id}",
        "Gateway endpoint; its model mappings, tags and bindings follow under the same sort-key prefix",
        attributes=(
            "endpoint_id",
            "name",
            "routing_strategy",
            "fallback_config",
            "experiment_id",
            "usage_tracking",
            "created_at",
            "last_updated_at",
            "created_by",
            "last_updated_by",
        ),
    ),
    _e("gateway_endpoint_name", GW, "EN#{name:str}", "Endpoint name claim: unique per workspace", attributes=("endpoint_id",)),
    _e(
        "gateway_endpoint_mapping",
        GW,
        "E#{endpoint_id}#M#{model_definition_id}#{linkage_type}",
        "A model definition attached to an endpoint (one per definition and linkage type)",
        attributes=(
            "mapping_id",
            "endpoint_id",
            "model_definition_id",
            "weight",
            "linkage_type",
            "fallback_order",
            "position",
            "created_at",
            "created_by",
        ),
    ),
    _e("gateway_endpoint_tag", GW, "E#{endpoint_id}#T#{key:str}", "Endpoint tag", attributes=("key", "value")),
    _e(
        "gateway_endpoint_binding",
        GW_BINDINGS,
        "E#{endpoint_id}#B#{resource_type:str}#{resource_id:str}",
        "An MLflow resource (e.g. a scorer) bound to an endpoint, in the workspace's bindings partition",
        patterns={"by_endpoint": (None, "The workspace's bindings, or one endpoint's (endpoint_id given)")},
        attributes=(
            "endpoint_id",
            "resource_type",
            "resource_id",
            "display_name",
            "created_at",
            "last_updated_at",
            "created_by",
            "last_updated_by",
        ),
    ),
    # Bindings written by the release before GW_BINDINGS (under their endpoint in GW#): read and deleted by the
    # gateway, never written.
    _e(
        "gateway_endpoint_binding_in_gw",
        GW,
        "E#{endpoint_id}#B#{resource_type:str}#{resource_id:str}",
        "Earlier release: a binding under its endpoint in the gateway partition (read and deleted, never written)",
        attributes=("endpoint_id", "resource_type", "resource_id", "display_name", "created_at", "last_updated_at"),
        legacy_of="gateway_endpoint_binding",
    ),
    _e(
        "gateway_budget_policy",
        GW,
        "B#{budget_policy_id}",
        "Gateway budget policy: a spend limit (USD) per time window for the workspace, an endpoint or a user",
        attributes=(
            "budget_policy_id",
            "budget_unit",
            "budget_amount",
            "duration_unit",
            "duration_value",
            "target_scope",
            "target_value",
            "budget_action",
            "created_at",
            "last_updated_at",
            "created_by",
            "last_updated_by",
        ),
    ),
    # Guardrails: a guardrail carries a copy of its scorer version (versions are immutable), so reading one
    # needs no second lookup; an endpoint's guardrail configs sort under its ``E#<id>`` prefix, so the runtime
    # reads them with the endpoint in one Query and deleting the endpoint removes them.
    _e(
        "gateway_guardrail",
        GW,
        "G#{guardrail_id}",
        "Gateway guardrail: a registered scorer version run BEFORE or AFTER a call, to validate or sanitize",
        attributes=(
            "guardrail_id",
            "name",
            "scorer_id",
            "scorer_version",
            "scorer",
            "stage",
            "action",
            "action_endpoint_id",
            "created_at",
            "last_updated_at",
            "created_by",
            "last_updated_by",
        ),
    ),
    _e(
        "gateway_guardrail_config",
        GW,
        "E#{endpoint_id}#G#{guardrail_id}",
        "A guardrail added to an endpoint, with its execution order",
        attributes=("endpoint_id", "guardrail_id", "execution_order", "created_at", "created_by"),
    ),
    # Spend per budget window: one item per policy and window, ADDed to by every gateway call it covers (the
    # runtime's usage records; budgets are checked against them). Expires with TTL a day after the window ends.
    _e(
        "gateway_budget_window",
        "GWB#{workspace}#{budget_policy_id}",
        "W#{window_start:i64}",
        "Spend of one budget policy in one time window (the gateway runtime's usage record)",
        attributes=("budget_policy_id", "window_start", "window_end", "spend_nano_usd", "calls"),
        expires=True,
    ),
    # --- MCP server registry (one small partition per workspace, like the gateway's) ----------------
    _e(
        # A server's versions, tags, aliases and access endpoints sort under its own ``S#<name>`` prefix, so
        # one Query reads a server whole and one Query reads the registry (searches sort and page in memory).
        "mcp_server",
        MCP,
        "S#{name:str}",
        "MCP server: display name, description, icons; its versions, tags, aliases and endpoints follow it",
        attributes=("name", "display_name", "description", "icons", "created_by", "last_updated_by", "created_at", "last_updated_at"),
        patterns={
            "in_workspace": (None, "The whole MCP registry of a workspace (servers and everything under them)", "S#"),
            "whole_server": (None, "One server with its versions, tags, aliases and access endpoints", "S#{name:str}"),
        },
    ),
    _e("mcp_server_tag", MCP, "S#{name:str}#T#{key:str}", "MCP server tag", attributes=("server_name", "key", "value")),
    _e(
        "mcp_server_alias",
        MCP,
        "S#{name:str}#A#{alias:str}",
        "MCP server alias -> version",
        attributes=("server_name", "alias", "version"),
    ),
    _e(
        "mcp_server_version",
        MCP,
        "S#{name:str}#V#{version:str}",
        "MCP server version: server.json, status, tools, connect options; deleted versions stay as status=deleted",
        attributes=(
            "name",
            "server_name",
            "version",
            "semver",
            "server_json",
            "status",
            "tools",
            "source",
            "connect_options",
            "created_by",
            "last_updated_by",
            "created_at",
            "last_updated_at",
        ),
    ),
    _e(
        "mcp_server_version_tag",
        MCP,
        "S#{name:str}#V#{version:str}#T#{key:str}",
        "MCP server version tag",
        attributes=("server_name", "version", "key", "value"),
    ),
    _e(
        "mcp_access_endpoint",
        MCP,
        "S#{name:str}#E#{endpoint_id}",
        "MCP access endpoint: URL and transport, bound to a version or an alias of its server",
        attributes=(
            "endpoint_id",
            "server_name",
            "server_version",
            "server_alias",
            "url",
            "transport_type",
            "created_by",
            "last_updated_by",
            "created_at",
            "last_updated_at",
        ),
    ),
    # --- skill registry (one small partition per workspace, like the MCP registry's) -----------------
    _e(
        # A skill's versions, tags and aliases sort under its own ``K#<organization>#<name>`` prefix, so one Query
        # reads a skill whole and one Query reads the registry (searches sort and page in memory, as MLflow's
        # offset tokens do).
        "skill",
        SKILLS,
        "K#{organization:str}#{name:str}",
        "Skill: organization, name, description, icons; its versions, tags and aliases follow it",
        attributes=("organization", "name", "description", "icons", "created_by", "last_updated_by", "created_at", "last_updated_at"),
        patterns={
            "in_workspace": (None, "The whole skill registry of a workspace (skills and everything under them)", "K#"),
            "whole_skill": (None, "One skill with its versions, tags and aliases", "K#{organization:str}#{name:str}"),
        },
    ),
    _e(
        "skill_tag",
        SKILLS,
        "K#{organization:str}#{name:str}#T#{key:str}",
        "Skill tag",
        attributes=("organization", "skill_name", "key", "value"),
    ),
    _e(
        "skill_alias",
        SKILLS,
        "K#{organization:str}#{name:str}#A#{alias:str}",
        "Skill alias -> version number",
        attributes=("organization", "skill_name", "alias", "version"),
    ),
    _e(
        "skill_version",
        SKILLS,
        "K#{organization:str}#{name:str}#V#{version:ver}",
        "Skill version: source (git, oci, zip), ref, subpath, digest, status; deleted versions stay as status=deleted",
        attributes=(
            "organization",
            "skill_name",
            "version",
            "source_type",
            "source",
            "ref",
            "subpath",
            "digest",
            "status",
            "created_by",
            "last_updated_by",
            "created_at",
            "last_updated_at",
        ),
    ),
    _e(
        "skill_version_tag",
        SKILLS,
        "K#{organization:str}#{name:str}#V#{version:ver}#T#{key:str}",
        "Skill version tag",
        attributes=("organization", "skill_name", "version", "key", "value"),
    ),
    # --- webhooks and registry events ----------------------------------------------------------
    _e(
        # One small partition per workspace (webhooks are created by admins); the list is newest first.
        "webhook",
        "WEBHOOKS#{workspace}",
        "W#{webhook_id}",
        "Registry webhook: URL, subscribed events and status; the HMAC secret KMS-encrypted (never answered)",
        indexes={"lsi2": (None, "W#{creation_timestamp:i64}#{webhook_id}")},
        attributes=(
            "webhook_id",
            "name",
            "description",
            "url",
            "events",
            "status",
            "secret_ciphertext",
            "creation_timestamp",
            "last_updated_timestamp",
            "workspace",
        ),
        patterns={
            "in_workspace": (None, "Every webhook of a workspace (the dispatcher matches events against them)"),
            "by_creation": ("lsi2", "Webhooks of a workspace in creation order (listed newest first)"),
        },
    ),
    _e(
        # Transactional outbox: written in the same transaction as the registry change it describes, so an
        # event exists exactly when the change committed; the stream hands it to the webhook dispatcher.
        "registry_event",
        "EVENT#{event_id}",
        "EVENT",
        "A registry change as a webhook event (entity, action, MLflow's payload), dispatched from the stream; expires",
        attributes=("event_id", "workspace", "entity", "action", "payload", "model_name", "created_at", "split", "float_fields"),
        expires=True,
    ),
    # --- server-side jobs (the jobs API; run by the job worker from an SQS queue) ------------------
    _e(
        # One partition per job: the worker's conditional state changes (claim, checkpoint, finish) never
        # contend with another job's. The workspace listing is a GSI partition (no 10 GB item-collection cap).
        "job",
        "JOB#{job_id}",
        "JOB",
        "A server-side job: name, params, status, result, retries, progress and the worker's checkpoint",
        indexes={"gsi2": ("WS#{workspace}#JOBS", "{creation_time:i64}#{job_id}")},
        attributes=(
            "job_id",
            "job_name",
            "params",
            "timeout",
            "status",
            "result",
            "error_message",
            "retry_count",
            "creation_time",
            "last_update_time",
            "creator",
            "status_details",
            "status_message",
            "progress",
            "progress_updated_at",
            "checkpoint",
            "lease_expires_at",
            "workspace",
        ),
        patterns={"in_workspace": ("gsi2", "Jobs of a workspace, oldest first (the jobs search; eventually consistent)")},
    ),
    # --- workspaces, auth, config -----------------------------------------------------------
    # Every workspace in one small partition (an operator creates a handful): list is one consistent Query, get
    # one GetItem. ``default`` needs no item (it always exists; an update of it writes one), so no migration.
    _e(
        "workspace",
        "WORKSPACES",
        "WS#{workspace:str}",
        "Workspace (MLflow's name, description, default artifact root, trace archival settings)",
        attributes=("name", "description", "default_artifact_root", "trace_archival_location", "trace_archival_retention"),
        patterns={"all": (None, "Every workspace, in name order (strongly consistent)", "WS#")},
    ),
    _e(
        "user",
        "USER#{username:str}",
        "U#META",
        "User credentials (salted scrypt hash); its role ids per workspace (role_ids, role_ids@<workspace>)",
        attributes=("username", "user_id", "password_hash", "is_admin", "role_ids"),
        patterns={"with_grants": (None, "A user's credentials and every permission granted to them", "U#")},
    ),
    _e(
        "user_entry",
        "USERLIST",
        "U#{username:str}",
        "Collection of user names (list users without a Scan)",
        attributes=("username",),
        patterns={"all": (None, "Every user name, in name order")},
    ),
    # Grants (MLflow's per-user permissions). The resource id is a user string ("*" for a grant on every
    # resource of the kind), so it is encoded like any name; gsi4 lists a resource's grants for rename/delete.
    _e(
        "experiment_permission",
        "USER#{username:str}",
        "U#PERM#{experiment_id:str}",
        'User permission on an experiment (or "*")',
        indexes={"gsi4": ("EXPPERM#{experiment_id:str}", "USER#{username:str}")},
        attributes=("username", "resource_id", "permission", "workspace"),
        patterns={"by_resource": ("gsi4", "Every grant on one experiment (eventually consistent)")},
    ),
    _e(
        "registered_model_permission",
        "USER#{username:str}",
        "U#RPERM#{model_name:str}",
        'User permission on a registered model (or "*")',
        indexes={"gsi4": ("RMPERM#{model_name:str}", "USER#{username:str}")},
        attributes=("username", "resource_id", "permission", "workspace"),
        patterns={"by_resource": ("gsi4", "Every grant on one registered model (eventually consistent)")},
    ),
    _e(
        "prompt_permission",
        "USER#{username:str}",
        "U#PPERM#{model_name:str}",
        'User permission on a prompt (or "*")',
        indexes={"gsi4": ("PPERM#{model_name:str}", "USER#{username:str}")},
        attributes=("username", "resource_id", "permission", "workspace"),
        patterns={"by_resource": ("gsi4", "Every grant on one prompt (eventually consistent)")},
    ),
    # Roles (MLflow 3's basic-auth RBAC). A role's definition, its permissions and its members share the role's
    # partition; ROLELIST lists roles and claims each name once per workspace; a member is also an item of the
    # user's partition (the user item keeps the ids of its ``default``-workspace roles, so authorizing a request
    # still starts from one BatchGetItem).
    _e(
        "role",
        "ROLE#{role_id}",
        "R#META",
        "A role of a workspace: a named set of permissions assigned to users",
        attributes=("role_id", "name", "workspace", "description"),
        patterns={"with_grants": (None, "A role, its permissions and its members", "R#")},
    ),
    _e(
        "role_permission",
        "ROLE#{role_id}",
        "R#P#{resource_type}#{resource_pattern:str}",
        "A role's permission on a resource type and pattern (one per role, type and pattern)",
        attributes=("role_permission_id", "role_id", "resource_type", "resource_pattern", "permission"),
    ),
    _e(
        "role_member",
        "ROLE#{role_id}",
        "R#U#{username:str}",
        "A user assigned to the role (the role's side of a role_assignment)",
        attributes=("assignment_id", "user_id", "role_id", "username"),
    ),
    _e(
        "role_permission_ref",
        "ROLEPERM#{role_permission_id}",
        "RP#META",
        "Where a role permission lives, by its id (MLflow's API names role permissions by id)",
        attributes=("role_permission_id", "role_id", "resource_type", "resource_pattern"),
    ),
    _e(
        "role_entry",
        "ROLELIST",
        "R#{workspace:str}{role_id:i64}",
        "Collection of roles by workspace (list roles without a Scan)",
        attributes=("role_id", "workspace"),
        patterns={"all": (None, "Every role, by workspace then id", "R#"), "in_workspace": (None, "The roles of one workspace, by id")},
    ),
    _e(
        "role_name",
        "ROLELIST",
        "N#{workspace:str}{name:str}",
        "A role name claimed in its workspace (names are unique per workspace)",
        attributes=("role_id",),
    ),
    _e(
        "role_assignment",
        "USER#{username:str}",
        "U#ROLE#{role_id}",
        "A role assigned to the user (the user's side of a role_member)",
        attributes=("assignment_id", "user_id", "role_id", "workspace", "username"),
        patterns={"of_user": (None, "The roles assigned to one user")},
    ),
    _e(
        "gateway_endpoint_permission",
        "USER#{username:str}",
        "U#GPERM#{endpoint_id:str}",
        # No by-resource index yet: nothing moves or drops an endpoint's grants (endpoint ids are never reused).
        'User permission on an AI gateway endpoint (or "*"): USE lets the user invoke it',
        attributes=("username", "resource_id", "permission", "workspace"),
    ),
    _e(
        "config",
        "CONFIG",
        "CFG#{key}",
        "Configuration value, counters, indexer watermarks, the table's layout version (CFG#layout_version) and "
        "make migrate's checkpoints (CFG#migrate#<step>)",
        attributes=("value",),
    ),
    _e(
        "idempotency",
        "IDEMPOTENCY#{request_hash}",
        "IDEM",
        "Answer of a non-idempotent create, replayed for retries",
        attributes=("response",),
        expires=True,
    ),
    # --- layout 1 shapes (tables written before issue 23): read while `make migrate` moves them, never written ---
    _e(
        "metric_history_v1",
        EXP,
        "H#{run_id}#{key:str}{timestamp:i64}#{step:i64}#{value:f64}",
        "Layout 1: a metric point in its experiment's partition",
        attributes=("key", "value", "timestamp", "step", "is_nan"),
        legacy_of="metric_history",
        patterns={
            "of_metric": (None, "Layout 1: a run's points of one metric (read with the new partition until the move is done)"),
            "all": (None, "Layout 1: every metric point of an experiment (make migrate)", "H#"),
        },
    ),
    _e(
        "latest_metric_v1",
        EXP,
        "R#{run_id}#M#{key:str}",
        "Layout 1: a run's latest metric value, in its run's range",
        indexes={"lsi5": (None, "U#{changed_at:i64}#M#{run_id}")},
        attributes=("key", "value", "timestamp", "step", "is_nan", "rank", "changed_at"),
        legacy_of="latest_metric",
    ),
    _e(
        "metric_rank_v1",
        EXP,
        "RANK#m#{key:str}{value:f64}#{run_id}",
        "Layout 1: a metric RANK item in the experiment partition",
        attributes=("run_id", "key", "value", "is_nan"),
        derived=True,
        legacy_of="metric_rank",
        patterns={"all": (None, "Layout 1: every metric RANK item of an experiment (make migrate)", "RANK#m#")},
    ),
    _e(
        "pair_rank_v1",
        EXP,
        "RANK#pm#{pair_id}#{value_key}{position}#{run_id}",
        "Layout 1: a pair index item in the experiment partition",
        attributes=("run_id", "param", "metric", "value"),
        derived=True,
        legacy_of="pair_rank",
        patterns={"all": (None, "Layout 1: every pair index item of an experiment (make migrate)", "RANK#pm#")},
    ),
    _e(
        "run_summary_v1",
        EXP,
        "RS#{run_id}",
        "Layout 1: a run summary in the experiment partition",
        attributes=("run_id", "items", "rev", "oversize"),
        derived=True,
        legacy_of="run_summary",
        patterns={"all": (None, "Layout 1: every run summary of an experiment (make migrate)", "RS#")},
    ),
    _e(
        # Read as one more shard (the indexer only ever subtracts from it: a trace aggregated before the shards
        # keeps its contribution here, and leaves it when its record moves): no migration step is needed.
        "metric_rollup_v1",
        "ROLLUP#{experiment_id}",
        "{family}#{bucket:i64}#{group_bucket:i64}#{slice}",
        "Before rollup shards: an experiment's trace-metric rollups on one key (read with the shards)",
        attributes=("family", "bucket", "group_bucket", "data", "rev"),
        derived=True,
        legacy_of="metric_rollup",
        patterns={"in_hours": (None, "Unsharded rollups of one family level over a range of hours (read with the shards)")},
    ),
    _e(
        "logged_model_metric_v1",
        EXP,
        "L#{model_id}#M#{key:str}{step:i64}#{timestamp:i64}#{run_id}",
        "Layout 1: a logged model's metric point in the experiment partition (read with the model's items)",
        attributes=("key", "value", "timestamp", "step", "run_id", "dataset_name", "dataset_digest"),
        legacy_of="logged_model_metric",
    ),
)

# Shapes of older layouts, by the entity that replaced them (``LEGACY["metric_history"]`` is layout 1's).
LEGACY: dict[str, Entity] = {entity.legacy_of: entity for entity in ENTITIES if entity.legacy_of}

ENTITY: dict[str, Entity] = {entity.name: entity for entity in ENTITIES}
# Attributes that an entity's own keys carry: ``table.to_item`` leaves them out of the stored item when they equal
# what its keys say, ``table.from_item`` puts them back on every read (items stored with them read the same). A
# trace info is written about three times per trace with three LSI entries (projecting ALL) each time: under
# 1 KB, every one of those writes costs one write unit instead of two.
KEYED_ATTRIBUTES: dict[str, tuple[str, ...]] = {
    "trace": ("experiment_id", "request_time", "trace_id"),
    "trace_text_signature": ("trace_id",),
}

# Access patterns over a partition shared by several entities (ElectroDB's "collections").
COLLECTIONS: dict[str, AccessPattern] = {
    pattern.name: pattern
    for pattern in (
        AccessPattern(
            "unindexed",
            "lsi5",
            KeyTemplate("{scope}"),
            KeyTemplate("U#"),
            "Source items of a partition the stream indexer has not processed yet (writers set lsi5sk, the indexer removes it)",
            (
                "experiment",
                "experiment_entry",
                "run",
                "run_metrics_marker",
                "param",
                "run_tag",
                "trace",
                "registered_model_entry",
                "latest_metric_v1",
            ),
        ),
        AccessPattern(
            "model_postings",
            None,
            KeyTemplate("RMFTS#{workspace}"),
            KeyTemplate("FTS#"),
            "The FTS partition of a workspace's registered model names (fts_forward/fts_reverse items)",
            ("fts_forward", "fts_reverse"),
        ),
    )
}


# Every partition key shape (an item collection: the table has LSIs, so each is capped at 10 GB and served by one
# partition, about 1,000 write units/s) -> (what makes it grow, what bounds it). Rendered into docs/schema.md; the
# partition-heat bench (tools/partition_heat.py) measures the growth of the ones a workload writes.
COLLECTION_BOUNDS: dict[str, tuple[str, str]] = {
    "EXP#{experiment_id}": (
        "runs (run item and its LSI copies, params, tags, inputs, outputs, metrics digest and marker, param/tag RANK "
        "items, run-name postings), logged models with their tags and params, datasets, scorers, the directory of trace "
        "partitions (one small item per hour and shard that holds traces); layout 1 traces until their move",
        "the number of runs and models, never metric points: a few KB per run (docs/performance.md, partition heat), "
        "so several hundred thousand runs per experiment; a metric point writes nothing here (its run's marker is "
        "written once per indexer pass)",
    ),
    "RUN#{run_id}": (
        "the run's latest value of each metric key, its summary, its write counter",
        "the run's metric keys (about 200 B each) and one summary (< 400 KB)",
    ),
    "MH#{run_id}#{key:str}": (
        "every point of one metric of one run",
        "that metric's points: about 290 million per run and key logged 20 or more per request (about 37 B each in a pack), 57 million logged one per request (189 B each)",
    ),
    "MRANK#{experiment_id}#{key:str}": ("one RANK item per run having the metric", "the experiment's runs (about 150 B each)"),
    "PRANK#{experiment_id}#{pair_id}": ("one item per run having the pair's param", "the experiment's runs"),
    TRACE_PARTITION: (
        f"trace infos (each with three LSI copies) and their distinct names: one hour of one experiment's traces, in one of "
        f"{TRACE_SHARDS} write shards",
        "that hour's traces in that shard: at about 10 KB per info with its copies, about a million traces per shard and "
        f"hour ({TRACE_SHARDS} million an hour per experiment) before 10 GB; the write load spreads over {TRACE_SHARDS} keys",
    ),
    "TRACE#{trace_id}": ("one trace's locator and its spans", "that trace's spans (a span over the item limit is spilled to S3)"),
    "LM#{model_id}": ("the logged model's locator and every metric point logged against it", "that model's points (about 44 million)"),
    "EDS#{dataset_id}": ("an evaluation dataset's records (and their parts)", "that dataset's records: one dataset up to 10 GB"),
    "EXPLIST#{workspace}": ("a copy of each experiment and its tags, experiment-name postings", "the workspace's experiments"),
    "RMLIST#{workspace}": ("one entry per registered model", "the workspace's registered models"),
    "{scope}": (
        "FTS postings: runs' in their experiment partition, traces' in their trace partition, experiments' in EXPLIST#, models' in RMFTS#",
        "the names indexed in that scope",
    ),
    "RM#{model_name:str}": ("a registered model's versions, tags and aliases", "its versions"),
    "USER#{username:str}": ("a user's credentials, grants and role assignments", "the user's grants"),
    "ROLE#{role_id}": ("a role, its permissions and its members", "its permissions and members"),
    "CONFIG": ("counters, watermarks, the layout version, migration checkpoints", "a fixed set of items"),
}


# How an error message names a partition (its key template -> a phrase of the template's fields), e.g. when an item
# collection reaches DynamoDB's 10 GB (``errors.CollectionFull``). The most specific template is tried first.
PARTITION_NAMES: dict[str, str] = {
    ENTITY["metric_history"].pk.template: "the history of metric '{key}' of run {run_id}",
    ENTITY["logged_model_metric"].pk.template: "logged model {model_id}",
    ENTITY["latest_metric"].pk.template: "run {run_id}",
    ENTITY["evaluation_dataset_record"].pk.template: "evaluation dataset {dataset_id}",
    ENTITY["run"].pk.template: "experiment {experiment_id}",
}


def describe_partition(pk: str) -> str:
    """A partition key as a person reads it ("experiment 12"), or the key itself."""
    for template, phrase in PARTITION_NAMES.items():
        try:
            fields = KeyTemplate(template).parse(pk)
        except ValueError:
            continue
        return phrase.format(**fields)
    return f"partition {pk!r}"


def pattern(reference: str) -> AccessPattern:
    """An access pattern by reference: ``entity.pattern`` or a collection name (as ``catalog`` names them)."""
    if "." in reference:
        entity_name, pattern_name = reference.split(".", 1)
        return ENTITY[entity_name].patterns[pattern_name]
    return COLLECTIONS[reference]


def all_patterns() -> list[tuple[str, AccessPattern]]:
    """Every declared access pattern with its reference."""
    out = [(f"{entity.name}.{name}", p) for entity in ENTITIES for name, p in entity.patterns.items()]
    return out + sorted(COLLECTIONS.items())


def entity(name: str) -> Entity:
    return ENTITY[name]


def table_definition(table_name: str) -> dict[str, Any]:
    """Arguments for DynamoDB CreateTable, used by the local runtime (CDK builds the same from INDEXES)."""
    attribute_names = {PK, SK}
    gsis, lsis = [], []
    for index in INDEXES:
        attribute_names.update({index.pk, index.sk})
        key_schema = [
            {"AttributeName": index.pk, "KeyType": "HASH"},
            {"AttributeName": index.sk, "KeyType": "RANGE"},
        ]
        spec = {"IndexName": index.name, "KeySchema": key_schema, "Projection": {"ProjectionType": index.projection}}
        (gsis if index.kind == "GSI" else lsis).append(spec)
    return {
        "TableName": table_name,
        "BillingMode": "PAY_PER_REQUEST",
        "AttributeDefinitions": [{"AttributeName": name, "AttributeType": "S"} for name in sorted(attribute_names)],
        "KeySchema": [{"AttributeName": PK, "KeyType": "HASH"}, {"AttributeName": SK, "KeyType": "RANGE"}],
        "GlobalSecondaryIndexes": gsis,
        "LocalSecondaryIndexes": lsis,
        "StreamSpecification": {"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"},
    }
