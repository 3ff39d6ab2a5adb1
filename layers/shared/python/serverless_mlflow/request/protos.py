"""MLflow's protobuf messages that requests nest and answers carry, declared as data and built at import.

MLflow's handlers parse a request with protobuf's ``ParseDict`` (unknown fields ignored) and answer with
``MessageToDict`` (proto field names, int64 printed as numbers: ``utils/proto_json_utils.message_to_json``).
Request-path code never imports ``mlflow``, so the few messages whose JSON rules matter beyond flat fields
(``google.protobuf.Value`` payloads, ``Timestamp`` fields, enums by name or number, proto2 presence) are
declared here with the same field names, numbers and types as MLflow's ``.proto`` files, and parsed and
printed by protobuf's own ``json_format``: the answers are MLflow's to the byte, not an imitation of them.

A field is ``name: (number, kind)``; a kind is ``string``, ``bool``, ``int32``, ``int64``, ``double``,
``enum:<Enum>``, ``<Message>`` (declared here), ``Value`` / ``Timestamp`` (well-known types),
``map<string,string>``, and ``[kind]`` for a repeated field.
"""

from __future__ import annotations

from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, json_format, message_factory, struct_pb2, timestamp_pb2  # noqa: F401  (registers the well-known types)
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message

from serverless_mlflow.core.errors import invalid

_PACKAGE = "serverless_mlflow.mirror"

ENUMS: dict[str, tuple[str, ...]] = {
    # assessments.proto (AssessmentSource.SourceType)
    "SourceType": ("SOURCE_TYPE_UNSPECIFIED", "HUMAN", "LLM_JUDGE", "CODE"),
    # label_schemas.proto
    "LabelSchemaType": ("LABEL_SCHEMA_TYPE_UNSPECIFIED", "FEEDBACK", "EXPECTATION"),
    # review_queues.proto
    "ReviewItemType": ("REVIEW_ITEM_TYPE_UNSPECIFIED", "TRACE"),
    "ReviewQueueType": ("REVIEW_QUEUE_TYPE_UNSPECIFIED", "USER", "CUSTOM"),
    "ReviewStatus": ("REVIEW_STATUS_UNSPECIFIED", "PENDING", "COMPLETE", "DECLINED"),
    # prompt_optimization.proto
    "OptimizerType": ("OPTIMIZER_TYPE_UNSPECIFIED", "OPTIMIZER_TYPE_GEPA", "OPTIMIZER_TYPE_METAPROMPT"),
}

MESSAGES: dict[str, dict[str, tuple[int, str]]] = {
    # --- assessments.proto ---------------------------------------------------------------------
    "AssessmentSource": {"source_type": (1, "enum:SourceType"), "source_id": (2, "string")},
    "AssessmentError": {"error_code": (1, "string"), "error_message": (2, "string"), "stack_trace": (3, "string")},
    "ExpectationSerializedValue": {"serialization_format": (1, "string"), "value": (2, "string")},
    "Expectation": {"value": (2, "Value"), "serialized_value": (3, "ExpectationSerializedValue")},
    "Feedback": {"value": (2, "Value"), "error": (3, "AssessmentError")},
    "IssueReference": {"issue_name": (1, "string")},
    "Assessment": {
        "assessment_id": (1, "string"),
        "assessment_name": (2, "string"),
        "trace_id": (3, "string"),
        "span_id": (4, "string"),
        "source": (5, "AssessmentSource"),
        "create_time": (6, "Timestamp"),
        "last_update_time": (7, "Timestamp"),
        "feedback": (9, "Feedback"),
        "expectation": (10, "Expectation"),
        "issue": (16, "IssueReference"),
        "rationale": (11, "string"),
        "error": (12, "AssessmentError"),
        "metadata": (13, "map<string,string>"),
        "overrides": (14, "string"),
        "valid": (15, "bool"),
    },
    # --- label_schemas.proto -------------------------------------------------------------------
    "InputPassFail": {"positive_label": (1, "string"), "negative_label": (2, "string")},
    "InputCategorical": {"options": (1, "[string]"), "multi_select": (2, "bool")},
    "InputNumeric": {"min_value": (1, "double"), "max_value": (2, "double")},
    "InputText": {"max_length": (1, "int32")},
    "LabelSchemaInput": {
        "pass_fail": (1, "InputPassFail"),
        "categorical": (2, "InputCategorical"),
        "numeric": (3, "InputNumeric"),
        "text": (4, "InputText"),
    },
    "LabelSchema": {
        "schema_id": (1, "string"),
        "experiment_id": (2, "string"),
        "name": (3, "string"),
        "type": (4, "enum:LabelSchemaType"),
        "instruction": (5, "string"),
        "enable_comment": (6, "bool"),
        "input": (7, "LabelSchemaInput"),
        "created_by": (8, "string"),
        "created_at": (9, "int64"),
        "last_updated_at": (10, "int64"),
        "is_default": (11, "bool"),
    },
    # --- review_queues.proto -------------------------------------------------------------------
    "ReviewQueue": {
        "queue_id": (1, "string"),
        "experiment_id": (2, "string"),
        "name": (3, "string"),
        "queue_type": (4, "enum:ReviewQueueType"),
        "created_by": (5, "string"),
        "creation_time_ms": (6, "int64"),
        "last_update_time_ms": (7, "int64"),
        "users": (8, "[string]"),
        "schema_ids": (9, "[string]"),
    },
    "ReviewQueueItem": {
        "queue_id": (1, "string"),
        "item_type": (2, "enum:ReviewItemType"),
        "item_id": (3, "string"),
        "status": (4, "enum:ReviewStatus"),
        "completed_by": (5, "string"),
        "completed_time_ms": (6, "int64"),
        "creation_time_ms": (7, "int64"),
        "last_update_time_ms": (8, "int64"),
    },
    # --- issues.proto --------------------------------------------------------------------------
    "Issue": {
        "issue_id": (1, "string"),
        "experiment_id": (2, "string"),
        "name": (3, "string"),
        "description": (4, "string"),
        "status": (5, "string"),
        "severity": (6, "string"),
        "root_causes": (7, "[string]"),
        "source_run_id": (8, "string"),
        "created_timestamp": (9, "int64"),
        "last_updated_timestamp": (10, "int64"),
        "created_by": (11, "string"),
        "categories": (12, "[string]"),
        "trace_count": (13, "int32"),
    },
    # --- prompt_optimization.proto (the request's config and tags) ------------------------------
    "PromptOptimizationJobConfig": {
        "optimizer_type": (1, "enum:OptimizerType"),
        "dataset_id": (2, "string"),
        "scorers": (3, "[string]"),
        "optimizer_config_json": (4, "string"),
    },
    "PromptOptimizationJobTag": {"key": (1, "string"), "value": (2, "string")},
}

# Oneofs: a message's fields that exclude each other (protobuf refuses JSON setting two of them).
ONEOFS: dict[str, dict[str, tuple[str, ...]]] = {
    "Assessment": {"value": ("feedback", "expectation", "issue")},
    "LabelSchemaInput": {"input": ("pass_fail", "categorical", "numeric", "text")},
}

_SCALARS = {
    "string": FieldDescriptor.TYPE_STRING,
    "bool": FieldDescriptor.TYPE_BOOL,
    "int32": FieldDescriptor.TYPE_INT32,
    "int64": FieldDescriptor.TYPE_INT64,
    "double": FieldDescriptor.TYPE_DOUBLE,
}
_WELL_KNOWN = {"Value": ".google.protobuf.Value", "Timestamp": ".google.protobuf.Timestamp"}
_INT64_TYPES = (FieldDescriptor.TYPE_INT64, FieldDescriptor.TYPE_UINT64, FieldDescriptor.TYPE_SINT64, FieldDescriptor.TYPE_FIXED64)


def _field(message: descriptor_pb2.DescriptorProto, name: str, number: int, kind: str) -> None:
    field = message.field.add(name=name, number=number, label=FieldDescriptor.LABEL_OPTIONAL)
    if kind.startswith("["):
        field.label = FieldDescriptor.LABEL_REPEATED
        kind = kind[1:-1]
    if kind == "map<string,string>":
        entry_name = "".join(part.capitalize() for part in name.split("_")) + "Entry"
        entry = message.nested_type.add(name=entry_name)
        entry.options.map_entry = True
        entry.field.add(name="key", number=1, label=FieldDescriptor.LABEL_OPTIONAL, type=FieldDescriptor.TYPE_STRING)
        entry.field.add(name="value", number=2, label=FieldDescriptor.LABEL_OPTIONAL, type=FieldDescriptor.TYPE_STRING)
        field.label = FieldDescriptor.LABEL_REPEATED
        field.type = FieldDescriptor.TYPE_MESSAGE
        field.type_name = f".{_PACKAGE}.{message.name}.{entry_name}"
    elif kind in _SCALARS:
        field.type = _SCALARS[kind]
    elif kind.startswith("enum:"):
        field.type = FieldDescriptor.TYPE_ENUM
        field.type_name = f".{_PACKAGE}.{kind[5:]}"
    else:
        field.type = FieldDescriptor.TYPE_MESSAGE
        field.type_name = _WELL_KNOWN.get(kind, f".{_PACKAGE}.{kind}")


def _build() -> dict[str, type[Message]]:
    file = descriptor_pb2.FileDescriptorProto(name="serverless_mlflow/mirror.proto", package=_PACKAGE, syntax="proto2")
    file.dependency.extend(["google/protobuf/struct.proto", "google/protobuf/timestamp.proto"])
    for enum_name, values in ENUMS.items():
        enum = file.enum_type.add(name=enum_name)
        for number, value in enumerate(values):
            enum.value.add(name=value, number=number)
    for message_name, fields in MESSAGES.items():
        message = file.message_type.add(name=message_name)
        for field_name, (number, kind) in fields.items():
            _field(message, field_name, number, kind)
        for oneof_name, members in ONEOFS.get(message_name, {}).items():
            index = len(message.oneof_decl)
            message.oneof_decl.add(name=oneof_name)
            for field in message.field:
                if field.name in members:
                    field.oneof_index = index
    pool = descriptor_pool.Default()
    try:
        built = pool.FindFileByName(file.name)
    except KeyError:
        pool.Add(file)  # returns None with some protobuf backends (upb): look the file up again
        built = pool.FindFileByName(file.name)
    return {name: message_factory.GetMessageClass(built.message_types_by_name[name]) for name in MESSAGES}


CLASSES = _build()


def parse(message_name: str, value: Any, field: str) -> Message:
    """``value`` (request JSON) as the named message, with protobuf's JSON rules (unknown fields ignored,
    as MLflow's ``parse_dict``); a value protobuf refuses is INVALID_PARAMETER_VALUE naming ``field``."""
    message = CLASSES[message_name]()
    if not isinstance(value, dict):
        raise invalid(f"Invalid value {_shown(value)} for parameter '{field}' supplied.")
    try:
        json_format.ParseDict(value, message, ignore_unknown_fields=True)
    except (json_format.ParseError, ValueError, TypeError, OverflowError, RecursionError) as error:
        raise invalid(f"Invalid value {_shown(value)} for parameter '{field}' supplied: {_reason(error)}") from None
    return message


def to_json(message: Message) -> dict[str, Any]:
    """MLflow's answer for a message: proto field names, int64 fields as JSON numbers."""
    return _int64_as_numbers(message, json_format.MessageToDict(message, preserving_proto_field_name=True))


def _int64_as_numbers(message: Message, out: dict[str, Any]) -> dict[str, Any]:
    for field, value in message.ListFields():
        if field.type == FieldDescriptor.TYPE_MESSAGE and field.message_type.GetOptions().map_entry:
            continue  # only string maps are declared
        if field.type == FieldDescriptor.TYPE_MESSAGE and field.message_type.file.name == "serverless_mlflow/mirror.proto":
            if field.is_repeated:
                out[field.name] = [_int64_as_numbers(v, d) for v, d in zip(value, out[field.name], strict=True)]
            else:
                out[field.name] = _int64_as_numbers(value, out[field.name])
        elif field.type in _INT64_TYPES:
            out[field.name] = [int(v) for v in value] if field.is_repeated else int(value)
    return out


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 200 else text[:200] + "..."


def _reason(error: Exception) -> str:
    text = str(error)
    return text if len(text) <= 300 else text[:300] + "..."
