"""One runtime with ``MLFLOW_ENABLE_WORKSPACES=true`` and one MLflow server with workspaces enabled, shared by every
workspace test module (each test names its workspaces with a unique suffix)."""

from __future__ import annotations

from collections.abc import Iterator

import mlflow
import pytest

from tests.conftest import runtime_process, unique
from tests.gateway_runtime.test_runtime_e2e import LOOSE_API_BASE
from tests.mlflow_reference import workspaces_reference_server
from tests.webhooks.conftest import LOCAL_TARGETS, receiver  # noqa: F401 (the local webhook receiver fixture)
from tools.mock_llm import MockLLM


@pytest.fixture(scope="package")
def mock_llm() -> Iterator[MockLLM]:
    """The local mock provider: gateway endpoints' and the job worker's judges' (MLflow's openai provider)."""
    llm = MockLLM().start()
    yield llm
    llm.stop()


@pytest.fixture(scope="package")
def ours(mock_llm: MockLLM) -> Iterator[str]:
    # Webhooks may target a local receiver (no test compares a refused target with the reference server); the
    # runner's small test job kinds are served (JOB_TEST_KINDS); gateway endpoints may call the local mock provider,
    # and the worker's judges do (OPENAI_API_BASE).
    env = {
        **LOOSE_API_BASE,
        "OPENAI_API_KEY": "test-key",
        "OPENAI_API_BASE": f"{mock_llm.url}/v1",
        "MLFLOW_ENABLE_WORKSPACES": "true",
        "TABLE_NAME": unique("ws"),
        "BUCKET_NAME": unique("ws"),
        "JOB_TEST_KINDS": "true",
        **LOCAL_TARGETS,
    }
    with runtime_process(env) as url:
        yield url


@pytest.fixture(scope="package")
def reference() -> str:
    return workspaces_reference_server().url


@pytest.fixture(autouse=True)
def _no_workspace_left_set() -> Iterator[None]:
    yield
    mlflow.set_workspace(None)
