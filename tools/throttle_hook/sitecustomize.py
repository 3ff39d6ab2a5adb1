"""Throttling injected into a ``python -m local`` runtime for ``tools/trace_load_bench.py``'s storm phase, and into
an in-process runtime by tests (``install``).

On ``PYTHONPATH`` this module loads at interpreter start. While the file named by ``TRACE_LOAD_THROTTLE_FILE``
exists and holds a rate (0..1), that share of the DynamoDB calls made on request threads fail as DynamoDB's
``ThrottlingException`` after botocore's retries would (the answer stands in for the HTTP exchange, retries
included; the client's ``after-call`` hooks see it as they see DynamoDB's): the handlers must answer 429, which MLflow's client
retries, and lose nothing. A second word ``indexer`` (``0.2 indexer``) throttles the stream indexer's calls
instead (the code acting as the ``indexer`` function): its failed records must be retried, never dropped. Each
injection adds a line to ``<file>.count``.

At interpreter start botocore is not imported yet, and must not be: ``python -m local --built`` puts the built
layer's botocore first on the path only afterwards, and refuses to serve a venv module. The hook patches
``botocore.client`` when it is first imported, from wherever it comes.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import os
import random
import sys
import threading
import time
from collections.abc import Callable
from typing import ClassVar

_FILE = os.environ.get("TRACE_LOAD_THROTTLE_FILE")
REQUESTS, INDEXER = "requests", "indexer"


def _acting_function() -> str | None:
    try:
        from local import iam
    except ImportError:
        return None
    return iam.current_function()


class _Answer:
    """The HTTP answer botocore's caller reads (its status only)."""

    status_code = 400
    headers: ClassVar[dict[str, str]] = {}


def install(path: str) -> Callable[[], None]:
    """Throttle as the file at ``path`` says, from now on; returns the function that undoes it."""
    from botocore.client import BaseClient

    original = BaseClient._make_request
    state: dict[str, object] = {"rate": 0.0, "scope": REQUESTS, "read_at": 0.0}
    lock = threading.Lock()

    def setting() -> tuple[float, str]:
        now = time.monotonic()
        if now - float(state["read_at"]) > 0.5:  # type: ignore[arg-type]
            try:
                with open(path) as handle:
                    words = handle.read().split()
                state["rate"], state["scope"] = float(words[0]) if words else 0.0, words[1] if len(words) > 1 else REQUESTS
            except (OSError, ValueError):
                state["rate"] = 0.0
            state["read_at"] = now
        return float(state["rate"]), str(state["scope"])  # type: ignore[arg-type]

    def targeted(scope: str) -> bool:
        if scope == INDEXER:
            return _acting_function() == INDEXER
        return "process_request" in threading.current_thread().name

    def make_request(self, operation_model, request_dict, request_context):  # type: ignore[no-untyped-def]
        if self.meta.service_model.service_name == "dynamodb":
            rate, scope = setting()
            if rate and targeted(scope) and random.random() < rate:
                with lock, open(f"{path}.count", "a") as handle:
                    handle.write("1\n")
                error = {"Code": "ThrottlingException", "Message": "Rate of requests exceeds the allowed throughput."}
                return _Answer(), {"Error": error, "ResponseMetadata": {"HTTPStatusCode": 400}}
        return original(self, operation_model, request_dict, request_context)

    BaseClient._make_request = make_request

    def uninstall() -> None:
        BaseClient._make_request = original

    return uninstall


class _InstallOnImport(importlib.abc.MetaPathFinder):
    """Installs the hook right after ``botocore.client`` is first executed (then steps aside)."""

    def __init__(self, path: str) -> None:
        self.path = path

    def find_spec(self, name, path=None, target=None):  # type: ignore[no-untyped-def]
        if name != "botocore.client":
            return None
        sys.meta_path.remove(self)
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None:
            return spec
        execute = spec.loader.exec_module
        hook_path = self.path

        def exec_module(module):  # type: ignore[no-untyped-def]
            execute(module)
            install(hook_path)

        spec.loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


if _FILE:
    if "botocore.client" in sys.modules:
        install(_FILE)
    else:
        sys.meta_path.insert(0, _InstallOnImport(_FILE))
