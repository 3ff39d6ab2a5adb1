"""mlflow.genai.datasets end to end with the real client, compared call by call with MLflow's SqlAlchemyStore."""

from __future__ import annotations

import json
from typing import Any

import pandas as pd
import pytest

from tests.conftest import unique


def _dataset_view(ds: Any) -> dict[str, Any]:
    """What the user sees of a dataset, without ids and clock values."""
    return {
        "name": ds.name,
        "tags": ds.tags,
        "schema": json.loads(ds.schema) if ds.schema else None,
        "profile": json.loads(ds.profile) if ds.profile else ds.profile,
        "created_by": ds.created_by,
        "last_updated_by": ds.last_updated_by,
        "digest_length": len(ds.digest),
        "times_ordered": ds.created_time <= ds.last_update_time,
    }


def _records_view(df: pd.DataFrame) -> list[dict[str, Any]]:
    rows = []
    for row in df.to_dict("records"):
        source = row["source"]
        rows.append(
            {
                "inputs": row["inputs"],
                "outputs": row["outputs"],
                "expectations": row["expectations"],
                "tags": row["tags"],
                "source_type": row["source_type"],
                "source_id": row["source_id"],
                "source": source.to_dict() if source is not None else None,
                "has_id": str(row["dataset_record_id"]).startswith("dr-"),
            }
        )
    return sorted(rows, key=lambda r: json.dumps(r["inputs"], sort_keys=True))


def test_dataset_lifecycle_matches_mlflow(against: Any) -> None:
    import mlflow
    from mlflow.genai import datasets

    def scenario() -> dict[str, Any]:
        experiment_id = mlflow.create_experiment(unique("evalds"))
        other_id = mlflow.create_experiment(unique("evalds"))
        out: dict[str, Any] = {}
        ds = datasets.create_dataset(name="qa set", experiment_id=[experiment_id, other_id], tags={"team": "search", "n": 3})
        out["created"] = _dataset_view(ds)
        out["created_experiments"] = [x == experiment_id for x in ds.experiment_ids]
        ds.merge_records(
            [
                {"inputs": {"question": "a"}, "expectations": {"answer": "1"}},
                {"inputs": {"question": "b"}},
                {"inputs": {"question": "a"}, "expectations": {"more": 2}, "tags": {"reviewed": "yes"}},
                {"inputs": {"question": "t"}, "outputs": None, "source": {"source_type": "trace", "source_data": {"trace_id": "tr-123"}}},
            ]
        )
        frame = pd.DataFrame(
            [
                {"inputs": {"question": "c", "ctx": [1, 2]}, "outputs": {"text": "out"}, "expectations": {"answer": "3"}},
                {"inputs": {"question": "b"}, "outputs": {"text": "x", "score": 0.5}, "expectations": {}},
                {"inputs": {"question": "s"}, "outputs": "plain", "expectations": {}},
            ]
        )
        ds.merge_records(frame)
        fetched = datasets.get_dataset(dataset_id=ds.dataset_id)
        out["after_merge"] = _dataset_view(fetched)
        out["records"] = _records_view(fetched.to_df())
        out["by_name"] = datasets.get_dataset(name="qa set").dataset_id == ds.dataset_id
        datasets.set_dataset_tags(ds.dataset_id, {"team": "ranking", "skip": None, "flag": True, "num": 1.5})
        datasets.delete_dataset_tag(ds.dataset_id, "n")
        datasets.delete_dataset_tag(ds.dataset_id, "never-set")
        out["tags"] = datasets.get_dataset(dataset_id=ds.dataset_id).tags
        out["experiment_ids"] = [x in (experiment_id, other_id) for x in datasets.get_dataset(dataset_id=ds.dataset_id).experiment_ids]
        datasets.set_dataset_tags(ds.dataset_id, {"my key/x": "v", "ключ": "значение"})
        datasets.delete_dataset_tag(ds.dataset_id, "ключ")
        out["tags_unicode"] = datasets.get_dataset(dataset_id=ds.dataset_id).tags
        third_id = mlflow.create_experiment(unique("evalds"))
        datasets.add_dataset_to_experiments(ds.dataset_id, [third_id, experiment_id])
        out["added"] = [x in (experiment_id, other_id, third_id) for x in datasets.get_dataset(dataset_id=ds.dataset_id).experiment_ids]
        datasets.remove_dataset_from_experiments(ds.dataset_id, [other_id, "424242"])
        remaining = datasets.get_dataset(dataset_id=ds.dataset_id).experiment_ids
        out["after_remove"] = (len(remaining), other_id in remaining, third_id in remaining)
        out["search_removed"] = [d.name for d in datasets.search_datasets(experiment_ids=[other_id])]
        out["search_added"] = [d.name for d in datasets.search_datasets(experiment_ids=[third_id])]
        found = datasets.search_datasets(experiment_ids=[experiment_id])
        out["search_by_experiment"] = [d.name for d in found]
        out["search_by_tag"] = [d.dataset_id == ds.dataset_id for d in datasets.search_datasets(filter_string="tags.team = 'ranking'")]
        # Deleting records by id shrinks the profile.
        record_ids = fetched.to_df()["dataset_record_id"].tolist()
        out["deleted"] = fetched.delete_records([*record_ids[:2], "dr-missing"])
        after_delete = datasets.get_dataset(dataset_id=ds.dataset_id)
        out["profile_after_delete"] = after_delete.profile
        out["records_after_delete"] = len(after_delete.to_df())
        datasets.delete_dataset(dataset_id=ds.dataset_id)
        datasets.delete_dataset(dataset_id=ds.dataset_id)  # idempotent, as in MLflow
        out["search_after_delete"] = [d.name for d in datasets.search_datasets(experiment_ids=[experiment_id])]
        try:
            datasets.get_dataset(dataset_id=ds.dataset_id)
        except mlflow.MlflowException as error:
            out["get_deleted"] = (error.error_code, error.message.endswith(f"Evaluation dataset with id '{ds.dataset_id}' not found"))
        return out

    ours, reference = against(scenario)
    assert ours == reference
    merged = next(r for r in ours["records"] if r["inputs"] == {"question": "a"})
    assert merged["expectations"] == {"answer": "1", "more": 2}
    assert ours["get_deleted"] == ("RESOURCE_DOES_NOT_EXIST", True)


def test_search_filters_orders_and_pages_match_mlflow(against: Any) -> None:
    import mlflow
    from mlflow import MlflowClient

    def scenario() -> dict[str, Any]:
        experiment_id = mlflow.create_experiment(unique("evalsearch"))
        client = MlflowClient()
        names = ["beta", "Alpha", "gamma", "alpha", "delta"]
        for index, name in enumerate(names):
            client.create_dataset(
                name=name, experiment_id=[experiment_id], tags={"kind": "even" if index % 2 == 0 else "odd", "i": str(index)}
            )
        out: dict[str, Any] = {}
        queries = [
            ("name = 'alpha'", None),
            ("name LIKE 'a%'", ["name ASC"]),
            ("name ILIKE 'a%'", ["name DESC"]),
            ("name IN ('beta', 'delta')", ["name"]),
            ("tags.kind = 'even'", ["name ASC"]),
            ("tags.kind != 'even' AND name != 'zzz'", ["last_update_time DESC", "name ASC"]),
            ("created_time > 0", ["created_time ASC", "name ASC"]),
            ("created_by = 'nobody'", None),
            ("last_updated_by != 'x'", None),
        ]
        for filter_string, order_by in queries:
            page = client.search_datasets(experiment_ids=[experiment_id], filter_string=filter_string, order_by=order_by)
            key = f"{filter_string} | {order_by}"
            out[key] = [d.name for d in page] if order_by else sorted(d.name for d in page)
        # Pages of two, in name order, until the token runs out.
        seen, token = [], None
        while True:
            page = client.search_datasets(experiment_ids=[experiment_id], max_results=2, order_by=["name ASC"], page_token=token)
            seen.append([d.name for d in page])
            token = page.token
            if not token:
                break
        out["pages"] = seen
        errors = {}
        for bad in [
            {"filter_string": "tags.kind IS NULL"},
            {"filter_string": "foo = 'x'"},
            {"filter_string": "created_time = 'x'"},
            {"filter_string": "created_time >= 1.5"},
            {"filter_string": "name > 'a'"},
            {"filter_string": "params.x = 'y'"},
            {"filter_string": "name = 'a' OR name = 'b'"},
            {"filter_string": "tags.kind like 'x'"},
            {"filter_string": "created_time IN (1)"},
            {"filter_string": "name NOT IN ('a')"},
            {"filter_string": "created_by IS NULL"},
            {"filter_string": "tags.kind = 5"},
            {"filter_string": "name = 'a' and name = 'b'"},
            {"order_by": ["tags.kind"]},
            {"order_by": ["created_by ASC"]},
            {"order_by": ["name sideways"]},
            {"max_results": 0},
            {"max_results": 50001},
            {"page_token": "not-a-token"},
        ]:
            try:
                client.search_datasets(experiment_ids=[experiment_id], **bad)
                errors[json.dumps(bad)] = "ok"
            except mlflow.MlflowException as error:
                errors[json.dumps(bad)] = error.error_code
        out["errors"] = errors
        return out

    ours, reference = against(scenario)
    assert ours["errors"] == reference["errors"], {
        k: (v, reference["errors"].get(k)) for k, v in ours["errors"].items() if v != reference["errors"].get(k)
    }
    assert ours == reference
    assert ours["pages"] == [["Alpha", "alpha"], ["beta", "delta"], ["gamma"]]


def test_record_pages_and_large_records(server: str, reference_uri: str) -> None:
    """Many records page in MLflow's order; a 600 KB record round-trips (split into parts under 400 KB)."""
    import mlflow
    from mlflow.genai import datasets

    mlflow.set_tracking_uri(server)
    experiment_id = mlflow.create_experiment(unique("evalbig"))
    ds = datasets.create_dataset(name=unique("big"), experiment_id=experiment_id)
    batch = [{"inputs": {"i": i}, "expectations": {"double": 2 * i}} for i in range(1100)]
    ds.merge_records(batch)
    big = "x" * 600_000
    ds.merge_records([{"inputs": {"i": "large"}, "outputs": {"blob": big}}])
    ds.merge_records([{"inputs": {"i": 7}, "expectations": {"triple": 21}}])
    store = mlflow.tracking._tracking_service.utils._get_store()
    first, token = store._load_dataset_records(ds.dataset_id, max_results=1000)
    assert len(first) == 1000 and token
    rest, last_token = store._load_dataset_records(ds.dataset_id, max_results=1000, page_token=token)
    assert last_token is None
    everything = first + rest
    assert len({r.dataset_record_id for r in everything}) == 1101
    assert [(r.created_time, r.dataset_record_id) for r in everything] == sorted((r.created_time, r.dataset_record_id) for r in everything)
    by_input = {json.dumps(r.inputs): r for r in everything}
    assert by_input['{"i": "large"}'].outputs == {"blob": big}
    assert by_input['{"i": 7}'].expectations == {"double": 14, "triple": 21}
    fetched = datasets.get_dataset(dataset_id=ds.dataset_id)
    assert json.loads(fetched.profile) == {"num_records": 1101}
    assert len(fetched.to_df()) == 1101


@pytest.mark.parametrize(
    ("body", "code"),
    [
        ({"records": "not json"}, "INVALID_PARAMETER_VALUE"),
        ({"records": json.dumps({"inputs": {}})}, "INVALID_PARAMETER_VALUE"),
        ({"records": json.dumps([{"inputs": ["list"]}])}, "INVALID_PARAMETER_VALUE"),
        (
            {"records": json.dumps([{"inputs": {"a": 1}}, {"inputs": {"b": 1}, "source": {"source_type": "alien"}}])},
            "INVALID_PARAMETER_VALUE",
        ),
        ({"records": json.dumps([{"inputs": {"a": 1}, "tags": "t"}])}, "INVALID_PARAMETER_VALUE"),
        ({"records": json.dumps([{"inputs": {"a": 1}}, {"inputs": None}])}, "INVALID_PARAMETER_VALUE"),
        ({"records": json.dumps([{"inputs": {"a": 1}, "expectations": float("nan")}])}, "INVALID_PARAMETER_VALUE"),
        ({}, "INVALID_PARAMETER_VALUE"),
    ],
)
def test_bad_records_change_nothing(server: str, body: dict[str, Any], code: str) -> None:
    import mlflow
    import requests
    from mlflow.genai import datasets

    mlflow.set_tracking_uri(server)
    ds = datasets.create_dataset(name=unique("bad"), experiment_id=mlflow.create_experiment(unique("evalbad")))
    before = datasets.get_dataset(dataset_id=ds.dataset_id)
    response = requests.post(f"{server}/api/3.0/mlflow/datasets/{ds.dataset_id}/records", json=body, timeout=30)
    assert response.status_code == 400
    assert response.json()["error_code"] == code
    after = datasets.get_dataset(dataset_id=ds.dataset_id)
    assert (after.last_update_time, after.digest, after.profile) == (before.last_update_time, before.digest, before.profile)
    assert after.to_df().empty


def test_error_codes_match_mlflow(against: Any) -> None:
    import mlflow
    from mlflow import MlflowClient

    def scenario() -> dict[str, Any]:
        client = MlflowClient()
        store = mlflow.tracking._tracking_service.utils._get_store()
        out: dict[str, Any] = {}
        calls = {
            "get": lambda: client.get_dataset("d-00000000000000000000000000000000"),
            "set_tags": lambda: client.set_dataset_tags("d-00000000000000000000000000000000", {"a": "b"}),
            "delete_tag": lambda: client.delete_dataset_tag("d-00000000000000000000000000000000", "a"),
            "delete": lambda: client.delete_dataset("d-00000000000000000000000000000000"),
            "experiment_ids": lambda: store.get_dataset_experiment_ids("d-00000000000000000000000000000000"),
            "records": lambda: store._load_dataset_records("d-00000000000000000000000000000000", max_results=10),
            "upsert": lambda: store.upsert_dataset_records("d-00000000000000000000000000000000", [{"inputs": {"a": 1}}]),
            "add_experiments": lambda: store.add_dataset_to_experiments("d-00000000000000000000000000000000", ["0"]),
        }
        for name, call in calls.items():
            try:
                result = call()
                out[name] = ("ok", result if not isinstance(result, tuple) else list(result[0]))
            except mlflow.MlflowException as error:
                out[name] = (error.error_code,)
        ds = client.create_dataset(name=unique("errs"))
        try:
            store.add_dataset_to_experiments(ds.dataset_id, ["987654321"])
        except mlflow.MlflowException as error:
            out["add_missing_experiment"] = (error.error_code, error.message.endswith("No Experiment with id=987654321"))
        return out

    ours, reference = against(scenario)
    assert ours == reference
