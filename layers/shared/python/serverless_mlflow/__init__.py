"""Shared layer of mlflow-serverless: key schema, table access, errors, validation and search."""
