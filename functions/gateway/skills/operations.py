"""The skill registry's routes (``/api/3.0/mlflow/skills/...``, MLflow's ``skill_registry_api``): read the path
and body as its FastAPI models do, call one domain function, answer its response model's JSON.

Every route but create, search and bulk-register has an ``@organization`` twin: the same operation on a skill
of that organization (the unprefixed route names the default organization, ``""``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from serverless_mlflow.core.errors import invalid
from serverless_mlflow.http.api import Request

from . import identity, skills, versions, wire

Operation = Callable[[Request], dict[str, Any]]

_CREATE_SKILL = wire.Model({"name": "str", "organization": "str", "description": "str?", "icons": "icons?"}, required=("name",))
_UPDATE_SKILL = wire.Model({"description": "str?", "icons": "icons?"})
_SET_ALIAS = wire.Model({"alias": "str", "version": "int"}, required=("alias", "version"))
_SET_TAG = wire.Model({"key": "str", "value": "str"}, required=("key", "value"))
_UPDATE_VERSION = wire.Model({"status": "str?"})
_REGISTRATION = ("name", "organization", "source_type", "source", "ref", "subpath", "digest", "status")
_BULK = wire.Model({"organization": "str", "skills": "list"}, required=("skills",))
_BULK_SKILL = wire.Model(
    {"name": "str", "source_type": "str?", "source": "str", "ref": "str?", "subpath": "str?", "digest": "str", "status": "str"},
    required=("name", "source", "digest"),
)


def _caller(req: Request) -> str | None:
    """``request.state.username``: set by MLflow's auth app, None without it."""
    return getattr(req.identity, "username", None) if req.identity is not None else None


def _organization(req: Request) -> str:
    return wire.path(req, "organization") if "organization" in req.path_params else ""


def _identity(req: Request) -> tuple[str, str]:
    return _organization(req), wire.path_name(req)


def _icons(data: dict[str, Any], parsed: dict[str, Any]) -> Any:
    return wire.icons(data) if parsed.get("icons") is not None else parsed.get("icons", skills.UNSET)


# --- skills ------------------------------------------------------------------------------------------------


def create_skill(req: Request) -> dict[str, Any]:
    data = wire.body(req)
    parsed = _CREATE_SKILL.parse(data)
    icons = _icons(data, parsed)
    organization, name = parsed.get("organization", ""), parsed["name"]
    identity.validate(organization, name)
    return skills.create(organization, name, parsed.get("description"), None if icons is skills.UNSET else icons, _caller(req))


def search_skills(req: Request) -> dict[str, Any]:
    params = wire.search_params(req)
    if params["include_skill_identities"] == [""]:
        params["include_skill_identities"] = []
    return skills.search_skills(params)


def get_skill(req: Request) -> dict[str, Any]:
    return skills.get(*_identity(req))


def update_skill(req: Request) -> dict[str, Any]:
    organization, name = _identity(req)
    data = wire.body(req)
    parsed = _UPDATE_SKILL.parse(data)
    return skills.update(organization, name, parsed.get("description", skills.UNSET), _icons(data, parsed), _caller(req))


def delete_skill(req: Request) -> dict[str, Any]:
    skills.delete(*_identity(req))
    return {}


def set_skill_tag(req: Request) -> dict[str, Any]:
    organization, name = _identity(req)
    parsed = _SET_TAG.parse(wire.body(req))
    skills.set_tag(organization, name, parsed["key"], parsed["value"])
    return {}


def delete_skill_tag(req: Request) -> dict[str, Any]:
    organization, name = _identity(req)
    skills.delete_tag(organization, name, wire.path(req, "key"))
    return {}


# --- versions -------------------------------------------------------------------------------------------------


def _registration(req: Request, organization: str, name: str) -> versions.Registration:
    """``_parse_registration_request`` and ``_registration_from_metadata`` for a JSON body."""
    content_type = wire.content_type(req)
    if content_type == "multipart/form-data":
        # Uploaded content (a local skill folder) would be stored under the run artifacts' bucket; not served yet.
        raise invalid(
            "Uploading skill content (multipart/form-data) is not supported by this server yet. Register the skill "
            "from a git, oci, or zip source instead."
        )
    if content_type != "application/json":
        raise invalid("Skill registration requires an application/json or multipart/form-data request.")
    data = wire.body_or_none(req)
    if data is None:
        raise invalid("The request body must contain a valid JSON object.")
    if not isinstance(data, dict):
        raise wire.pydantic_errors(
            "CreateSkillVersionRequest",
            [("", "Input should be a valid dictionary or instance of CreateSkillVersionRequest", "model_type", data)],
        )
    errors = [
        (field, "Input should be a valid string", "string_type", data[field])
        for field in _REGISTRATION
        if field in data and not isinstance(data[field], str) and not (data[field] is None and field not in ("organization", "status"))
    ]
    errors += [(field, "Extra inputs are not permitted", "extra_forbidden", data[field]) for field in data if field not in _REGISTRATION]
    if errors:
        raise wire.pydantic_errors("CreateSkillVersionRequest", errors)
    for field, expected in (("name", name), ("organization", organization)):
        if field in data and data[field] != expected:
            raise invalid(f"Registration metadata '{field}' must match the path identity.")
    identity.validate(organization, name)
    return versions.Registration(
        organization=organization,
        name=name,
        source=data.get("source"),
        source_type=data.get("source_type"),
        ref=data.get("ref"),
        subpath=data.get("subpath"),
        digest=data.get("digest"),
        status=data.get("status", "active"),
        created_by=_caller(req),
    )


def create_skill_version(req: Request) -> dict[str, Any]:
    organization, name = _identity(req)
    return versions.register(_registration(req, organization, name))


def bulk_register_skills(req: Request) -> dict[str, Any]:
    data = wire.body(req)
    parsed = _BULK.parse(data)
    entries = parsed["skills"]
    if not isinstance(entries, list):
        raise wire.rejected("skills: Input should be a valid list")
    if not entries:
        raise wire.rejected("skills: List should have at least 1 item after validation, not 0")
    if len(entries) > wire.MAX_BULK_REGISTER:
        raise wire.rejected(f"skills: List should have at most {wire.MAX_BULK_REGISTER} items after validation, not {len(entries)}")
    organization = parsed.get("organization", "")
    registrations = []
    for index, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise wire.rejected(f"skills.{index}: Input should be a valid dictionary or object to extract fields from")
        fields = _BULK_SKILL.parse(entry, f"skills.{index}.")
        registrations.append(
            versions.Registration(
                organization=organization,
                name=fields["name"],
                source=fields["source"],
                source_type=fields.get("source_type"),
                ref=fields.get("ref"),
                subpath=fields.get("subpath"),
                digest=fields["digest"],
                status=fields.get("status", "active"),
                created_by=_caller(req),
            )
        )
    for registration in registrations:
        identity.validate(organization, str(registration.name))
    return versions.bulk_register(registrations)


def search_skill_versions(req: Request) -> dict[str, Any]:
    organization, name = _identity(req)
    return versions.search_versions(organization, name, wire.search_params(req))


def get_skill_version(req: Request) -> dict[str, Any]:
    organization, name = _identity(req)
    return versions.get(organization, name, wire.path_version(req))


def update_skill_version(req: Request) -> dict[str, Any]:
    organization, name = _identity(req)
    version = wire.path_version(req)
    parsed = _UPDATE_VERSION.parse(wire.body(req))
    return versions.update(organization, name, version, parsed.get("status", skills.UNSET), _caller(req))


def delete_skill_version(req: Request) -> dict[str, Any]:
    organization, name = _identity(req)
    versions.delete(organization, name, wire.path_version(req), _caller(req))
    return {}


def set_skill_version_tag(req: Request) -> dict[str, Any]:
    organization, name = _identity(req)
    version = wire.path_version(req)
    parsed = _SET_TAG.parse(wire.body(req))
    versions.set_tag(organization, name, version, parsed["key"], parsed["value"])
    return {}


def delete_skill_version_tag(req: Request) -> dict[str, Any]:
    organization, name = _identity(req)
    versions.delete_tag(organization, name, wire.path_version(req), wire.path(req, "key"))
    return {}


# --- aliases -----------------------------------------------------------------------------------------------------


def get_skill_version_by_alias(req: Request) -> dict[str, Any]:
    organization, name = _identity(req)
    return versions.get_by_alias(organization, name, wire.path(req, "alias"))


def set_skill_alias(req: Request) -> dict[str, Any]:
    organization, name = _identity(req)
    parsed = _SET_ALIAS.parse(wire.body(req))
    versions.set_alias(organization, name, parsed["alias"], parsed["version"])
    return {}


def delete_skill_alias(req: Request) -> dict[str, Any]:
    organization, name = _identity(req)
    versions.delete_alias(organization, name, wire.path(req, "alias"))
    return {}


_PER_SKILL: dict[str, Operation] = {
    "get_skill": get_skill,
    "update_skill": update_skill,
    "delete_skill": delete_skill,
    "set_skill_tag": set_skill_tag,
    "delete_skill_tag": delete_skill_tag,
    "create_skill_version": create_skill_version,
    "search_skill_versions": search_skill_versions,
    "get_skill_version": get_skill_version,
    "update_skill_version": update_skill_version,
    "delete_skill_version": delete_skill_version,
    "set_skill_version_tag": set_skill_version_tag,
    "delete_skill_version_tag": delete_skill_version_tag,
    "get_skill_version_by_alias": get_skill_version_by_alias,
    "set_skill_alias": set_skill_alias,
    "delete_skill_alias": delete_skill_alias,
}


def _organization_name(operation: str) -> str:
    """MLflow's endpoint name of an operation's ``@organization`` twin (``get_organization_skill``...)."""
    return operation.replace("_skill", "_organization_skill", 1)


OPERATIONS: dict[str, Operation] = {
    "create_skill": create_skill,
    "search_skills": search_skills,
    "bulk_register_skills": bulk_register_skills,
    **_PER_SKILL,
    **{_organization_name(name): function for name, function in _PER_SKILL.items()},
}
