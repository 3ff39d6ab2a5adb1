"""Label schema and review queue rules (``mlflow/genai/label_schemas/validation.py`` and
``mlflow/genai/review_queues/validation.py``), with MLflow's messages.

Label schema inputs arrive as the parsed ``LabelSchemaInput`` variant: ``(variant, fields)`` where the fields
hold what ``Input*.from_proto`` reads (a double or int only when the proto field is set).
"""

from __future__ import annotations

from typing import Any

from serverless_mlflow.core.errors import invalid

# --- label schemas -----------------------------------------------------------------------------------

NAME_MAX_LENGTH = 250
INSTRUCTION_MAX_LENGTH = 1000
PASS_FAIL_LABEL_MAX_LENGTH = 64
CATEGORICAL_OPTIONS_MAX_COUNT = 10
CATEGORICAL_OPTION_MAX_LENGTH = 64
DEFAULT_LABEL_SCHEMA_NAME = "Feedback"
DEFAULT_LABEL_SCHEMA_INSTRUCTION = "Share any feedback on this trace."
INPUT_CLASSES = {"pass_fail": "InputPassFail", "categorical": "InputCategorical", "numeric": "InputNumeric", "text": "InputText"}


def _not_reserved(name: str) -> None:
    if name.strip().lower() == DEFAULT_LABEL_SCHEMA_NAME.lower():
        raise invalid(f"`{name}` is reserved for the experiment's default question and cannot be used for another label schema.")


def _schema_name(name: str) -> None:
    if len(name) < 1:
        raise invalid(f"Label schema `name` must be a non-empty string; got {name!r}.")
    if len(name) > NAME_MAX_LENGTH:
        raise invalid(f"Label schema `name` must be at most {NAME_MAX_LENGTH} characters; got {len(name)}.")


def _instruction(instruction: str | None) -> None:
    if instruction is not None and len(instruction) > INSTRUCTION_MAX_LENGTH:
        raise invalid(f"Label schema `instruction` must be at most {INSTRUCTION_MAX_LENGTH} characters; got {len(instruction)}.")


def _pass_fail(fields: dict[str, Any]) -> None:
    for name in ("positive_label", "negative_label"):
        label = fields[name]
        if len(label) < 1:
            raise invalid(f"`InputPassFail.{name}` must be a non-empty string; got {label!r}.")
        if len(label) > PASS_FAIL_LABEL_MAX_LENGTH:
            raise invalid(f"`InputPassFail.{name}` must be at most {PASS_FAIL_LABEL_MAX_LENGTH} characters; got {len(label)}.")
    if fields["positive_label"] == fields["negative_label"]:
        raise invalid(f"`InputPassFail.positive_label` and `negative_label` must be distinct; got {fields['positive_label']!r} for both.")


def _categorical(fields: dict[str, Any]) -> None:
    options = fields["options"]
    if len(options) < 1:
        raise invalid(f"`InputCategorical.options` must be a non-empty list; got {options!r}.")
    if len(options) > CATEGORICAL_OPTIONS_MAX_COUNT:
        raise invalid(f"`InputCategorical.options` must have at most {CATEGORICAL_OPTIONS_MAX_COUNT} entries; got {len(options)}.")
    seen: set[str] = set()
    for option in options:
        if len(option) < 1:
            raise invalid(f"`InputCategorical.options` entries must be non-empty strings; got {option!r}.")
        if len(option) > CATEGORICAL_OPTION_MAX_LENGTH:
            raise invalid(
                f"`InputCategorical.options` entries must be at most {CATEGORICAL_OPTION_MAX_LENGTH} characters; "
                f"got {len(option)} for {option!r}."
            )
        if option in seen:
            raise invalid(f"`InputCategorical.options` must be deduplicated; {option!r} appears twice.")
        seen.add(option)


def _numeric(fields: dict[str, Any]) -> None:
    low, high = fields.get("min_value"), fields.get("max_value")
    if low is not None and high is not None and low >= high:
        raise invalid(f"`InputNumeric.min_value` must be strictly less than `max_value`; got min={low}, max={high}.")


def _text(fields: dict[str, Any]) -> None:
    max_length = fields.get("max_length")
    if max_length is not None and max_length < 1:
        raise invalid(f"`InputText.max_length` must be at least 1; got {max_length}.")


_INPUT_RULES = {"pass_fail": _pass_fail, "categorical": _categorical, "numeric": _numeric, "text": _text}


def validate_label_schema_input(variant: str, fields: dict[str, Any]) -> None:
    _INPUT_RULES[variant](fields)


def validate_label_schema_for_create(name: str, instruction: str | None, variant: str, fields: dict[str, Any]) -> None:
    """``validate_schema_for_create`` (type and enable_comment arrive typed from the proto)."""
    _schema_name(name)
    _not_reserved(name)
    _instruction(instruction)
    validate_label_schema_input(variant, fields)


def validate_label_schema_for_update(
    existing: dict[str, Any], name: str | None, instruction: str | None, new_input: tuple[str, dict[str, Any]] | None
) -> None:
    """``validate_schema_for_update`` (``existing["input"]`` is its ``(variant, fields)``): the default question is frozen; the input variant and a categorical
    schema's ``multi_select`` cannot change."""
    if existing.get("is_default"):
        raise invalid("The experiment's default question cannot be edited.")
    if name is not None:
        _schema_name(name)
        _not_reserved(name)
    _instruction(instruction)
    if new_input is None:
        return
    variant, fields = new_input
    validate_label_schema_input(variant, fields)
    old_variant, old_fields = existing["input"]
    if variant != old_variant:
        raise invalid(
            "A label schema's input type cannot be changed after creation "
            f"(existing: {INPUT_CLASSES[old_variant]}, got: {INPUT_CLASSES[variant]})."
        )
    if variant == "categorical" and bool(fields.get("multi_select")) != bool(old_fields.get("multi_select")):
        raise invalid("`InputCategorical.multi_select` cannot be changed after creation.")


# --- review queues --------------------------------------------------------------------------------

QUEUE_NAME_MAX_LENGTH = 250
USER_MAX_LENGTH = 250
SCHEMA_ID_MAX_LENGTH = 36
ITEM_ID_MAX_LENGTH = 50
RESERVED_QUEUE_NAME = "default"
MAX_ASSIGNED_USERS = 10


def _non_empty(value: str, field: str, max_length: int) -> None:
    if len(value) == 0:
        raise invalid(f"`{field}` must be a non-empty string; got {value!r}.")
    if len(value) > max_length:
        raise invalid(f"`{field}` must be at most {max_length} characters; got {len(value)}.")


def normalize_user(user: str) -> str:
    return user.strip().lower()


def normalize_users(users: list[str]) -> list[str]:
    normalized = []
    for user in users:
        value = normalize_user(user)
        _non_empty(value, "user", USER_MAX_LENGTH)
        normalized.append(value)
    deduped = list(dict.fromkeys(normalized))
    if len(deduped) > MAX_ASSIGNED_USERS:
        raise invalid(f"A review queue can have at most {MAX_ASSIGNED_USERS} assigned users; got {len(deduped)}.")
    return deduped


def normalize_schema_ids(schema_ids: list[str]) -> list[str]:
    normalized = []
    for schema_id in schema_ids:
        value = schema_id.strip()
        _non_empty(value, "schema_id", SCHEMA_ID_MAX_LENGTH)
        normalized.append(value)
    return list(dict.fromkeys(normalized))


def custom_queue_name(name: str) -> str:
    normalized = name.strip()
    _non_empty(normalized, "name", QUEUE_NAME_MAX_LENGTH)
    if normalized.lower() == RESERVED_QUEUE_NAME:
        raise invalid(f"`{normalized}` is a reserved queue name and cannot be used for a custom queue.")
    return normalized


def queue_owner(new_owner: str) -> str:
    stripped = new_owner.strip()
    _non_empty(stripped, "new_owner", USER_MAX_LENGTH)
    return stripped


def validate_queue_for_create(name: str, queue_type: str, users: list[str], schema_ids: list[str]) -> tuple[str, list[str], list[str]]:
    """``validate_queue_for_create``: (name, users, schema ids) normalized; USER queues are their user's."""
    normalized_users = normalize_users(users)
    normalized_schemas = normalize_schema_ids(schema_ids)
    if queue_type == "USER":
        normalized_name = normalize_user(name)
        _non_empty(normalized_name, "name", QUEUE_NAME_MAX_LENGTH)
        if not normalized_users:
            normalized_users = [normalized_name]
        elif normalized_users != [normalized_name]:
            raise invalid(
                "A user queue must have exactly one assigned user equal to its name; "
                f"got name={normalized_name!r} and users={normalized_users!r}."
            )
        if normalized_schemas:
            raise invalid("A user queue cannot have explicitly-attached schemas; it resolves to all of the experiment's label schemas.")
        return normalized_name, normalized_users, normalized_schemas
    return custom_queue_name(name), normalized_users, normalized_schemas


def item_ids_for_attach(item_ids: list[str]) -> list[str]:
    if len(item_ids) == 0:
        raise invalid(f"`item_ids` must be a non-empty list; got {item_ids!r}.")
    normalized = []
    for item_id in item_ids:
        value = item_id.strip()
        _non_empty(value, "item_id", ITEM_ID_MAX_LENGTH)
        normalized.append(value)
    return list(dict.fromkeys(normalized))
