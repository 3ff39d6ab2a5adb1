"""MLflow's JSON for skills and skill versions (``skill_registry_api.SkillResponse``/``SkillVersionResponse``):
every declared field present, unset ones as null."""

from __future__ import annotations

import json
from typing import Any

from .records import Skill, workspace


def _icon(icon: dict[str, Any]) -> dict[str, Any]:
    """``_BaseSkillIconPayload.serialize``: extra keys first, then src, sizes, mimeType, theme."""
    known = ("src", "sizes", "mimeType", "theme")
    out = {key: value for key, value in icon.items() if key not in known}
    for key in known:
        if icon.get(key) is not None:
            out[key] = icon[key]
    return out


def skill_json(skill: Skill) -> dict[str, Any]:
    item = skill.item
    icons = json.loads(item["icons"]) if isinstance(item.get("icons"), str) else None
    latest = skill.latest()
    return {
        "name": skill.name,
        "organization": skill.organization,
        "workspace": workspace(),
        "description": item.get("description"),
        "icons": None if icons is None else [_icon(icon) for icon in icons],
        "status": latest["status"] if latest is not None else None,
        "latest_version": int(latest["version"]) if latest is not None else None,
        "source_type": latest.get("source_type") if latest is not None else None,
        "aliases": [{"alias": alias, "version": version} for alias, version in sorted(skill.aliases.items())],
        "tags": dict(skill.tags),
        "created_by": item.get("created_by"),
        "last_updated_by": item.get("last_updated_by"),
        "creation_timestamp": int(item["created_at"]),
        "last_updated_timestamp": int(item["last_updated_at"]),
    }


def version_json(skill: Skill, item: dict[str, Any], aliases: list[str] | None = None) -> dict[str, Any]:
    version = int(item["version"])
    return {
        "name": skill.name,
        "version": version,
        "organization": skill.organization,
        "workspace": workspace(),
        "source_type": item.get("source_type"),
        "source": item.get("source"),
        "ref": item.get("ref"),
        "subpath": item.get("subpath"),
        "digest": item.get("digest"),
        "status": item["status"],
        "aliases": skill.aliases_of(version) if aliases is None else aliases,
        "tags": dict(skill.version_tags.get(version, {})),
        "created_by": item.get("created_by"),
        "last_updated_by": item.get("last_updated_by"),
        "creation_timestamp": int(item["created_at"]),
        "last_updated_timestamp": int(item["last_updated_at"]),
    }
