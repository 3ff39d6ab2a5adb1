"""Skill registry items of a workspace's ``SKILL#<workspace>`` partition, read back as skills in memory.

The workspace is the request's (MLflow 3.18 scopes its skill tables by workspace: names are unique per
workspace, and a skill of another workspace does not exist for a request); ``default``'s partition is the one
the registry always used, so its skills need no migration.

A registry is a few hundred small items (skills are curated by people), so a read is one strongly consistent
Query: the whole partition for a search, one skill's ``K#<organization>#<name>`` prefix otherwise. What MLflow's
SQL resolves with joins (a skill's latest version, its status and source type) is resolved here from those items.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from serverless_mlflow.request import workspace as request_workspace
from serverless_mlflow.storage import table
from serverless_mlflow.storage.schema import ENTITY

SKILL = ENTITY["skill"]
SKILL_TAG = ENTITY["skill_tag"]
ALIAS = ENTITY["skill_alias"]
VERSION = ENTITY["skill_version"]
VERSION_TAG = ENTITY["skill_version_tag"]

ACTIVE = "active"
DRAFT = "draft"
DEPRECATED = "deprecated"
DELETED = "deleted"


@dataclass
class Skill:
    item: dict[str, Any]
    tags: dict[str, str] = field(default_factory=dict)
    aliases: dict[str, int] = field(default_factory=dict)  # alias -> version
    versions: dict[int, dict[str, Any]] = field(default_factory=dict)  # every version, deleted ones too
    version_tags: dict[int, dict[str, str]] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return str(self.item["name"])

    @property
    def organization(self) -> str:
        return str(self.item["organization"])

    def live_version(self, version: int) -> dict[str, Any] | None:
        item = self.versions.get(version)
        return item if item is not None and item["status"] != DELETED else None

    def latest(self) -> dict[str, Any] | None:
        """MLflow's resolved latest version: active versions first, then the highest number."""
        live = [item for item in self.versions.values() if item["status"] != DELETED]
        if not live:
            return None
        return max(live, key=lambda item: (item["status"] == ACTIVE, int(item["version"])))

    def next_version(self) -> int:
        """``max(version) + 1`` over every version, deleted ones too (numbers are never reused)."""
        return max(self.versions, default=0) + 1

    def aliases_of(self, version: int) -> list[str]:
        return [alias for alias, target in sorted(self.aliases.items()) if target == version]


def _build(items: list[dict[str, Any]]) -> dict[tuple[str, str], Skill]:
    skills: dict[tuple[str, str], Skill] = {}
    pending: list[dict[str, Any]] = []
    for item in items:
        if item.get("entity_type") == SKILL.name:
            skills[(item["organization"], item["name"])] = Skill(item)
        else:
            pending.append(item)
    for item in pending:
        kind = item.get("entity_type")
        # Names are read from attributes, not keys: a long name is only a digest in its key.
        skill = skills.get((item["organization"], item["skill_name"]))
        if skill is None:
            continue  # a write under a skill being deleted; MLflow's foreign keys would have refused it
        if kind == SKILL_TAG.name:
            skill.tags[item["key"]] = item["value"]
        elif kind == ALIAS.name:
            skill.aliases[item["alias"]] = int(item["version"])
        elif kind == VERSION.name:
            skill.versions[int(item["version"])] = item
        elif kind == VERSION_TAG.name:
            skill.version_tags.setdefault(int(item["version"]), {})[item["key"]] = item["value"]
    return skills


def workspace() -> str:
    """The request's workspace, whose partition every read and write goes to."""
    return request_workspace.current()


def load_all() -> list[Skill]:
    return list(_build(table.query(**SKILL.query("in_workspace", workspace=workspace()))).values())


def load(organization: str, name: str) -> Skill | None:
    """One skill whole, or None."""
    items = table.query(**SKILL.query("whole_skill", workspace=workspace(), organization=organization, name=name))
    return _build(items).get((organization, name))


def _ids(organization: str, name: str) -> dict[str, Any]:
    return {"workspace": workspace(), "organization": organization, "name": name}


def skill_key(organization: str, name: str) -> dict[str, str]:
    return SKILL.key(**_ids(organization, name))


def skill_item(attributes: dict[str, Any]) -> dict[str, Any]:
    return SKILL.item(attributes, **_ids(attributes["organization"], attributes["name"]))


def tag_key(organization: str, name: str, key: str) -> dict[str, str]:
    return SKILL_TAG.key(**_ids(organization, name), key=key)


def tag_item(organization: str, name: str, key: str, value: str) -> dict[str, Any]:
    attributes = {"organization": organization, "skill_name": name, "key": key, "value": value}
    return SKILL_TAG.item(attributes, **_ids(organization, name), key=key)


def alias_key(organization: str, name: str, alias: str) -> dict[str, str]:
    return ALIAS.key(**_ids(organization, name), alias=alias)


def alias_item(organization: str, name: str, alias: str, version: int) -> dict[str, Any]:
    attributes = {"organization": organization, "skill_name": name, "alias": alias, "version": version}
    return ALIAS.item(attributes, **_ids(organization, name), alias=alias)


def version_key(organization: str, name: str, version: int) -> dict[str, str]:
    return VERSION.key(**_ids(organization, name), version=version)


def version_item(attributes: dict[str, Any]) -> dict[str, Any]:
    organization, name = attributes["organization"], attributes["skill_name"]
    return VERSION.item(attributes, **_ids(organization, name), version=attributes["version"])


def version_tag_key(organization: str, name: str, version: int, key: str) -> dict[str, str]:
    return VERSION_TAG.key(**_ids(organization, name), version=version, key=key)


def version_tag_item(organization: str, name: str, version: int, key: str, value: str) -> dict[str, Any]:
    attributes = {"organization": organization, "skill_name": name, "version": version, "key": key, "value": value}
    return VERSION_TAG.item(attributes, **_ids(organization, name), version=version, key=key)


def item_keys(organization: str, name: str) -> list[dict[str, str]]:
    """Every item of a skill (for its delete)."""
    items = table.query(**SKILL.query("whole_skill", **_ids(organization, name)))
    return [table.key_of(item) for item in items]
