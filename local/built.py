"""``LOCAL_ASSETS=built``: the local runtime runs the built assets instead of the source tree ("test what we ship").

The shared layer, the job worker's package and every function's asset are built for this machine from the same
lock files and recipes synth uses for Lambda (``infra/assets.py``: ``requirements/*.lock``, host wheels by hash,
the same pruning), then put first on ``sys.path`` in the order Lambda gives them (function code, then the layer)
while the source directories are taken off it. What the runtime itself needs (moto, DynamoDB Local's client) still
comes from the venv, and boto3 from the layer (pinned to the venv's version). ``check_loaded`` proves it:
every loaded module of our packages, and protobuf, comes from the built directories.

Must be activated before anything imports ``serverless_mlflow`` or a feature package (``local/__main__.py`` does it
first thing).
"""

from __future__ import annotations

import importlib.util
import os
import sys
from dataclasses import dataclass
from pathlib import Path

ENVIRONMENT = "LOCAL_ASSETS"
ROOT = Path(__file__).resolve().parent.parent
SOURCE_DIRS = (ROOT / "layers" / "shared" / "python", ROOT / "functions")
# Third-party packages the layer must provide itself (compiled for this machine), checked like our own.
LAYER_PACKAGES = ("google.protobuf", "google._upb", "aws_lambda_powertools", "boto3", "botocore")


def enabled() -> bool:
    return os.environ.get(ENVIRONMENT, "source").lower() == "built"


@dataclass(frozen=True)
class BuiltPaths:
    layer: Path
    worker: Path
    functions: dict[str, Path]

    @property
    def roots(self) -> list[Path]:
        return [*self.functions.values(), self.worker, self.layer]


def features() -> list[str]:
    return sorted(path.parent.name for path in (ROOT / "functions").glob("*/handler.py"))


def build() -> BuiltPaths:
    """Every asset, built for this machine (cached under build/assets/host)."""
    from infra import FUNCTIONS_DIR, assets, gateway_catalog

    assets.check_locks()
    layer = assets.build_layer(assets.HOST).path / "python"
    worker = assets.build_worker(assets.HOST).path
    functions: dict[str, Path] = {}
    for feature in features():
        if feature == assets.WORKER:
            continue
        if feature == gateway_catalog.GATEWAY_PACKAGE:
            functions[feature] = gateway_catalog.staged_function()
        elif feature == gateway_catalog.RUNTIME_PACKAGE:
            functions[feature] = gateway_catalog.staged_runtime()
        else:
            functions[feature] = assets.assemble(f"function-{feature}", assets.HOST, [(FUNCTIONS_DIR / feature, feature)]).path
    return BuiltPaths(layer, worker, functions)


def _wheel_ui_dir() -> Path:
    """The web UI's files (what the ui function's S3 bucket holds when deployed), found before the switch: the
    worker's mlflow-skinny, first on the path afterwards, has no UI build. Loaded by file so that no
    ``serverless_mlflow`` module from the source tree is imported."""
    spec = importlib.util.spec_from_file_location("_local_static_files", SOURCE_DIRS[0] / "serverless_mlflow" / "http" / "static_files.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return Path(module.wheel_build_dir())


def activate() -> BuiltPaths:
    already = [name for name in sys.modules if name.split(".")[0] == "serverless_mlflow" or name.split(".")[0] in features()]
    if already:
        raise RuntimeError(f"LOCAL_ASSETS=built must be set up before {already[0]} is imported")
    paths = build()
    # The builds are shared by later runs and tests (and their content is their cache key): no byte code in them.
    sys.dont_write_bytecode = True
    from infra import gateway_catalog

    os.environ.setdefault("UI_STATIC_DIR", str(_wheel_ui_dir()))
    os.environ.setdefault("GATEWAY_MODEL_CATALOG", str(gateway_catalog.staged_catalog()))
    os.environ.setdefault("GATEWAY_MODEL_PRICES", str(gateway_catalog.staged_prices()))
    sources = {str(path) for path in SOURCE_DIRS}
    sys.path[:] = [str(path) for path in paths.roots] + [entry for entry in sys.path if entry not in sources]
    importlib.invalidate_caches()
    return paths


def check_loaded(paths: BuiltPaths) -> list[str]:
    """Loaded modules of our packages (and the layer's compiled protobuf) that did not come from the built assets."""
    ours = {"serverless_mlflow", *features()}
    roots = tuple(str(root) + os.sep for root in paths.roots)
    outside = []
    for name, module in list(sys.modules.items()):
        if name.split(".")[0] in ours or name.startswith(LAYER_PACKAGES):
            origin = getattr(module, "__file__", None)
            if origin and not origin.startswith(roots):
                outside.append(f"{name} ({origin})")
    return sorted(outside)
