"""OTLP trace exports (``POST /v1/traces``) as MLflow's OTLP endpoint reads them: protobuf or JSON, optionally
compressed. Shared by the traces feature (which stores the spans) and basic auth (which checks the traces a
request's spans join, ``auth/links.py``); the parse is kept on the request, so it runs once."""

from __future__ import annotations

import gzip
import json
import zlib
from typing import TYPE_CHECKING, Any

from google.protobuf.json_format import ParseDict
from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

if TYPE_CHECKING:
    from serverless_mlflow.http.api import Request


class OtlpError(Exception):
    """Bad OTLP input: answered as MLflow's OTLP endpoint answers it (status, detail)."""

    def __init__(self, status: int, detail: str) -> None:
        super().__init__(detail)
        self.status, self.detail = status, detail


def parse_otlp(body: bytes, content_type: str | None, content_encoding: str | None) -> ExportTraceServiceRequest:
    media_type = content_type.split(";")[0].strip() if content_type else None
    if media_type not in ("application/x-protobuf", "application/json"):
        raise OtlpError(400, f"Invalid Content-Type: {content_type}. Expected: application/x-protobuf or application/json")
    try:
        if content_encoding:
            body = _decompress(body, content_encoding.lower())
        request = ExportTraceServiceRequest()
        if media_type == "application/json":
            ParseDict(_hex_ids_to_base64(json.loads(body)), request, ignore_unknown_fields=True)
        else:
            request.ParseFromString(body)
    except (DecodeError, ValueError, TypeError, AttributeError, OSError, zlib.error, Exception):
        raise OtlpError(400, "Invalid OpenTelemetry format") from None
    if not request.resource_spans:
        raise OtlpError(400, "Invalid OpenTelemetry format - no spans found")
    return request


def _decompress(body: bytes, encoding: str) -> bytes:
    if encoding == "gzip":
        return gzip.decompress(body)
    if encoding == "deflate":
        return zlib.decompress(body)
    raise OtlpError(400, f"Unsupported Content-Encoding: {encoding}")


def _hex_ids_to_base64(data: Any) -> Any:
    import base64

    for resource_span in data.get("resourceSpans", []):
        for scope_span in resource_span.get("scopeSpans", []):
            for span in scope_span.get("spans", []):
                for field in ("traceId", "spanId", "parentSpanId"):
                    if value := span.get(field):
                        span[field] = base64.b64encode(bytes.fromhex(value)).decode("ascii")
    return data


def mlflow_trace_id(otel_trace_id: bytes) -> str:
    # MLflow: "tr-" + the 128-bit OTel trace id in hex (generate_mlflow_trace_id_from_otel_trace_id).
    return "tr-" + otel_trace_id.hex()


def request_of(req: Request) -> ExportTraceServiceRequest:
    """The request's export, parsed once per request (``OtlpError`` for a body MLflow would refuse)."""
    if "otlp" not in req.memo:
        try:
            req.memo["otlp"] = parse_otlp(req.raw_body, req.headers.get("content-type"), req.headers.get("content-encoding"))
        except OtlpError as error:
            req.memo["otlp"] = error
    found = req.memo["otlp"]
    if isinstance(found, OtlpError):
        raise found
    return found


def trace_ids(export: ExportTraceServiceRequest) -> list[str]:
    """The MLflow trace ids the export's spans belong to (spans with malformed ids are the handler's 422)."""
    found = {
        mlflow_trace_id(span.trace_id)
        for resource_span in export.resource_spans
        for scope_span in resource_span.scope_spans
        for span in scope_span.spans
        if len(span.trace_id) == 16
    }
    return sorted(found)
