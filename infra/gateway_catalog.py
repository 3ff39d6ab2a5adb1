"""Build time: MLflow's bundled model catalog, reduced to the gateway function's catalog file.

MLflow answers ``supported-providers`` and ``supported-models`` from ``mlflow/utils/model_catalog/*.json`` in
its wheel (99 files, 2.7 MB). The gateway function gets the same answers from one gzipped file (~50 KB)
made here from the installed (pinned) wheel, the way the web UI build is staged: located without importing
mlflow, deterministic bytes (gzip mtime 0), cached per mlflow version under ``build/``. Nothing generated is
committed. Synth stages the gateway package together with the file (``staged_function``), so it ships in that
function's asset alone; the local runtime points the function at ``staged_catalog()``.

The reduction is MLflow's own (``_flatten_catalog_entry`` and ``_extract_models`` in
``mlflow/utils/providers.py``): supported modes only, ``<provider>/`` prefixes stripped, fine-tuned variants
dropped, the first of duplicate (provider, model) rows kept, providers' variants consolidated. What depends on
the request or the deployment (the provider filter, ``MLFLOW_GATEWAY_ALLOWED_PROVIDERS``) stays with the function
(``functions/gateway/catalog.py``, which reads this format). ``tests/gateway/test_gateway_catalog.py`` compares
the result with ``mlflow.utils.providers`` for every provider.
"""

from __future__ import annotations

import gzip
import hashlib
import importlib.util
import json
import os
import shutil
from collections.abc import Iterator
from importlib.metadata import version
from pathlib import Path
from typing import Any

from infra import FUNCTIONS_DIR, ROOT

STAGING_DIR = ROOT / "build" / "gateway"
GATEWAY_PACKAGE = "gateway"
RUNTIME_PACKAGE = "gateway_runtime"
# Must match functions/gateway/catalog.py (CATALOG_FILE, FORMAT); a test checks both.
CATALOG_FILE = "model_catalog.json.gz"
FORMAT = 1

_SUPPORTED_MODES = ("chat", "completion", "embedding", "evaluation", "responses", None)
_EXCLUDED_PROVIDERS = frozenset({"bedrock_converse"})
COLUMNS = (
    "model",
    "provider",
    "mode",
    "supports_function_calling",
    "supports_vision",
    "supports_reasoning",
    "supports_prompt_caching",
    "supports_response_schema",
    "max_input_tokens",
    "max_output_tokens",
    "input_cost_per_token",
    "output_cost_per_token",
    "modality",
    "deprecation_date",
    "last_updated_at",
)
_FLAGS = ("function_calling", "vision", "reasoning", "prompt_caching", "response_schema")


def wheel_catalog_dir() -> Path:
    """``mlflow/utils/model_catalog`` of the installed mlflow (found without importing it)."""
    spec = importlib.util.find_spec("mlflow")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(
            "mlflow is not installed: the gateway's model catalog comes from its wheel (pip install -r requirements-dev.txt)"
        )
    directory = Path(next(iter(spec.submodule_search_locations))) / "utils" / "model_catalog"
    if not any(directory.glob("*.json")):
        raise RuntimeError(f"the installed mlflow has no model catalog at {directory}")
    return directory


def _normalize(provider: str) -> str:
    # MLflow's _PROVIDER_CONSOLIDATION: every vertex_ai-* variant is vertex_ai.
    return "vertex_ai" if provider == "vertex_ai" or provider.startswith("vertex_ai-") else provider


def _flatten(entry: dict[str, Any]) -> dict[str, Any]:
    """One catalog entry as the model row's fields (MLflow's ``_flatten_catalog_entry`` + ``_build_model_dict``)."""
    window = entry.get("context_window") or {}
    pricing = entry.get("pricing") or {}
    capabilities = entry.get("capabilities") or {}

    def per_token(name: str) -> float | None:
        value = pricing.get(name)
        return value / 1_000_000 if value is not None else None

    return {
        "mode": entry.get("mode"),
        **{f"supports_{flag}": capabilities.get(flag, False) for flag in _FLAGS},
        "max_input_tokens": window.get("max_input"),
        "max_output_tokens": window.get("max_output"),
        "input_cost_per_token": per_token("input_per_million_tokens"),
        "output_cost_per_token": per_token("output_per_million_tokens"),
        "modality": pricing.get("modality") or None,
        "deprecation_date": entry.get("deprecation_date") or None,
        "last_updated_at": entry.get("last_updated_at") or None,
    }


def _rows(catalog_dir: Path) -> Iterator[dict[str, Any]]:
    seen: set[tuple[str, str]] = set()
    for path in sorted(catalog_dir.glob("*.json"), key=lambda p: p.stem):
        if path.stem in _EXCLUDED_PROVIDERS:
            continue
        provider = _normalize(path.stem)
        for name, entry in json.loads(path.read_text("utf-8")).get("models", {}).items():
            if entry.get("mode") not in _SUPPORTED_MODES:
                continue
            name = name.removeprefix(f"{provider}/")
            if name.startswith("ft:") or (provider, name) in seen:
                continue
            seen.add((provider, name))
            yield {"model": name, "provider": provider, **_flatten(entry)}


def build(catalog_dir: Path, mlflow_version: str) -> bytes:
    """The catalog file's bytes: gzipped JSON, the same bytes for the same wheel."""
    providers = sorted({_normalize(p.stem) for p in catalog_dir.glob("*.json") if p.stem not in _EXCLUDED_PROVIDERS})
    data = {
        "format": FORMAT,
        "mlflow_version": mlflow_version,
        "providers": providers,
        "columns": list(COLUMNS),
        "models": [[row[column] for column in COLUMNS] for row in _rows(catalog_dir)],
    }
    text = json.dumps(data, separators=(",", ":"), ensure_ascii=False)
    return gzip.compress(text.encode("utf-8"), compresslevel=9, mtime=0)


PRICES_FILE = "model_prices.json.gz"
PRICES_FORMAT = 1
_PRICE_KEYS = (
    "input_per_million_tokens",
    "output_per_million_tokens",
    "cache_read_per_million_tokens",
    "cache_write_per_million_tokens",
)


def build_prices(catalog_dir: Path, mlflow_version: str) -> bytes:
    """The runtime's price table (``functions/gateway_runtime/pricing.py``): per catalog file (provider) and
    model key as MLflow's ``_lookup_model_info`` finds them, the per-token prices ``cost_per_token`` uses;
    every entry of every mode, as MLflow prices any model its catalog names."""
    providers: dict[str, dict[str, list[float | None]]] = {}
    for path in sorted(catalog_dir.glob("*.json"), key=lambda p: p.stem):
        rows = providers.setdefault(path.stem, {})
        for name, entry in json.loads(path.read_text("utf-8")).get("models", {}).items():
            pricing = entry.get("pricing") or {}
            rows[name] = [pricing[key] / 1_000_000 if pricing.get(key) is not None else None for key in _PRICE_KEYS]
    data = {"format": PRICES_FORMAT, "mlflow_version": mlflow_version, "providers": providers}
    return gzip.compress(json.dumps(data, separators=(",", ":"), sort_keys=True).encode("utf-8"), compresslevel=9, mtime=0)


def _write_atomically(path: Path, data: bytes) -> None:
    # Several test workers or synths may stage at once: each writes its own file, then renames.
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f"{path.name}.{os.getpid()}.partial")
    partial.write_bytes(data)
    os.replace(partial, path)


def staged_catalog() -> Path:
    """The installed mlflow's catalog file under ``build/``, built once per mlflow version."""
    installed = version("mlflow")
    path = STAGING_DIR / f"model-catalog-mlflow-{installed}.json.gz"
    if not path.is_file():
        _write_atomically(path, build(wheel_catalog_dir(), installed))
    return path


def staged_prices() -> Path:
    """The installed mlflow's price table under ``build/``, built once per mlflow version."""
    installed = version("mlflow")
    path = STAGING_DIR / f"model-prices-mlflow-{installed}.json.gz"
    if not path.is_file():
        _write_atomically(path, build_prices(wheel_catalog_dir(), installed))
    return path


def _package_files(package: Path) -> list[Path]:
    return sorted(
        path
        for path in package.rglob("*")
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc" and path.name != "conftest.py"
    )


def _prune_other_stagings(keep: Path) -> None:
    """Earlier stagings (older code or catalog) are never read again: synth copies the asset into cdk.out."""
    if keep.parent.is_dir():
        for other in keep.parent.iterdir():
            if other.is_dir() and other != keep and ".partial" not in other.name:
                shutil.rmtree(other, ignore_errors=True)


def staged_function(package: Path = FUNCTIONS_DIR / GATEWAY_PACKAGE, extras: dict[str, Path] | None = None) -> Path:
    """An asset root holding the package (its files and build-time data files beside them: the gateway's
    catalog by default), named by its content: the asset hash changes with the code or the data, and
    concurrent synths never write the same directory."""
    data = {name: path.read_bytes() for name, path in (extras if extras is not None else {CATALOG_FILE: staged_catalog()}).items()}
    files = _package_files(package)
    digest = hashlib.sha256(package.name.encode())
    for name, content in sorted(data.items()):
        digest.update(name.encode() + b"\0" + content)
    for path in files:
        # The executable bit too: the streaming function's handler is a script the adapter execs (run.sh).
        executable = b"x" if os.access(path, os.X_OK) else b"-"
        digest.update(str(path.relative_to(package)).encode() + b"\0" + executable + path.read_bytes())
    root = STAGING_DIR / "function" / package.name / digest.hexdigest()[:20]
    if root.is_dir():
        return root
    _prune_other_stagings(root)
    partial = root.with_name(f"{root.name}.{os.getpid()}.partial")
    shutil.rmtree(partial, ignore_errors=True)
    for path in files:
        target = partial / package.name / path.relative_to(package)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(path, target)  # with its mode: the zip CDK makes keeps it
    for name, content in data.items():
        (partial / package.name / name).write_bytes(content)
    try:
        partial.rename(root)
    except OSError:  # another process staged the same content first
        shutil.rmtree(partial, ignore_errors=True)
    return root


def staged_runtime(package: Path = FUNCTIONS_DIR / RUNTIME_PACKAGE) -> Path:
    """The gateway runtime's asset root: its package with the price table beside it."""
    return staged_function(package, {PRICES_FILE: staged_prices()})
