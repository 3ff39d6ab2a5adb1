"""Skill versions, their tags and the skill's aliases (``SqlAlchemySkillRegistryMixin``'s version methods and
``skill_registry.registration``'s remote-source flow)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from serverless_mlflow.core import clock
from serverless_mlflow.core.deferred import deferred
from serverless_mlflow.core.errors import MlflowError, already_exists, invalid, not_found
from serverless_mlflow.storage import table

from . import identity, records, skills, sources, views
from .records import ACTIVE, DELETED, DEPRECATED, DRAFT, Skill

search = deferred("gateway.skills.search")

_DIGEST = re.compile(r"[0-9a-f]{64}")
_REGISTRATION_STATUSES = (ACTIVE, DRAFT)
_STATUSES = (DRAFT, ACTIVE, DEPRECATED, DELETED)
_TRANSITIONS = {DRAFT: (ACTIVE, DELETED), ACTIVE: (DRAFT, DEPRECATED), DEPRECATED: (ACTIVE, DELETED)}
_ORDER_KEYS = {"status", "organization", "source_type", "digest", "version", "created_at", "last_updated_at"}
_CREATE_RETRIES = 3


@dataclass(frozen=True)
class Registration:
    """``SkillVersionRegistration``: a request's metadata (``created_by`` is the caller, never the body)."""

    organization: str
    name: str | None
    source: Any = None
    source_type: Any = None
    ref: Any = None
    subpath: Any = None
    digest: Any = None
    status: Any = ACTIVE
    created_by: str | None = None


def missing_version(name: str, version: int) -> Exception:
    return not_found(f"Skill version '{name}' version '{version}' not found")


def _validate_metadata(registration: Registration) -> None:
    if not registration.name:
        raise invalid(
            "'name' must be provided explicitly. The MLflow SDK and CLI read it from SKILL.md; the server never reads content to derive it."
        )
    identity.validate_name(registration.name)
    identity.validate_organization(registration.organization)
    if registration.status not in _REGISTRATION_STATUSES:
        raise invalid(f"A skill version can be registered as 'active' or 'draft', got {registration.status!r}.")
    digest = registration.digest
    if digest is not None and (not isinstance(digest, str) or _DIGEST.fullmatch(digest) is None):
        raise invalid("'digest' must be a SHA-256 digest of 64 lowercase hex characters.")
    if registration.source_type == sources.MLFLOW:
        raise invalid(f"'source_type' {registration.source_type!r} is set by the server from the creation flow and cannot be submitted.")


def _resolved(registration: Registration) -> sources.Resolved:
    _validate_metadata(registration)
    if registration.source is None:
        raise invalid(
            "A registration without a 'source' uploads the skill content and requires a multipart/form-data body with "
            "a 'content' part. To register a remote skill, set 'source' to its git, oci, or zip location."
        )
    return sources.resolve(registration.source, registration.source_type, registration.ref, registration.subpath)


def _version_item(
    organization: str, name: str, version: int, resolved: sources.Resolved, registration: Registration, now: int
) -> dict[str, Any]:
    return records.version_item(
        {
            "organization": organization,
            "skill_name": name,
            "version": version,
            "source_type": resolved.source_type,
            "source": resolved.source,
            "ref": resolved.ref,
            "subpath": resolved.subpath,
            "digest": registration.digest,
            "status": registration.status,
            "created_by": registration.created_by,
            "last_updated_by": registration.created_by,
            "created_at": now,
            "last_updated_at": now,
        }
    )


def _writes(
    skill: Skill | None, registration: Registration, resolved: sources.Resolved, now: int
) -> tuple[list[dict[str, Any]], Skill, dict[str, Any]]:
    """The transaction items of one registration (a new skill header when there is none, and the version), the
    skill it lands in and the version item."""
    organization, name = registration.organization, str(registration.name)
    if skill is None:
        header = skills.new_skill_item(organization, name, registration.created_by, now)
        skill = Skill(header)
        operations = [table.put_op(header, condition="attribute_not_exists(pk)")]
    else:
        operations = [table.check_op(records.skill_key(organization, name), "attribute_exists(pk)")]
    item = _version_item(organization, name, skill.next_version(), resolved, registration, now)
    operations.append(table.put_op(item, condition="attribute_not_exists(pk)"))
    return operations, skill, item


def register(registration: Registration) -> dict[str, Any]:
    """``register_skill_version`` for a remote source: the next version number, the skill created with it when
    missing. Concurrent registrations race on the version's key; the loser retries, as MLflow's store does."""
    resolved = _resolved(registration)
    organization, name = registration.organization, str(registration.name)
    for _ in range(_CREATE_RETRIES):
        operations, skill, item = _writes(records.load(organization, name), registration, resolved, clock.now_millis())
        try:
            table.transact(operations)
        except table.ConditionFailed:
            continue
        return views.version_json(skill, item, aliases=[])
    raise already_exists(
        f"Skill version creation error (name={name}, organization={organization}). Giving up after {_CREATE_RETRIES} attempts."
    )


def bulk_register(registrations: list[Registration]) -> dict[str, Any]:
    """``bulk_register_skill_versions``: every skill's next version in one transaction; an exact match of a
    live version (same source, ref, subpath and digest) is answered as it is instead of a new version."""
    first = registrations[0]
    resolved_all = []
    for registration in registrations:
        _validate_metadata(registration)
        if registration.organization != first.organization or registration.created_by != first.created_by:
            raise invalid("Bulk registration requires the same organization and authenticated creator for every Skill.")
        if registration.status != first.status:
            raise invalid("Bulk registration requires the same status for every Skill.")
        resolved_all.append(sources.resolve(registration.source, registration.source_type, registration.ref, registration.subpath))
    _check_batch(registrations, resolved_all)
    organization = first.organization
    for _ in range(_CREATE_RETRIES):
        now = clock.now_millis()
        operations: list[dict[str, Any]] = []
        answers: list[dict[str, Any]] = []
        for registration, resolved in zip(registrations, resolved_all, strict=True):
            skill = records.load(organization, str(registration.name))
            reused = _exact_match(skill, registration, resolved)
            if skill is not None and reused is not None:
                answers.append(views.version_json(skill, reused))
                continue
            writes, skill, item = _writes(skill, registration, resolved, now)
            operations.extend(writes)
            answers.append(views.version_json(skill, item, aliases=[]))
        try:
            # Two operations a skill: a batch past DynamoDB's 100-operation transaction is written in chunks.
            for start in range(0, len(operations), table.TRANSACTION_LIMIT):
                table.transact(operations[start : start + table.TRANSACTION_LIMIT])
        except table.ConditionFailed:
            continue
        return {"skill_versions": answers}
    raise already_exists(f"Skill version creation error (organization={organization}). Giving up after {_CREATE_RETRIES} attempts.")


def _check_batch(registrations: list[Registration], resolved_all: list[sources.Resolved]) -> None:
    """``bulk_register_skills``' batch rules: git sources with digests, unique names, one repository and ref."""
    names: set[str] = set()
    repository = None
    for registration, resolved in zip(registrations, resolved_all, strict=True):
        if resolved.source_type != sources.GIT or not resolved.source or not registration.digest:
            raise invalid("Bulk registration requires a Git source and digest for every Skill.")
        if registration.name in names:
            raise invalid(f"Duplicate Skill name: {registration.name!r}.")
        names.add(str(registration.name))
        pair = (resolved.source, resolved.ref)
        if repository is not None and pair != repository:
            raise invalid("Bulk registration requires the same Git repository and ref for every Skill.")
        repository = pair


def _exact_match(skill: Skill | None, registration: Registration, resolved: sources.Resolved) -> dict[str, Any] | None:
    if skill is None:
        return None
    wanted = (resolved.source_type, resolved.source, resolved.ref, resolved.subpath, registration.digest)
    matching = [
        item
        for number, item in skill.versions.items()
        if item["status"] != DELETED
        and (item.get("source_type"), item.get("source"), item.get("ref"), item.get("subpath"), item.get("digest")) == wanted
    ]
    return max(matching, key=lambda item: int(item["version"])) if matching else None


def _load_version(organization: str, name: str, version: int) -> tuple[Skill, dict[str, Any]]:
    identity.validate(organization, name)
    identity.validate_version(version)
    skill = records.load(organization, name)
    item = skill.live_version(version) if skill is not None else None
    if skill is None or item is None:
        raise missing_version(name, version)
    return skill, item


def get(organization: str, name: str, version: int) -> dict[str, Any]:
    skill, item = _load_version(organization, name, version)
    return views.version_json(skill, item)


def search_versions(organization: str, name: str, params: dict[str, Any]) -> dict[str, Any]:
    identity.validate(organization, name)
    max_results = params["max_results"]
    filter_string, order_by = params["filter_string"], params["order_by"]
    search.validate_max_results(max_results)
    scope = f"workspace:{records.workspace()}:skill_versions:{organization}/{name}"
    offset = search.start_offset(params["page_token"], filter_string, order_by, scope)
    comparisons = search.VersionGrammar.parse(filter_string)
    terms = search.parse_order_by(order_by, _ORDER_KEYS)
    if all(key != "version" for key, _ in terms):
        terms.append(("version", True))
    skill = records.load(organization, name)
    live = [item for item in (skill.versions.values() if skill is not None else ()) if item["status"] != DELETED]

    def value_of(item: dict[str, Any], key: str) -> Any:
        if key == "organization":
            return organization
        value = item.get(key)
        return int(value) if key in ("version", "created_at", "last_updated_at") else value

    def comparison_value(item: dict[str, Any], comparison: dict[str, Any]) -> Any:
        if comparison["type"] == "tag":
            return skill.version_tags.get(int(item["version"]), {}).get(comparison["key"]) if skill is not None else None
        return value_of(item, comparison["key"])

    rows = [item for item in live if search.matches(comparisons, lambda comparison, item=item: comparison_value(item, comparison))]
    ordered = search.sort(rows, terms, value_of)
    page, token = search.page(ordered, offset, max_results, filter_string, order_by, scope)
    return {"skill_versions": [views.version_json(skill, item) for item in page] if skill is not None else [], "next_page_token": token}


def _transition(current: str, new: str) -> None:
    allowed = _TRANSITIONS.get(current, ())
    if new not in allowed:
        raise invalid(f"Invalid status transition from '{current}' to '{new}'. Allowed transitions: {sorted(allowed)}")


def _set_status(skill: Skill, item: dict[str, Any], status: str, updated_by: str | None) -> dict[str, Any]:
    """One status change, conditioned on the status read (MLflow's ``updated != 1`` conflict); a deleted version
    loses its aliases in the same transaction."""
    version = int(item["version"])
    updated = {**item, "status": status, "last_updated_by": updated_by, "last_updated_at": clock.now_millis()}
    operations = [table.put_op(updated, condition="#s = :s", names={"#s": "status"}, values={":s": item["status"]})]
    if status == DELETED:
        operations += [table.delete_op(records.alias_key(skill.organization, skill.name, alias)) for alias in skill.aliases_of(version)]
    try:
        table.transact(operations)
    except table.ConditionFailed:
        raise MlflowError("Skill version changed while being updated; retry the operation", "RESOURCE_CONFLICT") from None
    return updated


def update(organization: str, name: str, version: int, status: Any, updated_by: str | None) -> dict[str, Any]:
    """``update_skill_version``: ``skills.UNSET`` answers the version as it is."""
    identity.validate(organization, name)
    identity.validate_version(version)
    if status is None:
        raise invalid("status cannot be null; omit the field to leave it unchanged")
    skill, item = _load_version(organization, name, version)
    if status is skills.UNSET:
        return views.version_json(skill, item)
    if status not in _STATUSES:
        raise invalid(f"Invalid SkillVersion status: {status!r}")
    _transition(item["status"], status)
    updated = _set_status(skill, item, status, updated_by)
    return views.version_json(skill, updated, aliases=[] if status == DELETED else None)


def delete(organization: str, name: str, version: int, updated_by: str | None) -> None:
    skill, item = _load_version(organization, name, version)
    _transition(item["status"], DELETED)
    _set_status(skill, item, DELETED, updated_by)


# --- aliases ---------------------------------------------------------------------------------------------------


def get_by_alias(organization: str, name: str, alias: str) -> dict[str, Any]:
    identity.validate(organization, name)
    if alias.lower() == "latest":
        skill = records.load(organization, name)
        if skill is None:
            raise skills.missing_entity(organization, name)
        latest = skill.latest()
        if latest is None:
            raise not_found(f"No resolved latest version found for skill '{name}'")
        return views.version_json(skill, latest)
    identity.validate_alias(alias)
    skill = records.load(organization, name)
    if skill is None or alias not in skill.aliases:
        raise not_found(f"Alias '{alias}' not found for skill '{name}'")
    item = skill.live_version(skill.aliases[alias])
    if item is None:
        raise not_found(f"Alias '{alias}' for skill '{name}' points to a missing or deleted version")
    return views.version_json(skill, item)


def set_alias(organization: str, name: str, alias: str, version: int) -> None:
    identity.validate(organization, name)
    identity.validate_version(version)
    identity.validate_alias(alias)
    skill = records.load(organization, name)
    item = skill.live_version(version) if skill is not None else None
    if item is None:
        raise not_found(f"Skill version '{name}' version '{version}' not found or is deleted")
    # The version must still be live when the alias lands (MLflow locks the version row).
    key = records.version_key(organization, name, version)
    try:
        table.transact(
            [
                table.check_op(key, "#s <> :d", names={"#s": "status"}, values={":d": DELETED}),
                table.put_op(records.alias_item(organization, name, alias, version)),
            ]
        )
    except table.ConditionFailed:
        raise not_found(f"Skill version '{name}' version '{version}' not found or is deleted") from None


def delete_alias(organization: str, name: str, alias: str) -> None:
    identity.validate(organization, name)
    if alias.lower() == "latest":
        raise invalid("The 'latest' alias is resolved automatically and cannot be deleted")
    identity.validate_alias(alias)
    try:
        table.delete(records.alias_key(organization, name, alias), condition="attribute_exists(pk)")
    except table.ConditionFailed:
        raise not_found(f"Alias '{alias}' not found on skill '{name}'") from None


# --- version tags ----------------------------------------------------------------------------------------------


def set_tag(organization: str, name: str, version: int, key: str, value: str) -> None:
    identity.validate(organization, name)
    identity.validate_version(version)
    identity.validate_tag(key, value)
    _load_version(organization, name, version)
    table.put(records.version_tag_item(organization, name, version, key, value))


def delete_tag(organization: str, name: str, version: int, key: str) -> None:
    identity.validate(organization, name)
    identity.validate_version(version)
    identity.validate_tag(key, "")
    try:
        table.delete(records.version_tag_key(organization, name, version, key), condition="attribute_exists(pk)")
    except table.ConditionFailed:
        raise not_found(f"Tag '{key}' not found on Skill version '{name}' version '{version}'") from None
