"""Logged models feature Lambda (MLflow 3)."""
