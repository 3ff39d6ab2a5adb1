"""The single-table key schema, declared once as data.

Every item carries ``pk``, ``sk`` and ``entity_type``; index key attributes are written only by the
entities that project into that index (sparse indexes). Templates use ``{name}`` for raw
server-generated identifiers and ``{name:codec}`` for values that must be encoded (see ``keys``):
``str`` for user strings, ``i64`` for integers, ``f64`` for floats, ``ver`` for model versions.

The CDK table, the local table, ``docs/schema.md`` and the access-pattern catalog are all generated
from this module, so a key changes in exactly one place.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from serverless_mlflow.keys import ENCODERS

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
    Index("gsi1", "GSI", "gsi1pk", "gsi1sk", "KEYS_ONLY", "Reverse lookup: which experiment holds a run, trace or logged model"),
    Index("gsi2", "GSI", "gsi2pk", "gsi2sk", "ALL", "Collections: experiments of a workspace; global FTS postings"),
    Index("gsi3", "GSI", "gsi3pk", "gsi3sk", "ALL", "Cross-partition lookups: model versions by run id"),
    Index("gsi4", "GSI", "gsi4pk", "gsi4sk", "KEYS_ONLY", "Permissions by resource"),
    Index("gsi5", "GSI", "gsi5pk", "gsi5sk", "ALL", "Name-ordered listings: experiments and registered models"),
    Index("lsi1", "LSI", PK, "lsi1sk", "ALL", "Runs by lifecycle stage, then start time"),
    Index("lsi2", "LSI", PK, "lsi2sk", "ALL", "Runs and traces by start/request time"),
    Index("lsi3", "LSI", PK, "lsi3sk", "ALL", "Runs and traces by status, then start/request time; model versions by stage, then version"),
    Index("lsi4", "LSI", PK, "lsi4sk", "ALL", "Runs and traces by name"),
    Index("lsi5", "LSI", PK, "lsi5sk", "ALL", "Source items not yet indexed by the stream indexer (writers set lsi5sk, the indexer removes it)"),
)
INDEX_BY_NAME = {index.name: index for index in INDEXES}

_PLACEHOLDER = re.compile(r"\{(\w+)(?::(\w+))?\}")


@dataclass(frozen=True)
class KeyTemplate:
    template: str

    def render(self, values: dict[str, Any]) -> str:
        def substitute(match: re.Match[str]) -> str:
            name, codec = match.group(1), match.group(2)
            if name not in values or values[name] is None:
                raise KeyError(f"{self.template}: missing value for {name}")
            value = values[name]
            return ENCODERS[codec](value) if codec else str(value)

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
            out.append(ENCODERS[codec](value) if codec else str(value))
            pos = match.end()
        out.append(self.template[pos:])
        return "".join(out)

    @property
    def fields(self) -> list[str]:
        return [m.group(1) for m in _PLACEHOLDER.finditer(self.template)]


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

    def key(self, **values: Any) -> dict[str, str]:
        return {PK: self.pk.render(values), SK: self.sk.render(values)}

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
        return {**attributes, **self.key(**values), **self.index_keys(**values), ENTITY_TYPE: self.name}

    def sk_prefix(self, **values: Any) -> str:
        return self.sk.prefix(values)


def _e(
    name: str,
    pk: str,
    sk: str,
    description: str,
    indexes: dict[str, tuple[str | None, str]] | None = None,
    attributes: tuple[str, ...] = (),
    derived: bool = False,
    expires: bool = False,
) -> Entity:
    return Entity(
        name=name,
        pk=KeyTemplate(pk),
        sk=KeyTemplate(sk),
        description=description,
        indexes={
            index: (KeyTemplate(ipk) if ipk is not None else None, KeyTemplate(isk))
            for index, (ipk, isk) in (indexes or {}).items()
        },
        attributes=attributes,
        derived=derived,
        expires=expires,
    )


EXP = "EXP#{experiment_id}"
RM = "RM#{model_name:str}"
EDS = "EDS#{dataset_id}"
GW = "GW#{workspace}"

ENTITIES: tuple[Entity, ...] = (
    # --- experiment partition -------------------------------------------------------------
    _e(
        "experiment", EXP, "E#META", "Experiment metadata",
        indexes={
            "gsi2": ("WS#{workspace}#EXP", "{experiment_num:i64}"),
            "gsi5": ("WS#{workspace}#EXPNAME", "{name:str}"),
            "lsi5": (None, "U#{last_update_time:i64}#E"),
        },
        attributes=("experiment_id", "name", "artifact_location", "lifecycle_stage", "creation_time", "last_update_time", "workspace"),
    ),
    _e(
        "experiment_name", "EXPNAME#{workspace}#{name:str}", "EXPNAME",
        "Name claim: makes experiment names unique through a conditional write, and resolves a name",
        attributes=("experiment_id", "name"),
    ),
    _e("experiment_tag", EXP, "E#TAG#{key:str}", "Experiment tag", attributes=("key", "value")),
    _e(
        "experiment_entry", "EXPLIST#{workspace}", "E#{experiment_num:i64}#META",
        "Copy of E#META in the workspace's consistent experiment collection, written in the same transaction: "
        "search_experiments reads it strongly consistent (the gsi2 collection may lag a create)",
        # lsi5: "name not yet indexed" flag for the FTS indexer (it removes lsi5sk once the name is indexed).
        indexes={"lsi5": (None, "U#{last_update_time:i64}#E#{experiment_id}")},
        attributes=("experiment_id", "name", "artifact_location", "lifecycle_stage", "creation_time", "last_update_time", "workspace"),
    ),
    _e(
        "experiment_entry_tag", "EXPLIST#{workspace}", "E#{experiment_num:i64}#T#{key:str}",
        "Copy of an experiment tag in the consistent experiment collection (search filters and returns tags)",
        attributes=("experiment_id", "key", "value"),
    ),
    _e(
        "run", EXP, "R#{run_id}", "Run metadata (info)",
        indexes={
            "gsi1": ("RUN#{run_id}", "EXP#{experiment_id}"),
            "lsi1": (None, "R#{lifecycle_stage}#{start_time:i64}#{run_id}"),
            "lsi2": (None, "R#{start_time:i64}#{run_id}"),
            "lsi3": (None, "R#{status}#{start_time:i64}#{run_id}"),
            "lsi4": (None, "R#{run_name:str}{run_id}"),
            "lsi5": (None, "U#{last_update_time:i64}#R#{run_id}"),
        },
        attributes=("run_id", "experiment_id", "run_name", "user_id", "status", "start_time", "end_time", "artifact_uri", "lifecycle_stage", "deleted_time", "last_update_time"),
    ),
    _e(
        "run_locator", "RUN#{run_id}", "RUN",
        "Run id -> experiment id, read strongly consistent (a GSI could lag right after create_run)",
        attributes=("experiment_id",),
    ),
    _e(
        "latest_metric", EXP, "R#{run_id}#M#{key:str}", "Latest value of a run's metric (max step, then timestamp, then value)",
        indexes={"lsi5": (None, "U#{changed_at:i64}#M#{run_id}")},
        # rank = int64(step) + int64(timestamp) + float64(value as SQL compares it): one string, so a
        # condition `rank < :new` keeps MLflow's rule under concurrent writers.
        attributes=("key", "value", "timestamp", "step", "is_nan", "rank", "changed_at"),
    ),
    _e(
        # Ordered as MLflow answers get-history (timestamp, step, value): pages are key ranges.
        # value in the key is the SQL identity (+-inf as +-1.797e308, NaN distinct from 0).
        "metric_history", EXP, "H#{run_id}#{key:str}{timestamp:i64}#{step:i64}#{value:f64}",
        "One logged metric point; identical re-logs land on the same key (idempotent)",
        attributes=("key", "value", "timestamp", "step", "is_nan"),
    ),
    _e(
        "param", EXP, "R#{run_id}#P#{key:str}", "Run parameter (immutable once logged)",
        indexes={"lsi5": (None, "U#{changed_at:i64}#P#{run_id}")},
        attributes=("key", "value"),
    ),
    _e(
        "run_tag", EXP, "R#{run_id}#T#{key:str}", "Run tag",
        # lsi5: "not yet indexed" flag for the tag_rank item (writers pass changed_at=<now ms>).
        indexes={"lsi5": (None, "U#{changed_at:i64}#T#{run_id}")},
        attributes=("key", "value"),
    ),
    _e(
        "run_input", EXP, "R#{run_id}#I#{dataset_name:str}{dataset_digest:str}",
        "Dataset input of a run (dataset fields copied so get_run stays one query, input tags)",
        attributes=("dataset", "tags"),
    ),
    _e(
        "run_input_part", EXP, "R#{run_id}#I#{dataset_name:str}{dataset_digest:str}#C{part:i64}",
        "Slice of a large dataset schema/profile of a run input (items stay < 400 KB)",
        attributes=("field", "data"),
    ),
    _e("run_model_input", EXP, "R#{run_id}#N#{model_id}", "Logged model input of a run", attributes=("model_id",)),
    _e("run_output", EXP, "R#{run_id}#O#{model_id}", "Logged model output of a run", attributes=("model_id", "step")),
    _e(
        "dataset", EXP, "D#{dataset_name:str}{dataset_digest:str}",
        "Dataset logged in an experiment: the first logged copy wins, as in MLflow's datasets table",
        attributes=("name", "digest", "source_type", "source", "schema", "profile"),
    ),
    _e(
        "dataset_part", EXP, "D#{dataset_name:str}{dataset_digest:str}#C{part:i64}",
        "Slice of a large dataset schema/profile (items stay < 400 KB)",
        attributes=("field", "data"),
    ),
    _e(
        "dataset_link", EXP, "DLINK#{dataset_name:str}{dataset_digest:str}{run_id}", "Run that used a dataset (search by datasets.*)",
        attributes=("run_id", "context"),
    ),
    _e(
        "logged_model", EXP, "L#{model_id}", "Logged model (MLflow 3)",
        indexes={
            "gsi1": ("LM#{model_id}", "EXP#{experiment_id}"),
            "lsi2": (None, "L#{creation_timestamp:i64}#{model_id}"),
        },
        attributes=("model_id", "experiment_id", "name", "artifact_location", "creation_timestamp", "last_updated_timestamp", "status", "model_type", "source_run_id", "status_message", "lifecycle_stage"),
    ),
    _e("logged_model_locator", "LM#{model_id}", "LM", "Logged model id -> experiment id", attributes=("experiment_id",)),
    _e("logged_model_tag", EXP, "L#{model_id}#T#{key:str}", "Logged model tag", attributes=("key", "value")),
    _e("logged_model_param", EXP, "L#{model_id}#P#{key:str}", "Logged model parameter", attributes=("key", "value")),
    _e(
        "logged_model_metric", EXP, "L#{model_id}#M#{key:str}{step:i64}#{timestamp:i64}#{run_id}",
        "Metric logged against a logged model", attributes=("key", "value", "timestamp", "step", "run_id", "dataset_name", "dataset_digest"),
    ),
    _e(
        # The whole trace info in one item: tags, metadata and assessments are maps inside it, so get,
        # batchGet and every search page read each trace once (lsi2/lsi4 project ALL). An assessment or
        # tag that would push it past 400 KB is refused (UpdateItem is atomic: nothing half-written).
        "trace", EXP, "T#{trace_id}", "Trace info (v3) with its tags, metadata and assessments",
        indexes={
            "gsi1": ("TRACE#{trace_id}", "EXP#{experiment_id}"),
            "lsi2": (None, "T#{request_time:i64}#{trace_id}"),
            # Status filters read one state's traces, newest first.
            "lsi3": (None, "T#{state}#{request_time:i64}#{trace_id}"),
            # Only traces with a name (mlflow.traceName tag) carry lsi4sk: name filters read just them.
            "lsi4": (None, "T#{trace_name:str}{trace_id}"),
            # "name not yet indexed" flag for trace-name FTS (the indexer removes it); writers pass changed_at.
            "lsi5": (None, "U#{changed_at:i64}#T#{trace_id}"),
        },
        attributes=(
            "trace_id", "experiment_id", "request_time", "execution_duration", "state", "request_preview",
            "response_preview", "client_request_id", "trace_name", "trace_metadata", "tags", "assessments",
            "linked_runs",
        ),
        expires=True,
    ),
    _e(
        "trace_locator", "TRACE#{trace_id}", "TRACE",
        "Trace id -> experiment id; span_ids (a string set, so re-sent spans count once) and expected_spans "
        "(from the client's size stats) tell whether every span is stored",
        attributes=("experiment_id", "span_ids", "expected_spans"),
        expires=True,
    ),
    _e(
        "trace_spans", EXP, "T#{trace_id}#S#{span_id}",
        "One span as its OTLP protobuf bytes (a span over the item limit is spilled to S3: spill_key)",
        attributes=("span", "spill_key", "start_time_unix_nano"),
        expires=True,
    ),
    # --- GenAI evaluation: datasets and scorers ---------------------------------------------
    _e(
        "evaluation_dataset", "EDSLIST#{workspace}", "DS#{dataset_id}",
        "Evaluation dataset with its tags map, schema, profile and record count, in the workspace's strongly consistent "
        "collection (get is a GetItem, search without experiment ids one Query); rev guards read-modify-write updates",
        attributes=(
            "dataset_id", "name", "digest", "created_time", "last_update_time", "created_by", "last_updated_by", "tags",
            "schema", "profile", "num_records", "rev", "workspace", "deleting",
        ),
    ),
    _e(
        "evaluation_dataset_experiment", EDS, "X#{experiment_id}", "Experiment a dataset is associated with (dataset side)",
        attributes=("experiment_id", "created_time"),
    ),
    _e(
        "experiment_evaluation_dataset", EXP, "EVDS#{dataset_id}", "Dataset associated with an experiment (search by experiment ids)",
        attributes=("dataset_id",),
    ),
    _e(
        # Keyed by MLflow's record identity (sha256 of the sorted-key inputs JSON): an upsert finds its record by key.
        "evaluation_dataset_record", EDS, "R#{input_hash}",
        "Dataset record (inputs/outputs/expectations/tags/source as one JSON document); lsi2 orders records as MLflow pages them",
        indexes={"lsi2": (None, "DR#{created_time:i64}#{dataset_record_id}")},
        attributes=(
            "dataset_record_id", "input_hash", "data", "parts", "parts_id", "source_id", "source_type", "created_time", "last_update_time",
            "created_by", "last_updated_by", "rev",
        ),
    ),
    _e(
        "evaluation_dataset_record_part", EDS, "R#{input_hash}#P{parts_id}#C{part:i64}",
        "Slice of a large record document (items stay < 400 KB); parts_id names one write's set, so a concurrent "
        "writer never overwrites the parts a committed record points to", attributes=("data",),
    ),
    _e(
        "evaluation_dataset_record_id", EDS, "RID#{dataset_record_id}", "Record id -> input hash (delete records by id)",
        attributes=("input_hash",),
    ),
    _e(
        "scorer", EXP, "SC#{name:str}", "Registered scorer: name -> scorer id (MLflow's scorers row)",
        attributes=("scorer_id", "name", "experiment_id"),
    ),
    _e(
        "scorer_version", EXP, "SC#{name:str}V#{version:ver}",
        "Registered scorer version (serialized scorer); version = latest + 1, claimed with a condition",
        attributes=("scorer_id", "name", "experiment_id", "version", "serialized_scorer", "creation_time"),
    ),
    _e(
        "online_scoring_config", "SCORER#{scorer_id}", "OSC",
        "Online scoring configuration of a scorer (one per scorer id; read by id in batches)",
        attributes=("online_scoring_config_id", "scorer_id", "sample_rate", "experiment_id", "filter_string"),
    ),
    # --- derived items, written only by the stream indexer ----------------------------------
    _e(
        "metric_rank", EXP, "RANK#m#{key:str}{value:f64}#{run_id}", "A run's latest metric value, in value order",
        attributes=("run_id", "key", "value"), derived=True,
    ),
    _e(
        # value_key is keys.text(value, 300) so key + value + run id stay under DynamoDB's 1024-byte sort key.
        "param_rank", EXP, "RANK#p#{key:str}{value_key}{run_id}", "A run's param value, in value order",
        attributes=("run_id", "key", "value"), derived=True,
    ),
    _e(
        # Same value_key as param_rank: filters `tags.k = 'v'` / `LIKE 'v%'` read one key range.
        "tag_rank", EXP, "RANK#t#{key:str}{value_key}{run_id}", "A run's tag value, in value order",
        attributes=("run_id", "key", "value"), derived=True,
    ),
    _e(
        "fts_forward", "{scope}", "FTS#{level}#{token:str}{entity_kind}#{entity_id:str}",
        "Token -> entity posting (scope: EXP#<id> for runs/traces, EXPLIST#<ws> for experiments, RMFTS#<ws> for models)",
        indexes={"gsi2": ("FTS#{token:str}", "{level}#{entity_kind}#{scope}#{entity_id:str}")},
        attributes=("entity_kind", "entity_id", "token", "level"), derived=True,
    ),
    _e(
        "fts_reverse", "{scope}", "FTS_REV#{entity_kind}#{entity_id:str}{level}#{token:str}",
        "Entity -> token, to find and remove stale postings", attributes=("entity_kind", "entity_id", "token", "level"), derived=True,
    ),
    # --- model registry partition -----------------------------------------------------------
    _e(
        "registered_model", RM, "M#META",
        "Registered model; next_version allocates version numbers; rename/delete markers make those resumable",
        # No GSI: the model list is the strongly consistent registered_model_entry collection, and a
        # GSI key on last_updated_timestamp would cost two index writes per version created.
        attributes=(
            "name", "description", "creation_timestamp", "last_updated_timestamp", "next_version", "workspace",
            "is_prompt", "renaming_to", "renaming_from", "renamed_at", "deleting",
        ),
    ),
    _e(
        "registered_model_entry", "RMLIST#{workspace}", "{model_name:str}",
        "Name-ordered, strongly consistent list of registered models (search reads it with ConsistentRead)",
        # lsi5: "name not yet indexed" flag for the FTS indexer; writers pass changed_at=<now ms>.
        indexes={"lsi5": (None, "U#{changed_at:i64}#M")},
        attributes=("name", "is_prompt"),
    ),
    _e(
        "model_version", RM, "M#V#{version:ver}", "Model version, sorted numerically by zero-padded version",
        indexes={
            "gsi3": ("MVRUN#{run_id}", "{model_name:str}{version:ver}"),
            # Latest version of each stage: one consistent LSI query per stage (descending, limit 1).
            "lsi3": (None, "MV#{current_stage}#{version:ver}"),
        },
        attributes=("name", "version", "creation_timestamp", "last_updated_timestamp", "description", "user_id", "current_stage", "source", "run_id", "run_link", "status", "status_message", "storage_location", "model_id", "deleting"),
    ),
    _e("model_version_tag", RM, "M#V#{version:ver}#T#{key:str}", "Model version tag", attributes=("key", "value")),
    _e("registered_model_tag", RM, "M#TAG#{key:str}", "Registered model tag", attributes=("key", "value")),
    _e("model_alias", RM, "M#ALIAS#{alias:str}", "Alias -> version", attributes=("alias", "version")),
    # --- AI gateway configuration (one small partition per workspace) ---------------------------
    _e(
        "gateway_secret", GW, "S#{secret_id}",
        "Gateway secret: the value KMS-encrypted (ciphertext only, bound to secret_id and secret_name), its mask and metadata",
        attributes=(
            "secret_id", "secret_name", "ciphertext", "masked_value", "provider", "auth_config",
            "created_at", "last_updated_at", "created_by", "last_updated_by",
        ),
    ),
    _e("gateway_secret_name", GW, "SN#{secret_name:str}", "Secret name claim: unique per workspace", attributes=("secret_id",)),
    _e(
        "gateway_model_definition", GW, "D#{model_definition_id}",
        "Gateway model definition (provider, model name, secret); endpoint_count guards deletes while attached",
        attributes=(
            "model_definition_id", "name", "secret_id", "provider", "model_name", "endpoint_count",
            "created_at", "last_updated_at", "created_by", "last_updated_by",
        ),
    ),
    _e("gateway_model_definition_name", GW, "DN#{name:str}", "Model definition name claim: unique per workspace", attributes=("model_definition_id",)),
    _e(
        "gateway_endpoint", GW, "E#{endpoint_id}",
        "Gateway endpoint; its model mappings, tags and bindings follow under the same sort-key prefix",
        attributes=(
            "endpoint_id", "name", "routing_strategy", "fallback_config", "experiment_id", "usage_tracking",
            "created_at", "last_updated_at", "created_by", "last_updated_by",
        ),
    ),
    _e("gateway_endpoint_name", GW, "EN#{name:str}", "Endpoint name claim: unique per workspace", attributes=("endpoint_id",)),
    _e(
        "gateway_endpoint_mapping", GW, "E#{endpoint_id}#M#{model_definition_id}#{linkage_type}",
        "A model definition attached to an endpoint (one per definition and linkage type)",
        attributes=("mapping_id", "endpoint_id", "model_definition_id", "weight", "linkage_type", "fallback_order", "position", "created_at", "created_by"),
    ),
    _e("gateway_endpoint_tag", GW, "E#{endpoint_id}#T#{key:str}", "Endpoint tag", attributes=("key", "value")),
    _e(
        "gateway_endpoint_binding", GW, "E#{endpoint_id}#B#{resource_type:str}#{resource_id:str}",
        "An MLflow resource (e.g. a scorer) bound to an endpoint",
        attributes=("endpoint_id", "resource_type", "resource_id", "created_at", "last_updated_at", "created_by", "last_updated_by"),
    ),
    # --- workspaces, auth, config -----------------------------------------------------------
    _e("workspace", "WORKSPACE#{workspace}", "WS#META", "Workspace", attributes=("name", "description", "default_artifact_root")),
    _e("user", "USER#{username:str}", "U#META", "User credentials (salted scrypt hash)", attributes=("username", "user_id", "password_hash", "is_admin")),
    _e("user_entry", "USERLIST", "U#{username:str}", "Collection of user names (list users without a Scan)", attributes=("username",)),
    # Grants (MLflow's per-user permissions). The resource id is a user string ("*" for a grant on every
    # resource of the kind), so it is encoded like any name; gsi4 lists a resource's grants for rename/delete.
    _e(
        "experiment_permission", "USER#{username:str}", "U#PERM#{experiment_id:str}", "User permission on an experiment (or \"*\")",
        indexes={"gsi4": ("EXPPERM#{experiment_id:str}", "USER#{username:str}")}, attributes=("username", "resource_id", "permission"),
    ),
    _e(
        "registered_model_permission", "USER#{username:str}", "U#RPERM#{model_name:str}", "User permission on a registered model (or \"*\")",
        indexes={"gsi4": ("RMPERM#{model_name:str}", "USER#{username:str}")}, attributes=("username", "resource_id", "permission"),
    ),
    _e(
        "prompt_permission", "USER#{username:str}", "U#PPERM#{model_name:str}", "User permission on a prompt (or \"*\")",
        indexes={"gsi4": ("PPERM#{model_name:str}", "USER#{username:str}")}, attributes=("username", "resource_id", "permission"),
    ),
    _e("config", "CONFIG", "CFG#{key}", "Configuration value, counters and indexer watermarks", attributes=("value",)),
    _e(
        "idempotency", "IDEMPOTENCY#{request_hash}", "IDEM", "Answer of a non-idempotent create, replayed for retries",
        attributes=("response",), expires=True,
    ),
)

ENTITY: dict[str, Entity] = {entity.name: entity for entity in ENTITIES}


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
