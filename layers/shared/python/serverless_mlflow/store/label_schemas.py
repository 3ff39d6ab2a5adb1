"""Label schemas: the questions reviewers answer (``SqlAlchemyStore`` create/get/list/update/delete).

A schema is stored as MLflow's answer (the ``LabelSchema`` proto JSON) with a name claim that keeps names
unique per experiment; create, rename and delete change the schema and its claim in one transaction. Every
experiment presents a protected default question (``Feedback``, free text), seeded the first time its
schemas are listed, as MLflow does.
"""

from __future__ import annotations

import uuid
from typing import Any

from serverless_mlflow.core import clock
from serverless_mlflow.core.deferred import deferred
from serverless_mlflow.core.errors import already_exists, invalid, not_found
from serverless_mlflow.core.validation import review as rules
from serverless_mlflow.storage import table
from serverless_mlflow.storage.schema import entity
from serverless_mlflow.store import review

# protobuf is imported by the first call that builds or parses a message, not at a handler's cold start.
protos = deferred("serverless_mlflow.request.protos")
SCHEMA = entity("label_schema")
NAME = entity("label_schema_name")
KIND = "label_schema"
ID_PREFIX = "ls-"
DEFAULT_MAX_RESULTS = 100
_TYPES = {"FEEDBACK": 1, "EXPECTATION": 2}

Input = tuple[str, dict[str, Any]]


def parse_input(raw: Any, field: str = "input") -> Input:
    """``_input_from_proto``: the one variant a ``LabelSchemaInput`` carries, as ``Input*.from_proto`` reads it."""
    message = protos.parse("LabelSchemaInput", raw if raw is not None else {}, field)
    variant = message.WhichOneof("input")
    if variant is None:
        raise invalid(
            "Label schema `input` must have exactly one of `pass_fail`, `categorical`, `numeric`, or `text` set; got an empty oneof."
        )
    value = getattr(message, variant)
    if variant == "pass_fail":
        return variant, {"positive_label": value.positive_label, "negative_label": value.negative_label}
    if variant == "categorical":
        return variant, {"options": list(value.options), "multi_select": value.multi_select}
    if variant == "numeric":
        return variant, {name: getattr(value, name) for name in ("min_value", "max_value") if value.HasField(name)}
    return variant, ({"max_length": value.max_length} if value.HasField("max_length") else {})


def schema_type(value: Any) -> str:
    """``LabelSchemaType.from_proto``: FEEDBACK or EXPECTATION (by name or number), anything else refused."""
    names = protos.ENUMS["LabelSchemaType"]
    number = value if isinstance(value, int) and not isinstance(value, bool) else (names.index(value) if value in names else 0)
    if number not in (1, 2):
        raise invalid(f"Label schema `type` must be one of FEEDBACK or EXPECTATION; got proto enum value {number}.")
    return names[number]


def _answer(document: dict[str, Any]) -> dict[str, Any]:
    """The ``LabelSchema`` proto JSON of a stored schema (``LabelSchema.to_proto``)."""
    variant, fields = document["input"]
    message = protos.CLASSES["LabelSchema"](
        name=document["name"], type=_TYPES[document["type"]], enable_comment=bool(document.get("enable_comment"))
    )
    getattr(message.input, variant).SetInParent()
    for name, value in fields.items():
        if name == "options":
            getattr(message.input, variant).options.extend(value)
        else:
            setattr(getattr(message.input, variant), name, value)
    for name in ("schema_id", "experiment_id", "instruction", "created_by"):
        if document.get(name) is not None:
            setattr(message, name, document[name])
    message.created_at = int(document["created_at"])
    message.last_updated_at = int(document["last_updated_at"])
    message.is_default = bool(document.get("is_default"))
    return protos.to_json(message)


def _document(item: dict[str, Any]) -> dict[str, Any]:
    out = {name: item.get(name) for name in SCHEMA.attributes}
    variant, fields = next(iter(item["input"].items()))
    out["input"] = (variant, {k: (float(v) if variant == "numeric" else v) for k, v in fields.items()})
    return out


def _item(document: dict[str, Any]) -> dict[str, Any]:
    variant, fields = document["input"]
    attributes = {name: value for name, value in document.items() if value is not None and name != "input"}
    # Doubles are stored as text (the table codec keeps floats exact that way).
    attributes["input"] = {variant: {k: (repr(float(v)) if variant == "numeric" else v) for k, v in fields.items()}}
    return SCHEMA.item(attributes, experiment_id=document["experiment_id"], schema_id=document["schema_id"])


def _get_document(schema_id: str) -> dict[str, Any] | None:
    experiment_id = review.experiment_of(schema_id, KIND)
    if experiment_id is None:
        return None
    item = table.get(SCHEMA.key(experiment_id=experiment_id, schema_id=schema_id))
    return _document(item) if item is not None else None


def _missing(schema_id: str) -> Exception:
    return not_found(f"Label schema with id '{schema_id}' not found.")


def _duplicate(name: str, experiment_id: str) -> Exception:
    return already_exists(f"Label schema with name '{name}' already exists for experiment '{experiment_id}'.")


def _create(document: dict[str, Any], ignore_duplicate: bool = False) -> bool:
    experiment_id, schema_id, name = document["experiment_id"], document["schema_id"], document["name"]
    try:
        table.transact(
            [
                table.put_op(_item(document), condition="attribute_not_exists(pk)"),
                table.put_op(
                    NAME.item({"schema_id": schema_id}, experiment_id=experiment_id, name=name), condition="attribute_not_exists(pk)"
                ),
                table.put_op(review.locator_item(schema_id, experiment_id, KIND)),
            ]
        )
    except table.ConditionFailed:
        if ignore_duplicate:
            return False
        raise _duplicate(name, experiment_id) from None
    return True


def create_label_schema(
    experiment_id: Any,
    name: str,
    type_: str,
    new_input: Input,
    instruction: str | None,
    enable_comment: bool,
    created_by: str | None = None,
) -> dict[str, Any]:
    rules.validate_label_schema_for_create(name, instruction, *new_input)
    experiment_id = review.active_experiment_id(experiment_id)
    now = clock.now_millis()
    document = {
        "schema_id": ID_PREFIX + uuid.uuid4().hex,
        "experiment_id": experiment_id,
        "name": name,
        "type": type_,
        "instruction": instruction,
        "enable_comment": enable_comment,
        "input": new_input,
        "created_by": created_by,
        "created_at": now,
        "last_updated_at": now,
        "is_default": False,
    }
    _create(document)
    return _answer(document)


def get_label_schema(schema_id: str) -> dict[str, Any]:
    document = _get_document(schema_id)
    if document is None:
        raise _missing(schema_id)
    return _answer(document)


def get_label_schema_by_name(experiment_id: Any, name: str) -> dict[str, Any]:
    experiment_id = review.active_experiment_id(experiment_id)
    claim = table.get(NAME.key(experiment_id=experiment_id, name=name)) if name else None
    item = table.get(SCHEMA.key(experiment_id=experiment_id, schema_id=claim["schema_id"])) if claim else None
    if item is None:
        raise not_found(f"Label schema with name '{name}' not found for experiment '{experiment_id}'.")
    return _answer(_document(item))


def schemas_of(experiment_id: str) -> list[dict[str, Any]]:
    """Every stored schema document of an experiment (one Query)."""
    return [_document(item) for item in table.iter_query(**SCHEMA.query("of_experiment", experiment_id=experiment_id))]


def ensure_default(experiment_id: str, existing: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``_ensure_default_label_schema``: seed the protected ``Feedback`` question when none is marked default."""
    if any(doc.get("is_default") for doc in existing):
        return existing
    now = clock.now_millis()
    document = {
        "schema_id": ID_PREFIX + uuid.uuid4().hex,
        "experiment_id": experiment_id,
        "name": rules.DEFAULT_LABEL_SCHEMA_NAME,
        "type": "FEEDBACK",
        "instruction": rules.DEFAULT_LABEL_SCHEMA_INSTRUCTION,
        "enable_comment": False,
        "input": ("text", {}),
        "created_by": None,
        "created_at": now,
        "last_updated_at": now,
        "is_default": True,
    }
    # A concurrent list seeded it first (the name claim is taken): read what it wrote.
    return [*existing, document] if _create(document, ignore_duplicate=True) else schemas_of(experiment_id)


def _newest_first(document: dict[str, Any]) -> tuple[int, str]:
    return -int(document["created_at"]), document["schema_id"]


def list_label_schemas(experiment_id: Any, max_results: int, page_token: str | None) -> tuple[list[dict[str, Any]], str | None]:
    review.check_max_results(max_results)
    experiment_id = review.active_experiment_id(experiment_id)
    order = _newest_first
    # A bad page token is refused before the default question is seeded (a refused request writes nothing):
    # paged over one row of the sort key's shape, it fails as it would on the real rows.
    review.page_of([{"created_at": 0, "schema_id": ""}], order, max_results, page_token)
    documents = ensure_default(experiment_id, schemas_of(experiment_id))
    page, token = review.page_of(documents, order, max_results, page_token)
    return [_answer(d) for d in page], token


def update_label_schema(
    schema_id: str, name: str | None, instruction: str | None, enable_comment: bool | None, new_input: Input | None
) -> dict[str, Any]:
    document = _get_document(schema_id)
    if document is None:
        raise _missing(schema_id)
    rules.validate_label_schema_for_update(document, name, instruction, new_input)
    updated = dict(document)
    if name is not None:
        updated["name"] = name
    if instruction is not None:
        updated["instruction"] = instruction
    if enable_comment is not None:
        updated["enable_comment"] = enable_comment
    if new_input is not None:
        updated["input"] = new_input
    updated["last_updated_at"] = clock.now_millis()
    experiment_id = document["experiment_id"]
    operations = [table.put_op(_item(updated), condition="attribute_exists(pk)")]
    if updated["name"] != document["name"]:
        operations += [
            table.put_op(
                NAME.item({"schema_id": schema_id}, experiment_id=experiment_id, name=updated["name"]), condition="attribute_not_exists(pk)"
            ),
            table.delete_op(NAME.key(experiment_id=experiment_id, name=document["name"])),
        ]
    try:
        table.transact(operations)
    except table.ConditionFailed:
        if _get_document(schema_id) is None:
            raise _missing(schema_id) from None
        raise _duplicate(updated["name"], experiment_id) from None
    return _answer(updated)


def delete_label_schema(schema_id: str) -> None:
    """A no-op for an unknown id; the default question cannot be deleted."""
    document = _get_document(schema_id)
    if document is None:
        return
    if document.get("is_default"):
        raise invalid("The experiment's default question cannot be deleted.")
    experiment_id = document["experiment_id"]
    table.transact(
        [
            table.delete_op(SCHEMA.key(experiment_id=experiment_id, schema_id=schema_id)),
            table.delete_op(NAME.key(experiment_id=experiment_id, name=document["name"])),
            table.delete_op(review.locator_key(schema_id)),
        ]
    )


def existing_ids(experiment_id: str, schema_ids: list[str]) -> set[str]:
    """The ids among ``schema_ids`` that are schemas of this experiment (one BatchGetItem)."""
    found = table.batch_get([SCHEMA.key(experiment_id=experiment_id, schema_id=s) for s in dict.fromkeys(schema_ids)])
    return {item["schema_id"] for item in found}
