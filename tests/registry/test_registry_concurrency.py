"""Concurrent writers: version numbers are allocated atomically and model names are unique."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest
from mlflow import MlflowClient
from mlflow.exceptions import MlflowException

from tests.conftest import unique

pytestmark = pytest.mark.e2e

THREADS = 6
PER_THREAD = 3


def test_concurrent_versions_get_distinct_consecutive_numbers(server: str) -> None:
    name = unique("conc")
    MlflowClient(server).create_registered_model(name)

    def create(worker: int) -> list[str]:
        client = MlflowClient(server)
        return [client.create_model_version(name, f"s3://b/{worker}/{i}").version for i in range(PER_THREAD)]

    with ThreadPoolExecutor(THREADS) as pool:
        numbers = [v for batch in pool.map(create, range(THREADS)) for v in batch]
    assert sorted(int(v) for v in numbers) == list(range(1, THREADS * PER_THREAD + 1))
    found = MlflowClient(server).search_model_versions(f"name = '{name}'")
    assert sorted(int(mv.version) for mv in found) == list(range(1, THREADS * PER_THREAD + 1))
    # Every version kept its own source: no two writers shared a number.
    assert len({mv.source for mv in found}) == THREADS * PER_THREAD


def test_concurrent_creates_of_one_name_have_one_winner(server: str) -> None:
    name = unique("race")

    def create(_: int) -> str:
        try:
            MlflowClient(server).create_registered_model(name)
            return "created"
        except MlflowException as error:
            return error.error_code

    with ThreadPoolExecutor(THREADS) as pool:
        outcomes = list(pool.map(create, range(THREADS)))
    assert outcomes.count("created") == 1
    assert outcomes.count("RESOURCE_ALREADY_EXISTS") == THREADS - 1
    assert [m.name for m in MlflowClient(server).search_registered_models(f"name = '{name}'")] == [name]
