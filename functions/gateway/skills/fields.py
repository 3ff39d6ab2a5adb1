"""The fields of each skill registry request, as ``Message`` declarations: what the fuzz suite and the docs read.

These routes are not protobuf messages in MLflow (FastAPI/Pydantic models); ``wire`` parses them. The kinds
here only say what each field holds."""

from __future__ import annotations

from serverless_mlflow.request import Message

from . import NAMES

_SEARCH = {"filter_string": "string", "max_results": "int32", "order_by": "[string]", "page_token": "string"}
_TAG = {"key": "string", "value": "string"}
_REGISTRATION = {
    "name": "string",
    "organization": "string",
    "source_type": "string",
    "source": "string",
    "ref": "string",
    "subpath": "string",
    "digest": "string",
    "status": "string",
}

_FIELDS: dict[str, dict[str, str]] = {
    "create_skill": {"name": "string", "organization": "string", "description": "string", "icons": "[message]"},
    "search_skills": {**_SEARCH, "include_skill_identities": "[string]"},
    "bulk_register_skills": {"organization": "string", "skills": "[message]"},
    "update_skill": {"description": "string", "icons": "[message]"},
    "set_skill_tag": _TAG,
    "create_skill_version": _REGISTRATION,
    "search_skill_versions": _SEARCH,
    "update_skill_version": {"status": "string"},
    "set_skill_version_tag": _TAG,
    "set_skill_alias": {"alias": "string", "version": "int32"},
}


def _fields(operation: str) -> dict[str, str]:
    return _FIELDS.get(operation.replace("_organization_skill", "_skill", 1), {})


MESSAGES: dict[str, Message] = {operation: Message(_fields(operation)) for operation in NAMES}
