"""Traces feature Lambda (MLflow 3 tracing: OTLP spans, trace infos, search, tags, assessments)."""
