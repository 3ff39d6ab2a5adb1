"""Trace routes (MLflow 3 tracing): parse like MLflow's handlers, call one domain function, answer its JSON."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.event_handler import Response

from serverless_mlflow.core.deferred import deferred
from serverless_mlflow.core.errors import invalid
from serverless_mlflow.core.validation.json_values import float_json
from serverless_mlflow.http.api import Request, build_app, dumps, lambda_entry
from serverless_mlflow.request import key_values_of, message_of
from serverless_mlflow.request.pages import page_response

from . import changes, v2
from .messages import MESSAGES

# Imported by the routes that use them: protobuf (OTLP, span data) and the search grammar stay out of a
# cold start that serves tags or assessments.
otlp = deferred("serverless_mlflow.request.otlp")
ingest = deferred("traces.ingest")
read = deferred("traces.read")
trace_data = deferred("traces.trace_data")
# Trace metrics and filter correlation (rollups, raw rows, the search grammar) for the Overview charts only.
metrics = deferred("traces.metrics")


def otlp_traces(req: Request) -> Response:
    experiment_id = req.headers.get("x-mlflow-experiment-id")
    try:
        if not experiment_id:
            # FastAPI's answer to a missing required header.
            raise otlp.OtlpError(422, "Missing required header: x-mlflow-experiment-id")
        parsed = otlp.request_of(req)
        ingest.log_spans(experiment_id, parsed)
    except otlp.OtlpError as error:
        status, body = ingest.otlp_error_body(error)
        return Response(status_code=status, content_type="application/json", body=dumps(body))
    # An empty ExportTraceServiceResponse, in the encoding the exporter sent.
    if (req.headers.get("content-type") or "").startswith("application/json"):
        return Response(status_code=200, content_type="application/json", body="{}")
    return Response(status_code=200, content_type="application/x-protobuf", body="")


def start_trace(req: Request) -> dict[str, Any]:
    msg = req.message(MESSAGES["start_trace"])
    trace_info = msg["trace"].get("trace_info")
    if not isinstance(trace_info, dict):
        raise invalid("Missing value for required parameter 'trace.trace_info'.")
    return {"trace": {"trace_info": ingest.start_trace(trace_info)}}


def _trace_id(req: Request, name: str = "trace_id") -> str:
    return req.path_params.get(name, "")


def get_trace_info(req: Request) -> dict[str, Any]:
    return {"trace": {"trace_info": read.get_trace_info(_trace_id(req))}}


def get_trace(req: Request) -> dict[str, Any]:
    msg = req.message(MESSAGES["get_trace"])
    return {"trace": read.get_trace(msg["trace_id"])}


def _ids(req: Request, operation: str) -> tuple[list[str], list[str] | None]:
    msg = req.message(MESSAGES[operation])
    return msg["trace_ids"], msg.get("experiment_ids")


def batch_get_traces(req: Request) -> dict[str, Any]:
    traces = read.batch_get_traces(*_ids(req, "batch_get_traces"))
    return {"traces": traces} if traces else {}


def batch_get_trace_infos(req: Request) -> dict[str, Any]:
    infos = read.batch_get_trace_infos(*_ids(req, "batch_get_trace_infos"))
    return {"trace_infos": infos} if infos else {}


def search_traces(req: Request) -> dict[str, Any]:
    msg = req.message(MESSAGES["search_traces"])
    experiment_ids = [
        str(message_of(location.get("mlflow_experiment"), f"locations[{index}].mlflow_experiment").get("experiment_id", ""))
        for index, location in enumerate(msg["locations"])
        if isinstance(location, dict) and "mlflow_experiment" in location
    ]
    traces, token = read.search_traces(
        experiment_ids, msg.get("filter") or None, msg.get("max_results"), msg.get("order_by"), msg.get("page_token") or None
    )
    return page_response("traces", traces, token)


def query_trace_metrics(req: Request) -> dict[str, Any]:
    points = metrics.query_trace_metrics(req.message(MESSAGES["query_trace_metrics"]))
    return {"data_points": points} if points else {}


def calculate_trace_filter_correlation(req: Request) -> dict[str, Any]:
    msg = req.message(MESSAGES["calculate_trace_filter_correlation"])
    result = metrics.calculate_filter_correlation(
        msg["experiment_ids"], msg["filter_string1"], msg["filter_string2"], msg.get("base_filter")
    )
    return {name: float_json(value) if isinstance(value, float) else value for name, value in result.items()}


def set_trace_tag(req: Request) -> dict[str, Any]:
    msg = req.message(MESSAGES["set_trace_tag"])
    changes.check_tag_mutation(msg["key"], "set")
    changes.set_trace_tag(_trace_id(req, "request_id") or _trace_id(req), msg["key"], msg.get("value", ""))
    return {}


def delete_trace_tag(req: Request) -> dict[str, Any]:
    msg = req.message(MESSAGES["delete_trace_tag"])
    changes.check_tag_mutation(msg["key"], "deleted")
    changes.delete_trace_tag(_trace_id(req, "request_id") or _trace_id(req), msg["key"])
    return {}


def delete_traces(req: Request) -> dict[str, Any]:
    msg = req.message(MESSAGES["delete_traces"])
    deleted = changes.delete_traces(
        msg["experiment_id"], msg.get("max_timestamp_millis"), msg.get("max_traces"), msg.get("request_ids") or None
    )
    return {"traces_deleted": deleted} if deleted else {}


def link_traces_to_run(req: Request) -> dict[str, Any]:
    msg = req.message(MESSAGES["link_traces_to_run"])
    changes.link_traces_to_run(msg["trace_ids"], msg["run_id"])
    return {}


def link_prompts_to_trace(req: Request) -> dict[str, Any]:
    msg = req.message(MESSAGES["link_prompts_to_trace"])
    changes.link_prompts_to_trace(msg["trace_id"], changes.prompt_version_ids(msg.get("prompt_versions") or []))
    return {}


def create_assessment(req: Request) -> dict[str, Any]:
    msg = req.message(MESSAGES["create_assessment"])
    return {"assessment": changes.create_assessment(_trace_id(req), msg["assessment"])}


def get_assessment(req: Request) -> dict[str, Any]:
    return {"assessment": changes.get_assessment(_trace_id(req), req.path_params.get("assessment_id", ""))}


def _mask_paths(mask: Any) -> list[str]:
    # FieldMask travels as "assessmentName,feedback" in proto JSON, or as {"paths": [...]}.
    if isinstance(mask, str):
        raw = [p for p in mask.split(",") if p]
    elif isinstance(mask, dict):
        raw = list(mask.get("paths") or [])
    else:
        raise invalid("Invalid value for update_mask")
    return ["".join("_" + c.lower() if c.isupper() else c for c in path) for path in raw]


def update_assessment(req: Request) -> dict[str, Any]:
    msg = req.message(MESSAGES["update_assessment"])
    # update_mask is a FieldMask ("a,b" or {"paths": [...]}): checked present by the table, read here.
    mask = req.json["update_mask"]
    assessment = changes.update_assessment(_trace_id(req), req.path_params.get("assessment_id", ""), msg["assessment"], _mask_paths(mask))
    return {"assessment": assessment}


def delete_assessment(req: Request) -> dict[str, Any]:
    changes.delete_assessment(_trace_id(req), req.path_params.get("assessment_id", ""))
    return {}


def get_trace_artifact(req: Request) -> Response:
    request_id = (req.query.get("request_id") or [""])[0]
    if path := (req.query.get("path") or [""])[0]:
        return Response(status_code=302, content_type="text/plain", body="", headers={"Location": trace_data.attachment(request_id, path)})
    body = trace_data.trace_data(request_id)
    if isinstance(body, str):
        return Response(status_code=302, content_type="text/plain", body="", headers={"Location": body})
    return Response(
        status_code=200,
        content_type="application/octet-stream",
        body=body,
        headers={"Content-Disposition": f"attachment; filename={trace_data.TRACE_DATA_FILE}"},
    )


def get_trace_info_v2(req: Request) -> dict[str, Any]:
    return {"trace_info": v2.info_v2(read.get_trace_info(_trace_id(req, "request_id")))}


def _key_values(msg: dict[str, Any], name: str) -> list[dict[str, Any]]:
    return key_values_of(msg.get(name) or [], name)


def start_trace_v2(req: Request) -> dict[str, Any]:
    msg = req.message(MESSAGES["start_trace_v2"])
    info = v2.start_trace(
        msg.get("experiment_id", ""), msg.get("timestamp_ms", 0), _key_values(msg, "request_metadata"), _key_values(msg, "tags")
    )
    return {"trace_info": info}


def end_trace_v2(req: Request) -> dict[str, Any]:
    msg = req.message(MESSAGES["end_trace_v2"])
    info = v2.end_trace(
        _trace_id(req, "request_id"),
        msg.get("timestamp_ms", 0),
        msg.get("status"),
        _key_values(msg, "request_metadata"),
        _key_values(msg, "tags"),
    )
    return {"trace_info": info}


def search_traces_v2(req: Request) -> dict[str, Any]:
    msg = req.message(MESSAGES["search_traces_v2"])
    traces, token = read.search_traces(
        msg.get("experiment_ids") or [],
        msg.get("filter") or None,
        msg.get("max_results"),
        msg.get("order_by"),
        msg.get("page_token") or None,
    )
    return page_response("traces", [v2.info_v2(t) for t in traces], token)


app = build_app(
    "traces",
    {
        "otlp_traces": otlp_traces,
        "start_trace": start_trace,
        "get_trace_info": get_trace_info,
        "get_trace": get_trace,
        "batch_get_traces": batch_get_traces,
        "batch_get_trace_infos": batch_get_trace_infos,
        "search_traces": search_traces,
        "query_trace_metrics": query_trace_metrics,
        "calculate_trace_filter_correlation": calculate_trace_filter_correlation,
        "search_traces_v2": search_traces_v2,
        "start_trace_v2": start_trace_v2,
        "end_trace_v2": end_trace_v2,
        "get_trace_info_v2": get_trace_info_v2,
        "get_trace_artifact": get_trace_artifact,
        "set_trace_tag": set_trace_tag,
        "delete_trace_tag": delete_trace_tag,
        "delete_traces": delete_traces,
        "link_traces_to_run": link_traces_to_run,
        "link_prompts_to_trace": link_prompts_to_trace,
        "create_assessment": create_assessment,
        "get_assessment": get_assessment,
        "update_assessment": update_assessment,
        "delete_assessment": delete_assessment,
    },
)
lambda_handler = lambda_entry(app)
