"""The access-pattern catalog, as data: every way a request path touches the table.

Each pattern names the entity it reads or writes (from ``schema.ENTITIES``), the DynamoDB operation,
the table or named index it uses, and its key condition. ``seed`` gives the pattern's name on the
seeds' access-pattern page where it has one, so the catalog can be checked against that page.
``docs/access-patterns.md`` is generated from this module; there is no Scan anywhere.
"""

from __future__ import annotations

from dataclasses import dataclass

GET = "GetItem"
QUERY = "Query"
PUT = "PutItem"
UPDATE = "UpdateItem"
DELETE = "DeleteItem"
BATCH_GET = "BatchGetItem"
BATCH_WRITE = "BatchWriteItem"
TRANSACT = "TransactWriteItems"
OPERATIONS = (GET, QUERY, PUT, UPDATE, DELETE, BATCH_GET, BATCH_WRITE, TRANSACT)


@dataclass(frozen=True)
class AccessPattern:
    area: str
    name: str
    entities: tuple[str, ...]
    operation: str
    index: str  # "table" or an index name from schema.INDEXES
    key_condition: str
    seed: str | None = None
    note: str = ""


def _p(area: str, name: str, entities: str, operation: str, index: str, key_condition: str, seed: str | None = None, note: str = "") -> AccessPattern:
    return AccessPattern(area, name, tuple(entities.split()), operation, index, key_condition, seed, note)


PATTERNS: tuple[AccessPattern, ...] = (
    # --- experiments ------------------------------------------------------------------------
    _p("Experiments", "Get experiment by ID (with tags)", "experiment experiment_tag", QUERY, "table",
       "pk = EXP#<id> AND begins_with(sk, 'E#')", seed="Get experiment by ID", note="one consistent query returns E#META and every E#TAG#"),
    _p("Experiments", "Get experiment by name", "experiment_name", GET, "table",
       "pk = EXPNAME#<ws>#<name> AND sk = EXPNAME", seed="Get experiment by name",
       note="the name-claim item replaces a GSI3 lookup: strongly consistent right after create"),
    _p("Experiments", "List experiments in workspace", "experiment", QUERY, "gsi2",
       "gsi2pk = WS#<ws>#EXP", seed="List experiments in workspace"),
    _p("Experiments", "List experiments by name", "experiment", QUERY, "gsi5",
       "gsi5pk = WS#<ws>#EXPNAME (ordered by name)", seed="List experiments by name"),
    _p("Experiments", "Search experiments (consistent collection)", "experiment_entry experiment_entry_tag", QUERY, "table",
       "pk = EXPLIST#<ws> AND begins_with(sk, 'E#')",
       note="strongly consistent: sees a create/rename/delete/tag made by the previous request (gsi2 may lag)"),
    _p("Experiments", "Allocate experiment id", "config", UPDATE, "table",
       "pk = CONFIG AND sk = CFG#seq#experiment (ADD 1)"),
    _p("Experiments", "Create experiment", "experiment experiment_name experiment_tag", TRANSACT, "table",
       "Put EXPNAME claim IF attribute_not_exists(pk) + Put E#META + Put E#TAG#*", seed="Create experiment",
       note="name uniqueness is a condition on the claim item, never read-then-write"),
    _p("Experiments", "Rename experiment", "experiment experiment_name", TRANSACT, "table",
       "Delete old claim + Put new claim IF attribute_not_exists(pk) + Update E#META"),
    _p("Experiments", "Delete/restore experiment", "experiment", UPDATE, "table",
       "pk = EXP#<id> AND sk = E#META (lifecycle_stage)", seed="Delete/restore experiment"),
    _p("Experiments", "Set experiment tag", "experiment_tag", PUT, "table",
       "pk = EXP#<id> AND sk = E#TAG#<key>", seed="Set experiment tag"),
    _p("Experiments", "Delete experiment tag", "experiment_tag", DELETE, "table", "pk = EXP#<id> AND sk = E#TAG#<key>"),
    _p("Experiments", "Search experiments by name substring (FTS)", "fts_forward", QUERY, "table",
       "pk = EXPLIST#<ws> AND begins_with(sk, 'FTS#3#<trigram>')", seed="Search experiments (FTS)",
       note="one query per trigram, read round-robin until the shortest list ends; + LSI5 unindexed entries; exact match after"),
    # --- runs ---------------------------------------------------------------------------------
    _p("Runs", "Locate run (run id -> experiment)", "run_locator", GET, "table", "pk = RUN#<run_id> AND sk = RUN",
       seed="Get run by ID", note="replaces the GSI1 hop: consistent right after create_run, cached in warm Lambdas"),
    _p("Runs", "Get run with its data", "run latest_metric param run_tag run_input run_output", QUERY, "table",
       "pk = EXP#<id> AND begins_with(sk, 'R#<run_id>')", seed="Get run by ID"),
    _p("Runs", "Reverse lookup run -> experiment (admin)", "run", QUERY, "gsi1", "gsi1pk = RUN#<run_id>"),
    _p("Runs", "List runs in experiment (with data)", "run latest_metric param run_tag run_input", QUERY, "table",
       "pk = EXP#<id> AND begins_with(sk, 'R#')", seed="List runs in experiment"),
    _p("Runs", "Filter runs by lifecycle, by start time", "run", QUERY, "lsi1",
       "pk = EXP#<id> AND begins_with(lsi1sk, 'R#<stage>#')", seed="Filter runs by lifecycle"),
    _p("Runs", "Sort runs by start time", "run", QUERY, "lsi2", "pk = EXP#<id> AND begins_with(lsi2sk, 'R#')",
       seed="Sort runs by start time"),
    _p("Runs", "Filter runs by status", "run", QUERY, "lsi3", "pk = EXP#<id> AND begins_with(lsi3sk, 'R#<status>#')",
       seed="Filter runs by status"),
    _p("Runs", "Sort runs by name", "run", QUERY, "lsi4", "pk = EXP#<id> AND begins_with(lsi4sk, 'R#')", seed="Sort runs by name"),
    _p("Runs", "Sources not yet indexed", "run latest_metric param run_tag experiment_entry registered_model_entry", QUERY, "lsi5",
       "pk = <partition> AND begins_with(lsi5sk, 'U#')", seed="Sort runs by metric",
       note="the seed's metric LSI is served by RANK items; LSI5 holds sources the indexer has not processed yet"),
    _p("Runs", "Create run", "run run_locator run_tag", TRANSACT, "table",
       "Put R#<run_id> + Put RUN#<run_id> locator + Put R#<run_id>#T#*", seed="Create run"),
    _p("Runs", "Update run info", "run", UPDATE, "table", "pk = EXP#<id> AND sk = R#<run_id>", seed="Update run info"),
    _p("Runs", "Delete/restore run", "run", UPDATE, "table", "pk = EXP#<id> AND sk = R#<run_id> (lifecycle_stage)",
       seed="Delete/restore run"),
    # --- run data ---------------------------------------------------------------------------
    _p("Run data", "Log metric (latest value)", "latest_metric", TRANSACT, "table",
       "Update R#<run>#M#<key> IF newer (step, timestamp, value)", seed="Log metric",
       note="conditional, so concurrent writers keep MLflow's latest-metric rule"),
    _p("Run data", "Log metric history", "metric_history", BATCH_WRITE, "table",
       "Put H#<run>#<key><ts>#<step>#<value>", seed="Log metric history",
       note="identical re-logs land on the same key; key order is get-history's order (timestamp, step, value)"),
    _p("Run data", "Get metric history", "metric_history", QUERY, "table",
       "pk = EXP#<id> AND begins_with(sk, 'H#<run>#<key>')", seed="Get metric history"),
    _p("Run data", "Log param", "param", TRANSACT, "table",
       "Put R#<run>#P#<key> IF attribute_not_exists(pk) OR value = :same", seed="Log param", note="params are immutable"),
    _p("Run data", "Get all params for run", "param", QUERY, "table",
       "pk = EXP#<id> AND begins_with(sk, 'R#<run>#P#')", seed="Get all params for run"),
    _p("Run data", "Set run tag", "run_tag", PUT, "table", "pk = EXP#<id> AND sk = R#<run>#T#<key>", seed="Set run tag"),
    _p("Run data", "Get all tags for run", "run_tag", QUERY, "table",
       "pk = EXP#<id> AND begins_with(sk, 'R#<run>#T#')", seed="Get all tags for run"),
    _p("Run data", "Log batch (metrics + params + tags)", "metric_history latest_metric param run_tag", BATCH_WRITE, "table",
       "history and tags in batches of 25; params and latest metrics in conditional transactions",
       seed="Log batch (metrics + params + tags)"),
    # --- search and ranking ------------------------------------------------------------------
    _p("Search and ranking", "Search runs by metric value", "metric_rank", QUERY, "table",
       "pk = EXP#<id> AND begins_with(sk, 'RANK#m#<key>')", seed="Search runs by metric value"),
    _p("Search and ranking", "Search runs by param value", "param_rank", QUERY, "table",
       "pk = EXP#<id> AND begins_with(sk, 'RANK#p#<key>')", seed="Search runs by param value"),
    _p("Search and ranking", "Filter runs by metric range", "metric_rank", QUERY, "table",
       "pk = EXP#<id> AND sk BETWEEN 'RANK#m#<key><low>' AND 'RANK#m#<key><high>#~'",
       note="`metrics.k < / <= / > / >= / = x`: candidates, then MLflow's exact filter"),
    _p("Search and ranking", "Filter runs by param or tag value / prefix", "param_rank tag_rank", QUERY, "table",
       "pk = EXP#<id> AND begins_with(sk, 'RANK#p#<key><value>') (tags: RANK#t#)",
       note="`params.k = 'v'`, `LIKE 'v%'` (case-sensitive); the smallest range drives an AND"),
    _p("Search and ranking", "Read filter candidates", "run latest_metric param run_tag", BATCH_GET, "table",
       "R#<run_id> + R#<run_id>#M|P|T#<key> for each key the filter and order read",
       note="only candidates; each returned run's data is then one Query"),
    _p("Search and ranking", "Full-text search (forward)", "fts_forward", QUERY, "table",
       "pk = <scope> AND begins_with(sk, 'FTS#<level>#<token>')", seed="Full-text search (forward)"),
    _p("Search and ranking", "Full-text search (global)", "fts_forward", QUERY, "gsi2", "gsi2pk = FTS#<token>",
       seed="Full-text search (global)"),
    _p("Search and ranking", "FTS index cleanup", "fts_reverse fts_forward", QUERY, "table",
       "pk = <scope> AND begins_with(sk, 'FTS_REV#<kind>#<id>')", seed="FTS index cleanup",
       note="followed by BatchWriteItem deletes (indexer only)"),
    # --- traces ---------------------------------------------------------------------------------
    _p("Traces", "Get trace by ID", "trace_locator trace", GET, "table", "pk = TRACE#<trace_id> AND sk = TRACE, then pk = EXP#<id> AND sk = T#<trace_id>",
       seed="Get trace by ID"),
    _p("Traces", "List traces in experiment", "trace trace_tag", QUERY, "table", "pk = EXP#<id> AND begins_with(sk, 'T#')",
       seed="List traces in experiment"),
    _p("Traces", "Sort traces by time", "trace", QUERY, "lsi2", "pk = EXP#<id> AND begins_with(lsi2sk, 'T#')", seed="Sort traces by time"),
    _p("Traces", "Sort traces by name", "trace", QUERY, "lsi4", "pk = EXP#<id> AND begins_with(lsi4sk, 'T#')", seed="Sort traces by name"),
    _p("Traces", "Set trace tag", "trace_tag", PUT, "table", "pk = EXP#<id> AND sk = T#<trace_id>#T#<key>", seed="Set trace tag"),
    _p("Traces", "Get trace spans", "trace_spans", GET, "table", "pk = EXP#<id> AND sk = T#<trace_id>#SPANS", seed="Get trace spans"),
    _p("Traces", "Create trace + spans", "trace trace_locator trace_spans", TRANSACT, "table",
       "Put T#<trace_id> + Put TRACE#<trace_id> + Put T#<trace_id>#SPANS", seed="Create trace + spans"),
    # --- datasets -----------------------------------------------------------------------------
    _p("Datasets", "Create dataset", "dataset", PUT, "table", "pk = EXP#<id> AND sk = D#<name><digest> IF attribute_not_exists(pk)",
       seed="Create dataset", note="the experiment's first copy of a (name, digest) wins, as in MLflow's datasets table"),
    _p("Datasets", "Get dataset", "dataset", GET, "table", "pk = EXP#<id> AND sk = D#<name><digest>", seed="Get dataset"),
    _p("Datasets", "Link dataset to run", "run_input run_input_part", PUT, "table",
       "Put R#<run>#I#<name><digest> IF attribute_not_exists(pk) (large schema/profile: R#<run>#I#<name><digest>#C<n> parts first)",
       seed="Link dataset to run", note="the run keeps a copy of the dataset so get_run and search stay one query per run"),
    _p("Datasets", "List datasets for run", "run_input", QUERY, "table", "pk = EXP#<id> AND begins_with(sk, 'R#<run>#I#')",
       seed="List datasets for run", note="read together with the run (same prefix)"),
    # --- logged models ------------------------------------------------------------------------
    _p("Logged models", "Log model to run (outputs)", "run_output", PUT, "table", "pk = EXP#<id> AND sk = R#<run>#O#<model_id>",
       seed="Log model to run"),
    _p("Logged models", "List logged models for run", "run_output", QUERY, "table", "pk = EXP#<id> AND begins_with(sk, 'R#<run>#O#')",
       seed="List logged models for run"),
    _p("Logged models", "Locate logged model", "logged_model_locator", GET, "table", "pk = LM#<model_id> AND sk = LM"),
    _p("Logged models", "Get logged model with tags/params/metrics", "logged_model logged_model_tag logged_model_param logged_model_metric", QUERY, "table",
       "pk = EXP#<id> AND begins_with(sk, 'L#<model_id>')"),
    _p("Logged models", "Create logged model", "logged_model logged_model_locator logged_model_tag logged_model_param", TRANSACT, "table",
       "Put L#<model_id> + Put LM#<model_id> + tags/params"),
    _p("Logged models", "List logged models in experiment", "logged_model", QUERY, "lsi2", "pk = EXP#<id> AND begins_with(lsi2sk, 'L#')"),
    # --- model registry -------------------------------------------------------------------------
    _p("Model registry", "Create registered model", "registered_model registered_model_tag", TRANSACT, "table",
       "Put M#META IF attribute_not_exists(pk) + tags", seed="Create registered model"),
    _p("Model registry", "Get registered model", "registered_model registered_model_tag model_alias", QUERY, "table",
       "pk = RM#<name> AND begins_with(sk, 'M#')", seed="Get registered model"),
    _p("Model registry", "Get model by name", "registered_model", GET, "table", "pk = RM#<name> AND sk = M#META",
       seed="Get model by name", note="the name is the partition key: no GSI3 hop"),
    _p("Model registry", "List registered models", "registered_model_entry", QUERY, "table", "pk = RMLIST#<ws> (ordered by name, ConsistentRead)",
       seed="List registered models", note="a consistent collection instead of the seed's GSI5: lists a model right after its create"),
    _p("Model registry", "Create model version", "registered_model model_version model_version_tag", TRANSACT, "table",
       "Update M#META next_version IF = :expected + Put M#V#<padded version>", seed="Create model version",
       note="atomic version allocation"),
    _p("Model registry", "Get model version", "model_version model_version_tag", QUERY, "table",
       "pk = RM#<name> AND begins_with(sk, 'M#V#<padded version>')", seed="Get model version"),
    _p("Model registry", "List model versions", "model_version", QUERY, "table", "pk = RM#<name> AND begins_with(sk, 'M#V#')",
       seed="List model versions"),
    _p("Model registry", "Model versions by run", "model_version", QUERY, "gsi3", "gsi3pk = MVRUN#<run_id>"),
    _p("Model registry", "Set model tag", "registered_model_tag", PUT, "table", "pk = RM#<name> AND sk = M#TAG#<key>", seed="Set model tag"),
    _p("Model registry", "Set model alias", "model_alias", PUT, "table", "pk = RM#<name> AND sk = M#ALIAS#<alias>", seed="Set model alias"),
    _p("Model registry", "Get model by alias", "model_alias", GET, "table", "pk = RM#<name> AND sk = M#ALIAS#<alias>", seed="Get model by alias"),
    _p("Model registry", "Rename / delete registered model", "registered_model model_version model_version_tag registered_model_tag model_alias", BATCH_WRITE, "table",
       "copy/delete every item of pk = RM#<name>, resumable through markers on M#META"),
    # --- auth, workspaces, config ---------------------------------------------------------------
    _p("Authentication and authorization", "Create user", "user", PUT, "table", "pk = USER#<username> AND sk = U#META IF attribute_not_exists(pk)",
       seed="Create user"),
    _p("Authentication and authorization", "Get user", "user", GET, "table", "pk = USER#<username> AND sk = U#META", seed="Get user"),
    _p("Authentication and authorization", "Authenticate user", "user", GET, "table", "pk = USER#<username> AND sk = U#META",
       seed="Authenticate user", note="then a password-hash comparison"),
    _p("Authentication and authorization", "Grant experiment permission", "experiment_permission", PUT, "table",
       "pk = USER#<username> AND sk = U#PERM#<experiment_id>", seed="Grant experiment permission"),
    _p("Authentication and authorization", "Check experiment permission", "experiment_permission", GET, "table",
       "pk = USER#<username> AND sk = U#PERM#<experiment_id>", seed="Check experiment permission"),
    _p("Authentication and authorization", "List permissions for experiment", "experiment_permission", QUERY, "gsi4",
       "gsi4pk = EXPPERM#<experiment_id>", seed="List permissions for experiment"),
    _p("Authentication and authorization", "Grant registry permission", "registered_model_permission", PUT, "table",
       "pk = USER#<username> AND sk = U#RPERM#<model_name>", seed="Grant registry permission"),
    _p("Authentication and authorization", "Check registry permission", "registered_model_permission", GET, "table",
       "pk = USER#<username> AND sk = U#RPERM#<model_name>", seed="Check registry permission"),
    _p("Authentication and authorization", "List permissions for model", "registered_model_permission", QUERY, "gsi4",
       "gsi4pk = RMPERM#<model_name>", seed="List permissions for model"),
    _p("Workspace", "Get workspace", "workspace", GET, "table", "pk = WORKSPACE#<name> AND sk = WS#META", seed="Get workspace"),
    _p("Workspace", "Create/update workspace", "workspace", PUT, "table", "pk = WORKSPACE#<name> AND sk = WS#META", seed="Create/update workspace"),
    _p("Configuration", "Get config value", "config", GET, "table", "pk = CONFIG AND sk = CFG#<key>", seed="Get config value"),
    _p("Configuration", "Set config value", "config", PUT, "table", "pk = CONFIG AND sk = CFG#<key>", seed="Set config value"),
    _p("Configuration", "List all config", "config", QUERY, "table", "pk = CONFIG AND begins_with(sk, 'CFG#')", seed="List all config"),
)

# The pattern names on the seeds' access-pattern page; each must be served by a catalog entry.
SEED_PATTERNS: tuple[str, ...] = (
    "Get experiment by ID", "Get experiment by name", "List experiments in workspace", "List experiments by name",
    "Create experiment", "Delete/restore experiment", "Set experiment tag", "Search experiments (FTS)",
    "Get run by ID", "List runs in experiment", "Filter runs by lifecycle", "Sort runs by start time",
    "Filter runs by status", "Sort runs by name", "Sort runs by metric", "Create run", "Update run info",
    "Delete/restore run", "Log metric", "Log metric history", "Get metric history", "Log param",
    "Get all params for run", "Set run tag", "Get all tags for run", "Log batch (metrics + params + tags)",
    "Search runs by metric value", "Search runs by param value", "Full-text search (forward)",
    "Full-text search (global)", "FTS index cleanup", "Get trace by ID", "List traces in experiment",
    "Sort traces by time", "Sort traces by name", "Set trace tag", "Get trace spans", "Create trace + spans",
    "Create dataset", "Get dataset", "Link dataset to run", "List datasets for run", "Log model to run",
    "List logged models for run", "Create registered model", "Get registered model", "Get model by name",
    "List registered models", "Create model version", "Get model version", "List model versions", "Set model tag",
    "Set model alias", "Get model by alias", "Create user", "Get user", "Authenticate user",
    "Grant experiment permission", "Check experiment permission", "List permissions for experiment",
    "Grant registry permission", "Check registry permission", "List permissions for model", "Get workspace",
    "Create/update workspace", "Get config value", "Set config value", "List all config",
)
