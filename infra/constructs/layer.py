"""The one shared Lambda layer: ``layers/shared/python`` plus vendored third-party packages.

The third-party packages of ``requirements.txt`` (minus boto3 and what the Lambda runtime already ships)
are copied at synth time from the distributions installed in the current venv, found through
``importlib.metadata``. No Docker, no network, no pip: they are pure Python, so the files of the venv
are the files Lambda needs. Compiled extensions (``*.so``) are left out: they are built for this
machine, not for arm64 Lambda, and the only one in the closure (wrapt's) has a pure-Python fallback.
"""

from __future__ import annotations

import hashlib
import importlib.metadata as metadata
import re
import shutil
from collections.abc import Iterable
from pathlib import Path

import jsii
from aws_cdk import AssetHashType, BundlingOptions, DockerImage, ILocalBundling
from aws_cdk import aws_lambda as lambda_
from constructs import Construct
from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from infra import LAYER_DIR, LAYER_PYTHON_DIR, REQUIREMENTS_FILE

# Provided by every Lambda Python runtime (boto3 and its own dependency closure).
RUNTIME_PROVIDED: frozenset[str] = frozenset(
    canonicalize_name(name) for name in ("boto3", "botocore", "s3transfer", "jmespath", "urllib3", "python-dateutil", "six")
)
_SKIP_DIRS = {"__pycache__"}
_SKIP_SUFFIXES = (".pyc", ".pyo", ".so", ".pyd")


def _skipped(relative: Path) -> bool:
    return any(part in _SKIP_DIRS for part in relative.parts) or relative.name.endswith(_SKIP_SUFFIXES)


def top_level_requirements(requirements_file: Path = REQUIREMENTS_FILE) -> list[Requirement]:
    """Requirement lines of requirements.txt (no options, no includes)."""
    out = []
    for raw in requirements_file.read_text().splitlines():
        line = raw.split("#", 1)[0].strip()
        if line and not line.startswith("-"):
            out.append(Requirement(line))
    return out


def vendored_distributions(requirements: Iterable[Requirement] | None = None, target_python: str = "3.14") -> list[metadata.Distribution]:
    """The installed distributions the layer must carry: the requirements' closure minus RUNTIME_PROVIDED.

    Markers are evaluated for the Lambda runtime's Python (``target_python``), so e.g.
    ``typing-extensions; python_version < '3.12'`` is judged for Lambda, not for this venv.
    """
    environment = {**default_environment(), "python_version": target_python, "python_full_version": f"{target_python}.0"}
    seen: dict[str, metadata.Distribution] = {}
    pending: list[tuple[Requirement, tuple[str, ...]]] = [
        (req, tuple(sorted(req.extras))) for req in (requirements or top_level_requirements())
    ]
    while pending:
        requirement, extras = pending.pop()
        name = canonicalize_name(requirement.name)
        if name in RUNTIME_PROVIDED:
            continue
        try:
            distribution = metadata.distribution(requirement.name)
        except metadata.PackageNotFoundError:
            raise RuntimeError(f"{requirement.name} is not installed in this venv: run `make venv` before synth") from None
        first_visit = name not in seen
        seen[name] = distribution
        for dependency in (Requirement(spec) for spec in distribution.requires or []):
            if dependency.marker is None:
                wanted = first_visit
            else:
                # A dependency behind an extra is wanted only for the extras requested of this distribution.
                wanted = any(dependency.marker.evaluate({**environment, "extra": extra}) for extra in extras) or (
                    first_visit and dependency.marker.evaluate({**environment, "extra": ""})
                )
            if wanted and canonicalize_name(dependency.name) not in seen:
                pending.append((dependency, tuple(sorted(dependency.extras))))
    return sorted(seen.values(), key=lambda dist: canonicalize_name(dist.metadata["Name"]))


def _distribution_files(distribution: metadata.Distribution) -> list[tuple[Path, Path]]:
    """(source, path relative to site-packages) of every file of a distribution that belongs in the layer."""
    out = []
    for entry in distribution.files or []:
        relative = Path(str(entry))
        # Console scripts live outside site-packages (../../../bin/...); Lambda code never runs them.
        if ".." in relative.parts or relative.is_absolute() or _skipped(relative):
            continue
        source = Path(str(distribution.locate_file(entry)))
        if source.is_file():
            out.append((source, relative))
    return out


def _tree_files(root: Path) -> list[tuple[Path, Path]]:
    return sorted((path, path.relative_to(root)) for path in root.rglob("*") if path.is_file() and not _skipped(path.relative_to(root)))


def layer_files(distributions: list[metadata.Distribution]) -> list[tuple[Path, Path]]:
    """Everything the layer's ``python/`` directory holds: our package, then the vendored distributions."""
    files = _tree_files(LAYER_PYTHON_DIR)
    for distribution in distributions:
        files.extend(_distribution_files(distribution))
    return files


def layer_asset_hash(files: list[tuple[Path, Path]]) -> str:
    """Content hash of the layer (paths + bytes), so CDK reuses a bundle until something changes."""
    digest = hashlib.sha256()
    for source, relative in sorted(files, key=lambda pair: str(pair[1])):
        digest.update(str(relative).encode())
        digest.update(b"\0")
        digest.update(hashlib.sha256(source.read_bytes()).digest())
    return digest.hexdigest()


@jsii.implements(ILocalBundling)
class VendoringBundler:
    """Local bundling: copies the layer files into ``<output>/python``; never falls back to Docker."""

    def __init__(self, files: list[tuple[Path, Path]]) -> None:
        self._files = files

    def try_bundle(self, output_dir: str, *, image: DockerImage, **_: object) -> bool:
        target = Path(output_dir) / "python"
        for source, relative in self._files:
            destination = target / relative
            destination.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, destination)
        return True


class SharedLayer(Construct):
    def __init__(self, scope: Construct, construct_id: str, *, runtime: lambda_.Runtime, architecture: lambda_.Architecture) -> None:
        super().__init__(scope, construct_id)
        target_python = re.sub(r"^python", "", runtime.name)
        self.distributions = vendored_distributions(target_python=target_python)
        files = layer_files(self.distributions)
        self.layer = lambda_.LayerVersion(
            self,
            "Layer",
            # Lambda caps layer descriptions at 256 characters.
            description=("serverless_mlflow + " + ", ".join(f"{d.metadata['Name']}=={d.version}" for d in self.distributions))[:256],
            code=lambda_.Code.from_asset(
                str(LAYER_DIR),
                asset_hash_type=AssetHashType.CUSTOM,
                asset_hash=layer_asset_hash(files),
                bundling=BundlingOptions(
                    local=VendoringBundler(files),
                    # Required by the API but never used: local bundling always succeeds.
                    image=DockerImage.from_registry("unused"),
                ),
            ),
            compatible_runtimes=[runtime],
            compatible_architectures=[architecture],
        )
