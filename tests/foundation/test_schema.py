"""The schema as data: keys, indexes, adversarial names, the catalog and the generated docs."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from serverless_mlflow.storage import schema
from tools import catalog, gen_docs

ROOT = Path(__file__).resolve().parents[2]
NASTY_NAMES = ["plain", "a#b", "a#", "#", "R#x#P#y", "tag#with#hashes", "ünï", "名前", "a\x01", "a\x00b", "%_", " ", "a" * 600]


def test_five_gsis_and_five_lsis() -> None:
    kinds = [index.kind for index in schema.INDEXES]
    assert kinds.count("GSI") == 5 and kinds.count("LSI") == 5
    definition = schema.table_definition("t")
    assert len(definition["GlobalSecondaryIndexes"]) == 5
    assert len(definition["LocalSecondaryIndexes"]) == 5
    assert definition["StreamSpecification"]["StreamViewType"] == "NEW_AND_OLD_IMAGES"


def test_every_entity_has_unique_name_and_writes_entity_type() -> None:
    names = [entity.name for entity in schema.ENTITIES]
    assert len(names) == len(set(names))
    required = {
        "experiment",
        "experiment_tag",
        "run",
        "latest_metric",
        "metric_history",
        "param",
        "run_tag",
        "run_input",
        "logged_model",
        "trace",
        "trace_spans",
        "dataset",
        "dataset_link",
        "metric_rank",
        "param_rank",
        "fts_forward",
        "fts_reverse",
        "registered_model",
        "model_version",
        "registered_model_tag",
        "model_alias",
        "workspace",
        "user",
        "experiment_permission",
        "registered_model_permission",
        "config",
    }
    assert required <= set(names)
    item = schema.ENTITY["run_tag"].item({"key": "k", "value": "v"}, experiment_id="1", run_id="r", key="k")
    assert item[schema.ENTITY_TYPE] == "run_tag"


def test_index_keys_only_for_declared_indexes() -> None:
    for entity in schema.ENTITIES:
        for index_name in entity.indexes:
            assert index_name in schema.INDEX_BY_NAME


@pytest.mark.parametrize(
    "entity_name,field",
    [("param", "key"), ("run_tag", "key"), ("latest_metric", "key"), ("experiment_tag", "key"), ("registered_model_tag", "key")],
)
def test_user_strings_never_make_a_key_a_prefix_of_another(entity_name: str, field: str) -> None:
    entity = schema.ENTITY[entity_name]
    base = {"experiment_id": "7", "run_id": "0" * 32, "model_name": "m", "model_scope": "", "changed_at": 1}
    sks = {name: entity.key(**base, **{field: name})["sk"] for name in NASTY_NAMES}
    assert len(set(sks.values())) == len(NASTY_NAMES)
    for a, sk_a in sks.items():
        for b, sk_b in sks.items():
            if a != b:
                assert not sk_b.startswith(sk_a), (a, b)
        assert len(sk_a.encode()) <= 1024


def test_metric_history_prefix_of_one_key_never_matches_another() -> None:
    base = {"experiment_id": "1", "run_id": "f" * 32, "step": 0, "timestamp": 0, "value": 0.0}
    # Layout 2: one partition per run and key, distinct for every key.
    history = schema.ENTITY["metric_history"]
    partitions = {name: history.key(**base, key=name)["pk"] for name in NASTY_NAMES}
    assert len(set(partitions.values())) == len(NASTY_NAMES)
    # Layout 1 (read until migrated): one key's prefix never matches another's points.
    legacy = schema.LEGACY["metric_history"]
    prefix = legacy.sk_prefix(run_id=base["run_id"], key="a")
    for other in NASTY_NAMES:
        if other != "a":
            assert not legacy.key(**base, key=other)["sk"].startswith(prefix)
    assert legacy.key(**base, key="a")["sk"].startswith(prefix)


def test_model_names_with_separators_get_distinct_partitions() -> None:
    model = schema.ENTITY["registered_model"]
    pks = {name: model.key(model_name=name, model_scope="")["pk"] for name in NASTY_NAMES}
    assert len(set(pks.values())) == len(NASTY_NAMES)
    version = schema.ENTITY["model_version"]
    assert version.key(model_name="m", model_scope="", version=2)["sk"] < version.key(model_name="m", model_scope="", version=10)["sk"]


def test_model_partitions_per_workspace_keep_default_keys() -> None:
    """``default`` keeps the partition models always had (no migration); another workspace's model of the same
    name has its own, and no name in one workspace spells the key of a model of another."""
    model = schema.ENTITY["registered_model"]

    def pk(name: str, workspace: str) -> str:
        return model.key(model_name=name, model_scope=schema.model_scope(workspace))["pk"]

    assert pk("m", "default") == "RM#m\x01"
    assert pk("m", "team-a") != pk("m", "default")
    pks = {pk(name, workspace) for name in (*NASTY_NAMES, "m", "m\x01team-a") for workspace in ("default", "team-a", "team")}
    assert len(pks) == 3 * (len(NASTY_NAMES) + 2)
    assert model.parse_pk(pk("m", "team-a")) == {"model_name": "m", "model_scope": "team-a"}


def test_catalog_names_known_entities_operations_and_indexes() -> None:
    entity_names = {entity.name for entity in schema.ENTITIES}
    for pattern in catalog.PATTERNS:
        assert set(pattern.entities) <= entity_names, pattern
        assert pattern.operation in catalog.OPERATIONS, pattern
        assert pattern.index == "table" or pattern.index in schema.INDEX_BY_NAME, pattern
        assert "Scan" not in pattern.operation


def test_catalog_names_declared_schema_patterns_on_their_index() -> None:
    named = {pattern.name for pattern in catalog.PATTERNS}
    assert set(catalog.SCHEMA_PATTERNS) <= named, set(catalog.SCHEMA_PATTERNS) - named
    used = set()
    for entry in catalog.PATTERNS:
        for reference in entry.uses:
            declared = schema.pattern(reference)
            assert (declared.index or "table") == entry.index, (entry.name, reference)
            assert set(declared.entities) & set(entry.entities), (entry.name, reference)
            used.add(reference)
    declared_refs = {reference for reference, _ in schema.all_patterns()}
    assert declared_refs <= used, f"schema patterns missing from the catalog: {sorted(declared_refs - used)}"


def test_catalog_is_not_in_the_deployed_layer() -> None:
    assert not (ROOT / "layers" / "shared" / "python" / "serverless_mlflow" / "catalog.py").exists()


def test_catalog_serves_every_seed_access_pattern() -> None:
    served = {pattern.seed for pattern in catalog.PATTERNS if pattern.seed}
    assert set(catalog.SEED_PATTERNS) <= served, set(catalog.SEED_PATTERNS) - served


def test_generated_docs_are_up_to_date() -> None:
    for path, content in gen_docs.render().items():
        assert path.exists(), f"{path} missing: run `make docs`"
        assert path.read_text() == content, f"{path.name} is out of date: run `make docs`"


def _calls_named(tree: ast.AST, names: set[str]) -> list[int]:
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in names
    ]


# Off the request path: the job worker runs MLflow's own code (its kinds import mlflow lazily; cold start does
# not matter there). It never scans either.
MLFLOW_ALLOWED = (ROOT / "functions" / "job_worker",)


def test_no_scan_and_no_mlflow_import_in_lambda_code() -> None:
    offenders = []
    for path in list((ROOT / "functions").rglob("*.py")) + list((ROOT / "layers").rglob("*.py")):
        tree = ast.parse(path.read_text())
        offenders += [f"{path}:{line} scan" for line in _calls_named(tree, {"scan"})]
        if path.is_relative_to(MLFLOW_ALLOWED[0]):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Import) and any(alias.name.split(".")[0] == "mlflow" for alias in node.names):
                offenders.append(f"{path}:{node.lineno} imports mlflow")
            if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "mlflow":
                offenders.append(f"{path}:{node.lineno} imports mlflow")
    assert not offenders, offenders
