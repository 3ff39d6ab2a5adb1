"""Modules a function imports on the first request that needs them, not at cold start.

A Lambda's cold start pays for every module its handler imports, compiled from source (the read-only
package cannot keep bytecode). A route family with heavy imports of its own (protobuf for OTLP and trace
reads, the search grammar and sqlparse for searches) is reached through ``deferred("pkg.module")``: the
handler uses it like the module (``ingest.parse_otlp(...)``) and the import happens at the first attribute
access, under the import system's own lock (safe when a local runtime serves requests in threads).
"""

from __future__ import annotations

import importlib
from typing import Any


class Deferred:
    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attribute: str) -> Any:
        return getattr(importlib.import_module(self._name), attribute)

    def __repr__(self) -> str:
        return f"<deferred module {self._name}>"


def deferred(name: str) -> Any:
    """``name``'s module, imported when first used (typed ``Any``: callers use it as the module)."""
    return Deferred(name)
