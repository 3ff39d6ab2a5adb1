"""Write the lock files the built assets install from (``requirements/<group>.lock``, pip's format with hashes).

    python -m tools.locks            # resolve again and write both locks
    python -m tools.locks --check    # exit 1 when a lock no longer matches its inputs (a requirement was edited)

Groups: ``layer`` (``requirements.txt``: the functions' packages, boto3 included, so Lambda runs the boto3 the
tests run) and ``job_worker`` (mlflow-skinny at the project's mlflow pin + ``functions/job_worker/requirements.txt``,
resolved with the layer's pins as constraints and without what the layer already carries: one copy of each
distribution, so nothing in the worker shadows the layer).

Each group is resolved by pip (``install --dry-run --report``, no install) for the Lambda runtime (arm64, its
Python, binary wheels only) and then for the host (this Python and machine) constrained to the same versions, and
every entry records the sha256 of the wheels of both targets. A distribution only one target needs carries a marker
naming that target. No pip-tools: pip's own resolver and its report are enough.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from urllib.parse import unquote, urlparse

from packaging.utils import canonicalize_name

from infra import ROOT
from infra.assets import HOST, RUNTIME, WORKER, Locked, Target, group_inputs, inputs_digest, lock_path, read_lock, stale

# Left out of the worker on purpose (its size budget: 200 MiB with the layer). hf-xet: huggingface_hub's optional
# Xet download backend (a 10 MB native library); tokenizers' hub downloads fall back to HTTP when it is not
# installed at all, dist-info included. databricks-sdk and what only it needs (google-auth, pyasn1*; 11 MB): mlflow
# imports it only to talk to Databricks, which the worker never does (its tracking URI is this stack's API; an
# empty ``databricks`` package stands in, infra/worker_shims). huggingface-hub and what only it needs (filelock,
# fsspec, tqdm; 6 MB): tokenizers requires it for Tokenizer.from_pretrained, which litellm calls only for Hugging
# Face models' token counts (it falls back to tiktoken). gitpython (gitdb, smmap): mlflow records a run's git commit
# only when the code runs from a checkout. tests/infra/test_built_assets.py imports every worker kind from the
# built package alone.
EXCLUDED = {
    WORKER: {
        "hf-xet",
        "databricks-sdk",
        "google-auth",
        "pyasn1",
        "pyasn1-modules",
        "huggingface-hub",
        "filelock",
        "fsspec",
        "tqdm",
        "gitpython",
        "gitdb",
        "smmap",
    }
}
Pins = dict[str, tuple[str, str]]  # canonical name -> (version, sha256 of the wheel)


def _wheel_sha256(item: dict) -> str:
    info = item["download_info"]
    digest = info.get("archive_info", {}).get("hashes", {}).get("sha256")
    if digest:
        return digest
    url = urlparse(info["url"])
    if url.scheme == "file":  # a local wheel directory (find-links) publishes no hash: hash its bytes
        return hashlib.sha256(Path(unquote(url.path)).read_bytes()).hexdigest()
    raise RuntimeError(f"no sha256 for {info['url']}")


def resolve(target: Target, requirements: list[str], constraints: Pins | None = None) -> Pins:
    """What pip installs for ``requirements`` on ``target`` (dependencies included), with each wheel's hash."""
    with tempfile.TemporaryDirectory() as work:
        directory = Path(work)
        (directory / "in.txt").write_text("\n".join(requirements) + "\n")
        (directory / "constraints.txt").write_text(
            "".join(f"{name}=={version}\n" for name, (version, _) in sorted((constraints or {}).items()))
        )
        command = [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--dry-run", "--ignore-installed"]
        command += ["--report", str(directory / "report.json"), "--target", str(directory / "target"), *target.pip_options()]
        command += ["-r", str(directory / "in.txt"), "-c", str(directory / "constraints.txt")]
        done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise SystemExit(f"pip could not resolve {' '.join(requirements)} for the {target.name}:\n{done.stderr[-4000:]}")
        report = json.loads((directory / "report.json").read_text())
    return {canonicalize_name(item["metadata"]["name"]): (item["metadata"]["version"], _wheel_sha256(item)) for item in report["install"]}


def merge(runtime: Pins, host: Pins) -> list[Locked]:
    entries = []
    for name in sorted({*runtime, *host}):
        if name in runtime and name in host and runtime[name][0] != host[name][0]:
            raise RuntimeError(f"{name}: {runtime[name][0]} on the runtime but {host[name][0]} on the host")
        version = (runtime.get(name) or host[name])[0]
        hashes = tuple(sorted({pins[name][1] for pins in (runtime, host) if name in pins}))
        marker = "" if name in runtime and name in host else (RUNTIME if name in runtime else HOST).marker()
        entries.append(Locked(name, version, hashes, marker))
    return entries


def header(group: str) -> str:
    requirements, files = group_inputs(group)
    sources = [line for line in requirements if not line.startswith("-r")] + [p.relative_to(ROOT).as_posix() for p in files]
    return (
        f"# {group}: generated by `python -m tools.locks` from {', '.join(sources)} (inputs {inputs_digest(group)}); do not edit.\n"
        f"# Targets: runtime = cp{RUNTIME.python.replace('.', '')} {RUNTIME.platform}; host = cp{HOST.python.replace('.', '')} {HOST.platform}.\n"
    )


def _pins_of(entries: list[Locked], target: Target) -> Pins:
    return {canonicalize_name(e.name): (e.version, "") for e in entries if e.wanted_on(target)}


def write(group: str) -> list[Locked]:
    requirements, _ = group_inputs(group)
    layer = read_lock("layer") if group != "layer" else []
    runtime_constraints, host_constraints = _pins_of(layer, RUNTIME), _pins_of(layer, HOST)
    runtime = resolve(RUNTIME, requirements, runtime_constraints)
    host = resolve(HOST, requirements, {**host_constraints, **runtime})
    dropped = EXCLUDED.get(group, set())
    entries = [
        e for e in merge(runtime, host) if e.name not in dropped and e.name not in runtime_constraints and e.name not in host_constraints
    ]
    lock_path(group).parent.mkdir(exist_ok=True)
    lock_path(group).write_text(header(group) + "".join(entry.line() + "\n" for entry in entries))
    return entries


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="fail when a lock does not match its inputs")
    parser.add_argument("groups", nargs="*", default=["layer", WORKER])
    args = parser.parse_args()
    if args.check:
        old = [group for group in args.groups if stale(group)]
        if old:
            sys.exit(f"stale lock files: {', '.join(old)} (run `python -m tools.locks`)")
        return
    for group in args.groups:
        print(f"{lock_path(group).relative_to(ROOT)}: {len(write(group))} distributions")


if __name__ == "__main__":
    main()
