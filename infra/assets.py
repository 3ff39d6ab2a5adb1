"""Built assets: the shared layer and the job worker's package, installed from the lock files under ``requirements/``.

The locks (``python -m tools.locks`` writes them) pin every distribution with the sha256 of its wheel for two
targets: the Lambda runtime (arm64, ``RUNTIME_PYTHON``) and the host (this machine's Python, for the local
runtime's built mode and the tests). A build is ``pip install --no-deps --require-hashes --only-binary=:all:``
for the target's platform into a directory: compiled modules (protobuf's upb, wrapt) are those of the target's
wheels and ship. The result is deterministic (no byte code, no console scripts, fixed mtimes): its content hash
(paths and bytes) is the CDK asset hash, so building twice gives the same hashes.

Third-party files are cached per lock hash (``build/assets/<target>/<group>-deps-<hash>``); the asset directories
add our own code and are cached per content (``build/assets/<target>/<group>-<hash>``).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from infra import FUNCTIONS_DIR, LAYER_PYTHON_DIR, REQUIREMENTS_FILE, ROOT

LOCK_DIR = ROOT / "requirements"
ASSETS_DIR = ROOT / "build" / "assets"
# Lambda's Python (infra/constructs/functions.py RUNTIME; a test checks both agree).
RUNTIME_PYTHON = "3.14"
WORKER = "job_worker"
# Zip's earliest date: every built file gets it, so bytes alone decide what a zip of the asset holds.
FIXED_MTIME = 315619200  # 1980-01-02
MANIFEST = "asset.json"
# Part of every cache key: raise it when the way a build treats files changes (stripping, normalizing).
RECIPE_VERSION = 2


@dataclass(frozen=True)
class Target:
    name: str
    python: str  # "3.14"
    machine: str  # platform_machine: aarch64 | x86_64
    # The newest manylinux glibc the target runs (2, 28): pip is given every manylinux tag up to it, since it
    # does not expand one tag to the older ones (given only manylinux_2_28 it picks protobuf's pure-Python wheel).
    glibc: tuple[int, int]

    @property
    def marker_environment(self) -> dict[str, str]:
        return {
            "python_version": self.python,
            "python_full_version": f"{self.python}.0",
            "platform_machine": self.machine,
            "sys_platform": "linux",
            "platform_system": "Linux",
            "os_name": "posix",
            "implementation_name": "cpython",
            "platform_python_implementation": "CPython",
        }

    def marker(self) -> str:
        return f'platform_machine == "{self.machine}" and python_version == "{self.python}"'

    @property
    def platform(self) -> str:
        return f"manylinux_{self.glibc[0]}_{self.glibc[1]}_{self.machine}"

    def platforms(self) -> list[str]:
        tags = [f"manylinux_2_{minor}_{self.machine}" for minor in range(self.glibc[1], 4, -1)]
        legacy = {"manylinux2014": 17, "manylinux2010": 12, "manylinux1": 5}
        return tags + [f"{alias}_{self.machine}" for alias, minor in legacy.items() if minor <= self.glibc[1]]

    def pip_options(self) -> list[str]:
        platforms = [option for tag in self.platforms() for option in ("--platform", tag)]
        return [*platforms, "--python-version", self.python, "--implementation", "cp", "--only-binary=:all:"]


# Lambda's arm64 runtimes run Amazon Linux 2023 (glibc 2.34).
RUNTIME = Target("runtime", RUNTIME_PYTHON, "aarch64", (2, 28))
HOST = Target("host", f"{sys.version_info.major}.{sys.version_info.minor}", platform.machine(), (2, 28))
TARGETS = {target.name: target for target in (RUNTIME, HOST)}


@dataclass(frozen=True)
class Locked:
    name: str
    version: str
    hashes: tuple[str, ...]
    marker: str = ""

    def wanted_on(self, target: Target) -> bool:
        if not self.marker:
            return True
        from packaging.markers import Marker

        return Marker(self.marker).evaluate(target.marker_environment)

    def line(self) -> str:
        marker = f" ; {self.marker}" if self.marker else ""
        return " \\\n".join([f"{self.name}=={self.version}{marker}", *(f"    --hash=sha256:{digest}" for digest in self.hashes)])


def lock_path(group: str) -> Path:
    return LOCK_DIR / f"{group}.lock"


def read_lock(group: str) -> list[Locked]:
    """The entries of ``requirements/<group>.lock`` (pip's requirements format: ``name==version ; marker --hash=...``)."""
    path = lock_path(group)
    if not path.is_file():
        raise RuntimeError(f"{path.relative_to(ROOT)} is missing: run `python -m tools.locks` to write the lock files")
    entries = []
    for logical in path.read_text().replace("\\\n", " ").splitlines():
        line = logical.split("#", 1)[0].strip() if logical.lstrip().startswith("#") else logical.strip()
        if not line:
            continue
        requirement, *hashes = line.split("--hash=sha256:")
        spec, _, marker = requirement.partition(";")
        name, _, version = spec.strip().partition("==")
        entries.append(Locked(name.strip(), version.strip(), tuple(digest.strip() for digest in hashes), marker.strip()))
    return entries


def pinned_mlflow() -> str:
    """The project's mlflow (requirements-dev.txt; infra/constructs/web_ui.py reads the same pin)."""
    found = re.search(r"^mlflow==([^\s#;]+)", (ROOT / "requirements-dev.txt").read_text(), re.MULTILINE)
    if not found:
        raise RuntimeError("requirements-dev.txt must pin mlflow (mlflow==X)")
    return found.group(1)


def group_inputs(group: str) -> tuple[list[str], list[Path]]:
    """A lock group's requirement lines and the files they come from (their digest goes in the lock's header)."""
    if group == "layer":
        return [f"-r {REQUIREMENTS_FILE}"], [REQUIREMENTS_FILE]
    worker = FUNCTIONS_DIR / WORKER / "requirements.txt"
    return [f"mlflow-skinny=={pinned_mlflow()}", f"-r {worker}"], [worker]


def inputs_digest(group: str) -> str:
    requirements, files = group_inputs(group)
    digest = hashlib.sha256("\n".join(line for line in requirements if not line.startswith("-r")).encode())
    for path in files:
        digest.update(path.relative_to(ROOT).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def stale(group: str) -> bool:
    """A lock whose inputs changed since it was written (its header records their digest)."""
    path = lock_path(group)
    return not path.is_file() or f"(inputs {inputs_digest(group)})" not in path.read_text().split("\n", 1)[0]


def check_locks() -> None:
    """Synth stops on a lock older than its requirements: the assets would not be what the files say."""
    old = [lock_path(group).relative_to(ROOT).as_posix() for group in ("layer", WORKER) if stale(group)]
    if old:
        raise RuntimeError(f"{', '.join(old)} no longer match(es) the requirements files: run `make locks` (python -m tools.locks)")


def lock_hash(group: str) -> str:
    """The hash of what a lock pins (its comment lines aside)."""
    return hashlib.sha256("\n".join(entry.line() for entry in read_lock(group)).encode()).hexdigest()


def content_hash(root: Path) -> str:
    """sha256 over every file's path (relative, sorted) and bytes: what the asset holds, never when it was made."""
    digest = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        digest.update(str(path.relative_to(root)).encode() + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def tree_bytes(root: Path) -> int:
    return sum(path.stat().st_size for path in root.rglob("*") if path.is_file() and not path.is_symlink())


def normalize(root: Path, pruned: tuple[str, ...] = ()) -> None:
    """No byte code, no console scripts (their shebang names this machine's Python), fixed mtimes."""
    for pattern in ("bin", *pruned):
        for path in list(root.glob(pattern)):
            shutil.rmtree(path) if path.is_dir() else path.unlink()
    for path in list(root.rglob("__pycache__")):
        shutil.rmtree(path, ignore_errors=True)
    for path in list(root.rglob("*.py[co]")):
        path.unlink()
    for path in sorted(root.rglob("*"), reverse=True):
        os.utime(path, (FIXED_MTIME, FIXED_MTIME), follow_symlinks=False)
    os.utime(root, (FIXED_MTIME, FIXED_MTIME))


@contextmanager
def _exclusive(name: str) -> Iterator[None]:
    """One builder at a time per target (pytest-xdist workers may ask for the same build together)."""
    ASSETS_DIR.mkdir(parents=True, exist_ok=True)
    with open(ASSETS_DIR / f".{name}.lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def strip_native(root: Path) -> None:
    """Debug and symbol tables out of the ELF files (``llvm-strip --strip-unneeded``: any architecture; the dynamic
    symbols modules link by stay), a third of their size. Not the libraries auditwheel repaired (a package with a
    ``<name>.libs`` directory): patchelf rewrote their headers, and a stripped copy no longer loads ("ELF load command
    address/offset not page-aligned", numpy's)."""
    tool = shutil.which("llvm-strip")
    if tool is None:
        raise RuntimeError("llvm-strip is missing (it strips the job worker's arm64 libraries): `apt-get install llvm`")
    repaired = {path.name.removesuffix(".libs") for path in root.glob("*.libs")} | {path.name for path in root.glob("*.libs")}
    native = sorted(
        str(path)
        for path in root.rglob("*.so*")
        if path.is_file() and path.relative_to(root).parts[0] not in repaired and path.read_bytes()[:4] == b"\x7fELF"
    )
    for start in range(0, len(native), 200):
        subprocess.run([tool, "--strip-unneeded", *native[start : start + 200]], check=True)


def keep_only(directory: Path, names: tuple[str, ...]) -> None:
    """Of ``directory``'s subdirectories, only ``names`` stay (its files stay too)."""
    for child in directory.iterdir():
        if child.is_dir() and child.name not in names:
            shutil.rmtree(child)


def install_locked(group: str, target: Target, destination: Path, pruned: tuple[str, ...] = (), strip: bool = False) -> None:
    """The lock's wheels for ``target``, by hash, without resolving anything, into ``destination``."""
    entries = [entry for entry in read_lock(group) if entry.wanted_on(target)]
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as requirements:
        requirements.write("\n".join(entry.line() for entry in entries) + "\n")
    try:
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
                "--no-deps",
                "--require-hashes",
                "--no-compile",
                "--target",
                str(destination),
                *target.pip_options(),
                "-r",
                requirements.name,
            ],
            capture_output=True,
            text=True,
            check=False,
        )
    finally:
        os.unlink(requirements.name)
    if done.returncode != 0:
        # pip's own words (a hash mismatch, a wheel missing for the platform), not this machine's index warnings.
        errors = [line for line in done.stderr.splitlines() if "is ignored: it is neither a file nor a directory" not in line]
        raise RuntimeError(f"building {group} for {target.name} failed (pip exit {done.returncode}):\n" + "\n".join(errors[-40:]))
    if strip:
        strip_native(destination)
    if group == "layer":
        keep_only(destination / "botocore" / "data", BOTOCORE_SERVICES)
    normalize(destination, pruned)


def locked_dependencies(group: str, target: Target, pruned: tuple[str, ...] = (), strip: bool = False) -> Path:
    """The third-party files of a lock for a target, installed once per lock hash (and recipe)."""
    recipe = hashlib.sha256((lock_hash(group) + json.dumps([RECIPE_VERSION, pruned, strip, BOTOCORE_SERVICES])).encode()).hexdigest()
    directory = ASSETS_DIR / target.name / f"{group}-deps-{recipe[:16]}"
    with _exclusive(f"{target.name}-{group}"):
        if not (directory / MANIFEST).is_file():
            _remove_older(directory, f"{group}-deps-*")
            staging = directory.with_name(directory.name + ".partial")
            shutil.rmtree(staging, ignore_errors=True)
            install_locked(group, target, staging, pruned, strip)
            (staging / MANIFEST).write_text(json.dumps({"lock": lock_hash(group), "target": target.name}) + "\n")
            shutil.rmtree(directory, ignore_errors=True)
            staging.rename(directory)
    return directory


def _remove_older(directory: Path, siblings: str) -> None:
    """Builds of earlier locks or sources: the cache keeps the newest only (the worker is hundreds of MB)."""
    for old in directory.parent.glob(siblings):
        if old.name.removesuffix(".json") == directory.name or ("-deps-" in old.name) != ("-deps-" in directory.name):
            continue
        shutil.rmtree(old, ignore_errors=True) if old.is_dir() else old.unlink(missing_ok=True)


def _package_files(source: Path) -> list[Path]:
    return sorted(
        path
        for path in source.rglob("*")
        if path.is_file() and "__pycache__" not in path.parts and path.suffix not in (".pyc", ".pyo") and path.name != "requirements.txt"
    )


@dataclass(frozen=True)
class BuiltAsset:
    path: Path
    hash: str
    bytes: int


def assemble(name: str, target: Target, parts: list[tuple[Path, str]], deps: Path | None = None, deps_prefix: str = "") -> BuiltAsset:
    """An asset directory: ``deps`` (hard-linked from the cache) under ``deps_prefix`` plus our packages, keyed by
    content. ``parts``: (source package directory, path of its copy inside the asset).
    """
    digest = hashlib.sha256((deps.name if deps else "").encode())
    for source, relative in parts:
        for path in _package_files(source):
            digest.update(f"{relative}/{path.relative_to(source)}".encode() + b"\0" + hashlib.sha256(path.read_bytes()).digest())
    directory = ASSETS_DIR / target.name / f"{name}-{digest.hexdigest()[:16]}"
    manifest = directory.with_name(directory.name + ".json")
    with _exclusive(f"{target.name}-{name}-assemble"):
        if not manifest.is_file():
            _remove_older(directory, f"{name}-*")
            staging = directory.with_name(directory.name + ".partial")
            shutil.rmtree(staging, ignore_errors=True)
            staging.mkdir(parents=True)
            if deps is not None:
                shutil.copytree(
                    deps, staging / deps_prefix, copy_function=os.link, dirs_exist_ok=True, ignore=shutil.ignore_patterns(MANIFEST)
                )
            for source, relative in parts:
                for path in _package_files(source):
                    copy = staging / relative / path.relative_to(source)
                    copy.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copyfile(path, copy)
            normalize(staging)
            shutil.rmtree(directory, ignore_errors=True)
            staging.rename(directory)
            manifest.write_text(json.dumps({"hash": content_hash(directory), "bytes": tree_bytes(directory)}) + "\n")
    recorded = json.loads(manifest.read_text())
    return BuiltAsset(directory, recorded["hash"], recorded["bytes"])


# Files no worker code path loads, left out for the size budget: the libraries' own test suites (a third of
# pandas); litellm's proxy admin UI and Swagger assets (static files its proxy server serves; the SDK MLflow calls
# never reads them); type stubs and C headers (read by type checkers and compilers, never imported); numpy's f2py
# (a Fortran wrapper generator); the optional C accelerators of packages that fall back to their pure-Python code
# when the module is absent (5 MB: SQLAlchemy's, which the worker imports but never queries with; aiohttp's and its
# helpers', for a job's few HTTP calls; PyYAML's CLoader).
WORKER_PRUNED = (
    "pandas/tests",
    "numpy/*/tests",
    "numpy/tests",
    "numpy/f2py",
    "numpy/_core/include",
    "litellm/proxy/_experimental/out",
    "litellm/proxy/swagger",
    "**/*.pyi",
    "**/*.pxd",
    "**/*.pyx",
    "sqlalchemy/**/*.so",
    "aiohttp/**/*.so",
    "yarl/*.so",
    "multidict/*.so",
    "frozenlist/*.so",
    "propcache/*.so",
    "yaml/*.so",
    # MLflow's schema migrations: read only when an SQL store is created, which the worker never does (SQLAlchemy's
    # dialects stay: MLflow's SQL models import MSSQL types); documentation files; the installers' file lists
    # (RECORD: pip uninstall reads them, an import never does).
    "mlflow/store/db_migrations",
    "mlflow/**/*.md",
    "litellm/**/*.md",
    "*.dist-info/RECORD",
)


# botocore's API examples (2.6 MB): read only when botocore writes documentation (botocore.docs), never by a client.
LAYER_PRUNED = ("botocore/data/*/*/examples-1.json",)
# The AWS services whose API models the layer keeps (botocore/data: 26 MB for 480 services; these take 2 MB, and
# the rest would keep the job worker over its budget). The functions' own clients (a test reads every
# ``boto3.client("...")`` of layers/ and functions/ and fails on one missing here), what the worker's libraries call
# on AWS (MLflow's S3 artifacts, litellm's Bedrock and SageMaker providers), the credential providers' (STS, SSO),
# and the observability services. A service missing here fails with botocore's UnknownServiceError.
BOTOCORE_SERVICES = (
    "bedrock",
    "bedrock-agent-runtime",
    "bedrock-runtime",
    "cloudwatch",
    "dynamodb",
    "dynamodbstreams",
    "events",
    "kms",
    "lambda",
    "logs",
    "s3",
    "sagemaker-runtime",
    "secretsmanager",
    "signin",
    "sns",
    "sqs",
    "ssm",
    "sso",
    "sso-oidc",
    "sts",
    "xray",
)


def build_layer(target: Target = RUNTIME) -> BuiltAsset:
    """The layer's directory (``python/``: our ``serverless_mlflow`` + the layer lock's wheels for ``target``)."""
    deps = locked_dependencies("layer", target, LAYER_PRUNED)
    return assemble("layer", target, [(LAYER_PYTHON_DIR / "serverless_mlflow", "python/serverless_mlflow")], deps, "python")


# Stand-ins for left-out distributions whose absence MLflow cannot take (each explains itself).
WORKER_SHIMS = Path(__file__).resolve().parent / "worker_shims"


def build_worker(target: Target = RUNTIME) -> BuiltAsset:
    """The job worker's code directory: its package + the worker lock's wheels (what the layer lacks) for ``target``."""
    deps = locked_dependencies(WORKER, target, WORKER_PRUNED, strip=True)
    return assemble(WORKER, target, [(FUNCTIONS_DIR / WORKER, WORKER), (WORKER_SHIMS / "databricks", "databricks")], deps)
