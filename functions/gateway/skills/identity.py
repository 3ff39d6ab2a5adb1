"""Skill identities (``organization``/``name``), version numbers, aliases and tags, checked as MLflow's
``mlflow.utils.validation`` checks them for the skill registry."""

from __future__ import annotations

import re
from typing import Any

from serverless_mlflow.core.errors import invalid
from serverless_mlflow.core.validation.common import validate_length_limit
from serverless_mlflow.core.validation.registry import (
    validate_model_alias_name,
    validate_model_alias_name_reserved,
    validate_registered_model_tag,
)

MAX_NAME_LENGTH = 64
MAX_VERSION = 2_147_483_647
_NAME = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
_ORGANIZATION = re.compile(r"^[a-z0-9]+([-.][a-z0-9]+)*$")


def validate_name(name: Any) -> None:
    if not name:
        raise invalid("Skill name must not be empty.")
    if _NAME.fullmatch(name) is None:
        raise invalid(
            f"Invalid skill name {name!r}. Names must be 1-64 lowercase ASCII letters, digits, and hyphens; cannot "
            "begin or end with a hyphen; and cannot contain consecutive hyphens."
        )
    validate_length_limit("Skill name", MAX_NAME_LENGTH, name)


def validate_organization(organization: Any) -> None:
    if organization == "":
        return
    if not isinstance(organization, str) or _ORGANIZATION.fullmatch(organization) is None:
        raise invalid(
            f"Invalid organization name {organization!r}. Organizations must be 1-64 lowercase ASCII letters, digits, "
            "hyphens, and periods; must have alphanumeric first and last characters; and cannot contain consecutive "
            "hyphens or periods."
        )
    validate_length_limit("Organization name", MAX_NAME_LENGTH, organization)


def validate(organization: str, name: str) -> None:
    """``_validate_skill_path_identity``: the organization first, then the name."""
    validate_organization(organization)
    validate_name(name)


def validate_version(version: Any) -> None:
    if isinstance(version, bool) or not isinstance(version, int) or not 1 <= version <= MAX_VERSION:
        raise invalid(f"Skill version must be a positive integer <= {MAX_VERSION}, got {version!r}.")


def validate_alias(alias: str) -> None:
    validate_model_alias_name(alias, resource_type="Skill")
    validate_model_alias_name_reserved(alias)


def validate_tag(key: str, value: str) -> None:
    validate_registered_model_tag(key, value)


def parse_identities(identities: list[str] | None) -> list[tuple[str, str]] | None:
    """``_parse_skill_identities``: ``name`` or ``@organization/name`` selectors of a search."""
    if identities is None:
        return None
    out = []
    for identity in identities:
        organization, name = "", identity
        if identity.startswith("@"):
            organization, separator, name = identity[1:].partition("/")
            if not separator or not organization:
                raise invalid("Skill identities must be 'name' or '@organization/name'.")
        validate_organization(organization)
        validate_name(name)
        out.append((organization, name))
    return out
