"""Skills and their tags (``SqlAlchemySkillRegistryMixin``'s skill methods)."""

from __future__ import annotations

import json
from typing import Any

from serverless_mlflow.core import clock
from serverless_mlflow.core.deferred import deferred
from serverless_mlflow.core.errors import already_exists, not_found
from serverless_mlflow.storage import table

from . import identity, records, views
from .records import Skill

# The filter grammar (sqlparse) loads with the first search, not at cold start.
search = deferred("gateway.skills.search")

# A field a request leaves out (left as it is), apart from one it sets to null (cleared).
UNSET = object()
_ORDER_KEYS = {"name", "organization", "description", "search_text", "status", "source_type", "created_at", "last_updated_at"}


def missing_skill(organization: str, name: str) -> Exception:
    return not_found(f"Skill '{name}' not found in organization '{organization}'")


def missing_entity(organization: str, name: str) -> Exception:
    """``_get_entity_or_raise``'s 404 (tags, the latest alias)."""
    return not_found(f"Skill not found (name='{name}', organization='{organization}')")


def get(organization: str, name: str) -> dict[str, Any]:
    identity.validate(organization, name)
    skill = records.load(organization, name)
    if skill is None:
        raise missing_skill(organization, name)
    return views.skill_json(skill)


def new_skill_item(
    organization: str, name: str, created_by: str | None, now: int, description: Any = None, icons: Any = None
) -> dict[str, Any]:
    return records.skill_item(
        {
            "organization": organization,
            "name": name,
            "description": description,
            "icons": json.dumps(icons) if icons is not None else None,
            "created_by": created_by,
            "last_updated_by": created_by,
            "created_at": now,
            "last_updated_at": now,
        }
    )


def create(organization: str, name: str, description: Any, icons: Any, created_by: str | None) -> dict[str, Any]:
    identity.validate(organization, name)
    item = new_skill_item(organization, name, created_by, clock.now_millis(), description, icons)
    try:
        table.put(item, condition="attribute_not_exists(pk)")
    except table.ConditionFailed:
        raise already_exists(f"Skill '{name}' already exists in organization '{organization}'") from None
    return views.skill_json(Skill(item))


def update(organization: str, name: str, description: Any, icons: Any, updated_by: str | None) -> dict[str, Any]:
    """``update_skill``: ``UNSET`` leaves a field as it is; None clears it."""
    identity.validate(organization, name)
    skill = records.load(organization, name)
    if skill is None:
        raise missing_skill(organization, name)
    item = dict(skill.item)
    if description is not UNSET:
        item["description"] = description
    if icons is not UNSET:
        item["icons"] = json.dumps(icons) if icons is not None else None
    item["last_updated_by"] = updated_by
    item["last_updated_at"] = clock.now_millis()
    try:
        table.put(item, condition="attribute_exists(pk)")
    except table.ConditionFailed:
        raise missing_skill(organization, name) from None
    skill.item = item
    return views.skill_json(skill)


def delete(organization: str, name: str) -> None:
    """``delete_skill``: the skill with its versions, tags and aliases (no artifacts: uploads are not served)."""
    identity.validate(organization, name)
    if records.load(organization, name) is None:
        raise missing_skill(organization, name)
    # The header goes first: a concurrent write under a skill that is gone is never read back.
    table.delete(records.skill_key(organization, name))
    table.batch_write(deletes=records.item_keys(organization, name))


def set_tag(organization: str, name: str, key: str, value: str) -> None:
    identity.validate(organization, name)
    identity.validate_tag(key, value)
    if table.get(records.skill_key(organization, name)) is None:
        raise missing_entity(organization, name)
    table.put(records.tag_item(organization, name, key, value))


def delete_tag(organization: str, name: str, key: str) -> None:
    identity.validate(organization, name)
    identity.validate_tag(key, "")
    try:
        table.delete(records.tag_key(organization, name, key), condition="attribute_exists(pk)")
    except table.ConditionFailed:
        raise not_found(f"Tag '{key}' not found on Skill '{name}'") from None


def search_skills(params: dict[str, Any]) -> dict[str, Any]:
    selected = identity.parse_identities(params["include_skill_identities"])
    max_results = params["max_results"]
    filter_string, order_by = params["filter_string"], params["order_by"]
    search.validate_max_results(max_results)
    scope = f"workspace:{records.workspace()}:skills"
    offset = search.start_offset(params["page_token"], filter_string, order_by, scope)
    comparisons = search.SkillGrammar.parse(filter_string)
    terms = search.parse_order_by(order_by, _ORDER_KEYS)
    for tiebreaker in ("organization", "name"):
        if all(key != tiebreaker for key, _ in terms):
            terms.append((tiebreaker, True))
    skills = records.load_all()
    if selected is not None:
        chosen = set(selected)
        skills = [skill for skill in skills if (skill.organization, skill.name) in chosen]
    rows = [skill for skill in skills if search.matches(comparisons, lambda comparison, skill=skill: _skill_value(skill, comparison))]
    ordered = search.sort(rows, terms, _order_value)
    page, token = search.page(ordered, offset, max_results, filter_string, order_by, scope)
    return {"skills": [views.skill_json(skill) for skill in page], "next_page_token": token}


def _field(skill: Skill, key: str) -> Any:
    if key in ("status", "source_type"):
        latest = skill.latest()
        return latest.get(key) if latest is not None else None
    if key == "search_text":
        return search.search_text(skill.name, skill.item.get("description"))
    value = skill.item.get(key)
    return int(value) if key in ("created_at", "last_updated_at") else value


def _skill_value(skill: Skill, comparison: dict[str, Any]) -> Any:
    if comparison["type"] == "tag":
        return skill.tags.get(comparison["key"])
    return _field(skill, comparison["key"])


def _order_value(skill: Skill, key: str) -> Any:
    return _field(skill, key)
