"""Our validation port against mlflow's own functions: same accept/reject decision, same message."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import pytest
from mlflow.entities import Dataset, DatasetInput, InputTag, Metric, Param, RunTag
from mlflow.exceptions import MlflowException
from mlflow.utils import validation as ref

from serverless_mlflow.core import validation as ours
from serverless_mlflow.core.errors import MlflowError


def outcome(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[str, Any]:
    try:
        return ("ok", fn(*args, **kwargs))
    except MlflowException as error:
        return ("error", (error.error_code, error.message))
    except MlflowError as error:
        return ("error", (error.error_code, error.message))


def same(ref_fn: Callable[..., Any], our_fn: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[str, Any]:
    expected = outcome(ref_fn, *args, **kwargs)
    actual = outcome(our_fn, *args, **kwargs)
    if expected[0] == "ok":
        assert actual[0] == "ok", actual
    else:
        assert actual == expected
    return actual


NAMES = [
    "a",
    "a b",
    "a/b",
    "a:b",
    "a.b",
    "a-b_c",
    "ü",
    "日本",
    "a#b",
    "a%b",
    "a'b",
    "",
    ".",
    "..",
    "./a",
    "a/",
    "/a",
    "a//b",
    "a/./b",
    "a/../b",
    "../a",
    "...",
    "..a",
    "a..",
    " a",
    "a\nb",
    "a\tb",
    "a" * 251,
    "a" * 250,
    "x$",
    "tab\x00",
]


@pytest.mark.parametrize("name", [*NAMES, None])
def test_metric_name(name: str | None) -> None:
    same(ref._validate_metric_name, ours.validate_metric_name, name)
    same(ref._validate_metric_name, ours.validate_metric_name, name, "metrics[3].key")


@pytest.mark.parametrize("name", [*NAMES, None])
def test_param_and_tag_names(name: str | None) -> None:
    same(ref._validate_param_name, ours.validate_param_name, name)
    same(ref._validate_tag_name, ours.validate_tag_name, name)


@pytest.mark.parametrize(
    ("key", "value", "timestamp", "step"),
    [
        ("m", 1.0, 0, 0),
        ("m", math.nan, 1, -5),
        ("m", math.inf, 1, 2**63 - 1),
        ("m", -math.inf, 1, 0),
        ("m", None, 1, 0),
        ("m", "1.0", 1, 0),
        ("m", True, 1, 0),
        ("m", 1, -1, 0),
        ("m", 1.5, None, 0),
        ("m", 1.5, 3, None),
        ("m", 1.5, 3, "x"),
        ("a" * 251, 1.0, 0, 0),
        ("bad*", 1.0, 0, 0),
        (None, 1.0, 0, 0),
        ("m", math.nan, -1, 0),
    ],
)
def test_metric(key: Any, value: Any, timestamp: Any, step: Any) -> None:
    same(ref._validate_metric, ours.validate_metric, key, value, timestamp, step)
    same(ref._validate_metric, ours.validate_metric, key, value, timestamp, step, path="metrics[7]")


@pytest.mark.parametrize("truncate", ["true", "false"])
@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("p", "v"),
        ("p", "x" * 6000),
        ("p", "x" * 6001),
        ("p", "é" * 9000),
        ("k" * 251, "v"),
        ("k" * 250, "v"),
        ("p", None),
        ("p/../q", "v"),
        (None, "v"),
    ],
)
def test_param(monkeypatch: pytest.MonkeyPatch, truncate: str, key: Any, value: Any) -> None:
    monkeypatch.setenv("MLFLOW_TRUNCATE_LONG_VALUES", truncate)
    result = same(ref._validate_param, ours.validate_param, key, value, path="params[2]")
    if result[0] == "ok":
        expected: Param = ref._validate_param(key, value, path="params[2]")
        assert result[1] == (expected.key, expected.value)


@pytest.mark.parametrize("truncate", ["true", "false", "1", "0"])
@pytest.mark.parametrize(
    ("key", "value"),
    [("t", "v"), ("t", "x" * 8000), ("t", "x" * 8001), ("k" * 251, "v"), ("mlflow.runName", "r"), ("t", None), ("", "v"), (None, "v")],
)
def test_tag(monkeypatch: pytest.MonkeyPatch, truncate: str, key: Any, value: Any) -> None:
    monkeypatch.setenv("MLFLOW_TRUNCATE_LONG_VALUES", truncate)
    for path in ("", "tags[0]"):
        result = same(ref._validate_tag, ours.validate_tag, key, value, path=path)
        if result[0] == "ok":
            expected: RunTag = ref._validate_tag(key, value, path=path)
            assert result[1] == (expected.key, expected.value)


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("k", "v"),
        ("k" * 251, "v"),
        ("k", "v" * 20001),
        ("k", "v" * 20000),
        ("a/../b", "v"),
        (None, "v"),
        ("mlflow.trace.archivalRetention", '{"type": "duration", "value": "30d"}'),
        ("mlflow.trace.archivalRetention", '{"type": "duration", "value": "0d"}'),
        ("mlflow.trace.archivalRetention", '{"type": "other", "value": "3d"}'),
        ("mlflow.trace.archivalRetention", "nope"),
        ("mlflow.trace.archivalRetention", "[1]"),
        ("mlflow.trace.archivalRetention", '{"type": "duration", "value": "' + "1" * 40 + 'd"}'),
        ("mlflow.trace.archiveNow", "{}"),
        ("mlflow.trace.archiveNow", '{"older_than": "5x"}'),
    ],
)
def test_experiment_tag(key: Any, value: Any) -> None:
    same(ref._validate_experiment_tag, ours.validate_experiment_tag, key, value)


@pytest.mark.parametrize("name", ["e", "", None, 5, "x" * 500, "x" * 501, "a#b%_ü"])
def test_experiment_name(name: Any) -> None:
    same(ref._validate_experiment_name, ours.validate_experiment_name, name)


@pytest.mark.parametrize("run_id", ["abc", "a" * 256, "a" * 257, "-abc", "ab-c_d", "ab/c", "", "ü"])
def test_run_id(run_id: str) -> None:
    same(ref._validate_run_id, ours.validate_run_id, run_id)


@pytest.mark.parametrize("exp_id", ["0", "123", "abc", "", "-1", "1.5", None, "a" * 65])
def test_experiment_id(exp_id: Any) -> None:
    same(ref._validate_experiment_id, ours.validate_experiment_id, exp_id)
    if exp_id is not None:
        same(ref._parse_experiment_id, ours.parse_experiment_id, exp_id)
    same(ref._validate_experiment_id_type, ours.validate_experiment_id_type, exp_id)


def test_parse_experiment_ids() -> None:
    assert ours.parse_experiment_ids(["1", 2]) == [1, 2]
    same(ref._parse_experiment_ids, ours.parse_experiment_ids, ["1", "x"])
    same(ref._parse_experiment_id, ours.parse_experiment_id, None)


def test_an_infinite_experiment_id_is_refused_not_a_500() -> None:
    # JSON's 1e309 arrives as float('inf'); MLflow's int() raises OverflowError there (a 500). Ours is a 400.
    with pytest.raises(MlflowError) as refused:
        ours.parse_experiment_ids([float("inf")])
    assert refused.value.error_code == "INVALID_PARAMETER_VALUE"


@pytest.mark.parametrize(("m", "p", "t"), [(1000, 0, 0), (1001, 0, 0), (0, 101, 0), (0, 0, 101), (900, 100, 1), (900, 50, 50)])
def test_batch_limits(m: int, p: int, t: int) -> None:
    same(ref._validate_batch_log_limits, ours.validate_batch_log_limits, [0] * m, [0] * p, [0] * t)


def test_batch_request_size() -> None:
    same(ref._validate_batch_log_api_req, ours.validate_batch_log_api_req, "x" * 1_000_000)
    same(ref._validate_batch_log_api_req, ours.validate_batch_log_api_req, "x" * 1_000_001)


def test_batch_data_and_duplicates() -> None:
    metrics = [{"key": "m", "value": 1.0, "timestamp": 1, "step": 0}, {"key": "bad*", "value": 1.0, "timestamp": 1, "step": 0}]
    ref_metrics = [Metric(m["key"], m["value"], m["timestamp"], m["step"]) for m in metrics]
    expected = outcome(ref._validate_batch_log_data, ref_metrics, [], [])
    assert outcome(ours.validate_batch_log_data, metrics, [], []) == expected
    params = [{"key": "p", "value": "x" * 7000}, {"key": "q", "value": "v"}]
    _, out_params, _ = ours.validate_batch_log_data([], params, [{"key": "t", "value": "y" * 9000}])
    assert len(out_params[0]["value"]) == 6000
    dupes = [Param("a", "1"), Param("b", "1"), Param("a", "2")]
    assert outcome(ours.validate_param_keys_unique, [{"key": p.key, "value": p.value} for p in dupes]) == outcome(
        ref._validate_param_keys_unique, dupes
    )
    bad_tags = [RunTag("ok", "v"), RunTag("a/../b", "v")]
    assert outcome(ours.validate_batch_log_data, [], [], [{"key": t.key, "value": t.value} for t in bad_tags]) == outcome(
        ref._validate_batch_log_data, [], [], bad_tags
    )


@pytest.mark.parametrize(
    "dataset",
    [
        {"name": "d", "digest": "x", "source_type": "local", "source": "s"},
        {"name": "d" * 501, "digest": "x", "source_type": "local", "source": "s"},
        {"name": "d", "digest": "x" * 37, "source_type": "local", "source": "s"},
        {"name": "d", "digest": "x", "source_type": "local", "source": "s" * 65536},
        {"name": "d", "digest": "x", "source_type": "local", "source": "s", "schema": "s" * 1048576},
        {"name": None, "digest": "x", "source_type": "local", "source": "s"},
        {"name": "d", "digest": None, "source_type": "local", "source": "s"},
        {"name": "d", "digest": "x", "source_type": None, "source": "s"},
        {"name": "d", "digest": "x", "source_type": "l", "source": None},
    ],
)
def test_dataset(dataset: dict[str, Any]) -> None:
    ref_dataset = Dataset(dataset["name"], dataset["digest"], dataset["source_type"], dataset["source"], dataset.get("schema"))
    tags = [{"key": "k", "value": "v"}]
    expected = outcome(ref._validate_dataset_inputs, [DatasetInput(ref_dataset, [InputTag("k", "v")])])
    assert outcome(ours.validate_dataset_inputs, [{"dataset": dataset, "tags": tags}]) == expected


@pytest.mark.parametrize(("key", "value"), [("k", "v"), ("k" * 256, "v"), ("k", "v" * 501), (None, "v"), ("k", None)])
def test_input_tag(key: Any, value: Any) -> None:
    assert outcome(ours.validate_input_tag, {"key": key, "value": value}) == outcome(ref._validate_input_tag, InputTag(key, value))


@pytest.mark.parametrize("name", ["model", "", " ", None, "a/b", "a:b", "..", "a/../b", "x#y", "ü"])
def test_model_name(name: Any) -> None:
    same(ref._validate_model_name, ours.validate_model_name, name)
    same(ref._validate_model_renaming, ours.validate_model_renaming, name)


@pytest.mark.parametrize("alias", ["champ", "", None, "a b", "latest", "LATEST", "v1", "V12", "v1a", "x" * 256, "a-b_c"])
def test_alias(alias: Any) -> None:
    same(ref._validate_model_alias_name, ours.validate_model_alias_name, alias)
    if alias:
        same(ref._validate_model_alias_name_reserved, ours.validate_model_alias_name_reserved, alias)


@pytest.mark.parametrize(
    ("key", "value"), [("k", "v"), ("k" * 251, "v"), ("k", "v" * 100_001), ("k", None), ("mlflow.prompt.text", "x" * 100_001)]
)
def test_registry_tags(key: str, value: Any) -> None:
    same(ref._validate_registered_model_tag, ours.validate_registered_model_tag, key, value)
    same(ref._validate_model_version_tag, ours.validate_model_version_tag, key, value)


@pytest.mark.parametrize("version", ["1", "x", "1.5", 3])
def test_model_version(version: Any) -> None:
    same(ref._validate_model_version, ours.validate_model_version, version)


@pytest.mark.parametrize("location", ["s3://b/p", "runs:/abc/x", None])
def test_artifact_location(location: Any) -> None:
    same(ref._validate_experiment_artifact_location, ours.validate_experiment_artifact_location, location)


def test_artifact_location_length() -> None:
    same(ref._validate_experiment_artifact_location_length, ours.validate_experiment_artifact_location_length, "x" * 2048)
    same(ref._validate_experiment_artifact_location_length, ours.validate_experiment_artifact_location_length, "x" * 2049)


@pytest.mark.parametrize("name", [None, "m", "", "a.b", "a/b", "a%b", "a'b", 'a"b', "a:b"])
def test_logged_model_name(name: Any) -> None:
    same(ref._validate_logged_model_name, ours.validate_logged_model_name, name)


def test_trace_tag_truncates() -> None:
    assert ours.validate_trace_tag("k", "v" * 9000)[1] == ref._validate_trace_tag("k", "v" * 9000)[1]
    same(ref._validate_trace_tag, ours.validate_trace_tag, "k" * 251, "v")


@pytest.mark.parametrize(("version", "stage"), [("1", None), (None, "Production"), ("1", "Production"), (None, None)])
def test_version_or_stage(version: Any, stage: Any) -> None:
    same(ref._validate_model_version_or_stage_exists, ours.validate_model_version_or_stage_exists, version, stage)


@pytest.mark.parametrize("value", [[1], None, "x", ("a",)])
def test_list_param(value: Any) -> None:
    same(ref._validate_list_param, ours.validate_list_param, "experiment_ids", value)
    same(ref._validate_list_param, ours.validate_list_param, "experiment_ids", value, allow_none=True)


@pytest.mark.parametrize("max_results", [None, 0, -1, 1, 50000, 50001])
def test_max_results(tmp_path: Any, max_results: Any) -> None:
    from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore

    store = SqlAlchemyStore.__new__(SqlAlchemyStore)  # the check needs no database
    same(store._validate_max_results_param, ours.validate_max_results_param, max_results)
    same(
        lambda m: store._validate_max_results_param(m, allow_null=True),
        lambda m: ours.validate_max_results_param(m, allow_null=True),
        max_results,
    )


def test_users_and_tag_value() -> None:
    for name in ("", None, "bob"):
        same(ref._validate_username, ours.validate_username, name)
    for password in (None, "short", "x" * 12):
        same(ref._validate_password, ours.validate_password, password)
    same(ref._validate_tag_value, ours.validate_tag_value, None)
