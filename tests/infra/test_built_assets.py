"""The assets synth ships, built from requirements/*.lock (infra/assets.py): compiled modules present, the worker
within its size budget and without shadowing the layer, builds reproducible.

The first run builds the layer and the worker for Lambda and for this machine (a few minutes, mostly downloads);
later runs reuse build/assets while the locks are unchanged.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from packaging.utils import canonicalize_name

from infra import assets

pytestmark = pytest.mark.xdist_group("built-assets")

# Lambda's limit is 250 MiB for code and layers together: the worker keeps 50 of it free for growth.
WORKER_BUDGET_MIB = 200
ELF_MACHINE = {"aarch64": 183, "x86_64": 62}  # e_machine of an ELF header


def _elf_machine(path: Path) -> int:
    return int.from_bytes(path.read_bytes()[18:20], "little")


def _dist_infos(root: Path) -> dict[str, Path]:
    return {canonicalize_name(path.name.removesuffix(".dist-info").rsplit("-", 1)[0]): path for path in root.glob("*.dist-info")}


def _record_native(dist_info: Path) -> list[str]:
    """The compiled modules a wheel ships (its RECORD), as paths inside site-packages."""
    lines = (dist_info / "RECORD").read_text().splitlines()
    return [line.split(",", 1)[0] for line in lines if line.split(",", 1)[0].endswith(".so") and not line.startswith("..")]


def test_locks_match_their_requirements() -> None:
    for group in ("layer", assets.WORKER):
        assert not assets.stale(group), f"requirements/{group}.lock is older than its requirements: run `make locks`"
        entries = assets.read_lock(group)
        assert entries and all(entry.hashes for entry in entries), "every pin carries its wheels' hashes"


def test_the_locks_target_the_functions_runtime() -> None:
    from infra.constructs.functions import ARCHITECTURE, RUNTIME

    assert RUNTIME.name == f"python{assets.RUNTIME_PYTHON}"
    assert ARCHITECTURE.name == "arm64" and assets.RUNTIME.machine == "aarch64"


@pytest.mark.parametrize("target", [assets.RUNTIME, assets.HOST], ids=lambda target: target.name)
def test_layer_ships_every_compiled_module_of_its_wheels(target: assets.Target) -> None:
    """Protobuf's upb parser above all (pure-Python protobuf parses a 458 KB OTLP request 130x slower)."""
    python = assets.build_layer(target).path / "python"
    upb = list((python / "google" / "_upb").glob("_message*.so"))
    assert upb, "the layer lacks protobuf's compiled module"
    assert _elf_machine(upb[0]) == ELF_MACHINE[target.machine]
    pinned = {canonicalize_name(entry.name) for entry in assets.read_lock("layer") if entry.wanted_on(target)}
    dist_infos = _dist_infos(python)
    assert set(dist_infos) == pinned, "the layer holds exactly the lock's distributions"
    missing = [path for dist_info in dist_infos.values() for path in _record_native(dist_info) if not (python / path).is_file()]
    assert not missing
    assert "boto3" in pinned and (python / "boto3" / "__init__.py").is_file(), "boto3 ships pinned, as the tests run it"
    assert not (python / "bin").exists()
    if target is assets.RUNTIME:  # what ships (host builds are imported by local runs and tests)
        assert not list(python.rglob("__pycache__"))


def test_layer_keeps_the_api_model_of_every_service_the_code_calls() -> None:
    """botocore/data is cut to BOTOCORE_SERVICES: every client our layer and functions make must be among them."""
    import re

    from infra import FUNCTIONS_DIR, LAYER_PYTHON_DIR

    called = set()
    for source in [*LAYER_PYTHON_DIR.rglob("*.py"), *FUNCTIONS_DIR.rglob("*.py")]:
        called |= set(re.findall(r"""\.(?:client|resource)\(\s*["']([a-z0-9-]+)["']""", source.read_text()))
    assert {"dynamodb", "s3", "sqs"} <= called
    assert called <= set(assets.BOTOCORE_SERVICES), called - set(assets.BOTOCORE_SERVICES)
    data = assets.build_layer(assets.RUNTIME).path / "python" / "botocore" / "data"
    assert {path.name for path in data.iterdir() if path.is_dir()} == set(assets.BOTOCORE_SERVICES)


def test_worker_fits_its_budget_without_shadowing_the_layer() -> None:
    layer, worker = assets.build_layer(assets.RUNTIME), assets.build_worker(assets.RUNTIME)
    total_mib = (layer.bytes + worker.bytes) / 2**20
    assert total_mib <= WORKER_BUDGET_MIB, f"job worker {worker.bytes / 2**20:.1f} MiB + layer {layer.bytes / 2**20:.1f} MiB"
    worker_names = {path.name for path in worker.path.iterdir()}
    # One copy of every module: the worker's directory comes first on Lambda's path and would shadow the layer's
    # (namespace packages such as opentelemetry may span both; their files may not).
    layer_files = {path.relative_to(layer.path / "python") for path in (layer.path / "python").rglob("*") if path.is_file()}
    worker_files = {path.relative_to(worker.path) for path in worker.path.rglob("*") if path.is_file()}
    assert not layer_files & worker_files
    assert not _dist_infos(worker.path).keys() & _dist_infos(layer.path / "python").keys()
    assert {"mlflow", "litellm", "gepa", "pandas", "job_worker"} <= worker_names
    assert "sqlparse" not in worker_names and (layer.path / "python" / "sqlparse").is_dir()
    # A dist-info without its package makes huggingface_hub-style probes (importlib.metadata) believe it is there.
    assert not [name for name in worker_names if name.lower().startswith(("hf_xet", "huggingface_hub"))]
    for dist_info in _dist_infos(worker.path).values():
        top_level = dist_info / "top_level.txt"
        for module in top_level.read_text().split() if top_level.is_file() else []:
            assert any((worker.path / f"{module}{suffix}").exists() for suffix in ("", ".py")) or list(
                worker.path.glob(f"{module}.*.so")
            ), f"{dist_info.name} without {module}"


def test_worker_runs_its_kinds_from_the_built_package_alone() -> None:
    """The host build (same lock, same pruning) imports every kind with nothing but the package, the layer and the
    standard library on the path: whatever the pruning or the left-out distributions broke fails here."""
    layer, worker = assets.build_layer(assets.HOST), assets.build_worker(assets.HOST)
    modules = [
        "job_worker.handler",
        "mlflow",
        "mlflow.server.handlers",
        "mlflow.genai.scorers.job",
        "mlflow.genai.evaluation.job",
        "mlflow.genai.optimize.job",
        "mlflow.genai.discovery.job",
        "mlflow.genai.judges",
        "mlflow.server.jobs",
        "mlflow.demo",
        "mlflow.demo.generators.review_queues",
        "litellm",
        "gepa",
        "pandas",
    ]
    # Token counting runs litellm's tokenizers offline (tiktoken's files and Anthropic's, shipped in litellm).
    script = (
        "import importlib, sys\nfor name in sys.argv[1:]:\n    importlib.import_module(name)\n"
        "import litellm\nassert litellm.token_counter(model='gpt-4o-mini', text='hello world') > 0\n"
        "print(sys.modules['mlflow'].__file__)"
    )
    environment = {
        "PATH": os.environ.get("PATH", ""),
        "PYTHONPATH": f"{worker.path}:{layer.path / 'python'}",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    }
    result = subprocess.run([sys.executable, "-S", "-c", script, *modules], env=environment, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip().startswith(str(worker.path))


def test_building_twice_gives_the_same_bytes(tmp_path: Path) -> None:
    """Two installs of the layer's lock in different directories, at different times: the same content hash, so the
    same CDK asset hash (our code is copied by content; mtimes are fixed; no byte code, no console scripts). The
    first install is the cached one the layer is assembled from (made earlier, in build/assets), the second a fresh
    one here (one pip install instead of two)."""
    cached = assets.locked_dependencies("layer", assets.RUNTIME, assets.LAYER_PRUNED)
    first = tmp_path / "first"
    shutil.copytree(cached, first, ignore=shutil.ignore_patterns(assets.MANIFEST))
    second = tmp_path / "second"
    assets.install_locked("layer", assets.RUNTIME, second, assets.LAYER_PRUNED)
    assert assets.content_hash(first) == assets.content_hash(second)
    assert {path.stat().st_mtime for path in second.rglob("*")} == {assets.FIXED_MTIME}
    built = assets.build_layer(assets.RUNTIME)
    assert assets.content_hash(built.path) == built.hash
