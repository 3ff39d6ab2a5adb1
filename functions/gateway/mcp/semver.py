"""SemVer 2.0.0 versions of MCP servers, as MLflow parses and orders them (``mlflow.utils.semver_utils``).

A version's ``sort_key`` is MLflow's SQL ordering columns: (major, minor, patch, prerelease sort key), the
last one an order-preserving string encoding of the prerelease identifiers.
"""

from __future__ import annotations

import re
from typing import Any

from serverless_mlflow.core.errors import invalid

_MAX_LENGTH = 128
_MAX_CORE_VALUE = 2_147_483_647
_RELEASE_KEY = "2"
_SEMVER = re.compile(
    r"^(?P<major>0|[1-9][0-9]*)"
    r"\.(?P<minor>0|[1-9][0-9]*)"
    r"\.(?P<patch>0|[1-9][0-9]*)"
    r"(?:-(?P<prerelease>(?:0|[1-9][0-9]*|[0-9]*[A-Za-z-][0-9A-Za-z-]*)"
    r"(?:\.(?:0|[1-9][0-9]*|[0-9]*[A-Za-z-][0-9A-Za-z-]*))*))?"
    r"(?:\+(?P<buildmetadata>[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?$"
)


def sort_key(version: Any, param_name: str = "version") -> list[Any]:
    """[major, minor, patch, prerelease key] of a version; MLflow's errors for one that is not SemVer."""
    if not isinstance(version, str):
        raise invalid(f"Invalid semantic version for {param_name}: {version!r}")
    if len(version) > _MAX_LENGTH:
        raise invalid(f"Invalid semantic version for {param_name}: '{version}' (maximum length is {_MAX_LENGTH} characters)")
    found = _SEMVER.fullmatch(version)
    if not found:
        raise invalid(f"Invalid semantic version for {param_name}: '{version}'")
    core = [int(found.group(part)) for part in ("major", "minor", "patch")]
    for label, value in zip(("major", "minor", "patch"), core, strict=True):
        if value > _MAX_CORE_VALUE:
            raise invalid(f"Invalid semantic version for {param_name}: '{version}' ({label} must be <= {_MAX_CORE_VALUE})")
    prerelease = found.group("prerelease")
    return [*core, _prerelease_key(prerelease.split(".")) if prerelease else _RELEASE_KEY]


def _prerelease_key(identifiers: list[str]) -> str:
    # Numeric identifiers as 0<length><digits>, text ones as 1<3-digit code points>000: plain string order
    # is SemVer precedence, and a release ("2") sorts above every prerelease.
    parts = []
    for identifier in identifiers:
        if identifier.isdigit():
            parts.append(f"0{len(identifier):03d}{identifier}")
        else:
            parts.append("1" + "".join(f"{ord(char):03d}" for char in identifier) + "000")
    return "".join(parts)
