"""The one shared Lambda layer: ``layers/shared/python`` plus the third-party packages of ``requirements/layer.lock``.

Synth builds it (``infra/assets.py``): the lock's wheels for Lambda's arm64 Python, by hash, binary wheels only,
so compiled modules ship (protobuf's upb parser, wrapt) and boto3 is the version the tests run, not whichever the
runtime carries. The asset hash is the content hash of what is built: building twice gives the same hash.
"""

from __future__ import annotations

import re

from aws_cdk import AssetHashType
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from infra import assets


def check_runtime(runtime: lambda_.Runtime) -> None:
    """The locks are resolved for ``assets.RUNTIME_PYTHON``: a function runtime of another Python stops synth."""
    python = re.sub(r"^python", "", runtime.name)
    if python != assets.RUNTIME_PYTHON:
        raise RuntimeError(
            f"the functions run {runtime.name} but the lock files target Python {assets.RUNTIME_PYTHON}: change infra/assets.py RUNTIME_PYTHON and run `make locks`"
        )


def built_code(built: assets.BuiltAsset) -> lambda_.Code:
    return lambda_.Code.from_asset(str(built.path), asset_hash_type=AssetHashType.CUSTOM, asset_hash=built.hash)


class SharedLayer(Construct):
    def __init__(self, scope: Construct, construct_id: str, *, runtime: lambda_.Runtime, architecture: lambda_.Architecture) -> None:
        super().__init__(scope, construct_id)
        check_runtime(runtime)
        assets.check_locks()
        self.built = assets.build_layer(assets.RUNTIME)
        self.distributions = [entry for entry in assets.read_lock("layer") if entry.wanted_on(assets.RUNTIME)]
        self.layer = lambda_.LayerVersion(
            self,
            "Layer",
            # Lambda caps layer descriptions at 256 characters.
            description=("serverless_mlflow + " + ", ".join(f"{entry.name}=={entry.version}" for entry in self.distributions))[:256],
            code=built_code(self.built),
            compatible_runtimes=[runtime],
            compatible_architectures=[architecture],
        )
