"""How each provider authenticates: MLflow's ``_PROVIDER_AUTH_MODES`` (``mlflow/utils/providers.py``), as data,
and the ``provider-config`` answer built from it as ``get_provider_config_response`` builds it.

MLflow keeps this table in code, not in its bundled model catalog, so it is reproduced here (the Lambda never
imports mlflow); ``tests/gateway/test_gateway_catalog.py`` compares every provider's answer with MLflow's, so
a new mlflow pin that changes the table fails the tests until this copy follows. A provider without a row
authenticates with a plain API key (``_build_simple_api_key_mode``).
"""

from __future__ import annotations

from typing import Any

from serverless_mlflow.core.errors import invalid
from serverless_mlflow.llm_gateway import provider_filter

AuthMode = dict[str, Any]

SECRET, CONFIG = True, False
REQUIRED, OPTIONAL = True, False

# Spellings MLflow folds into one provider before the lookup; bedrock_converse shares bedrock's modes.
_CONFIG_PROVIDER = {"bedrock_converse": "bedrock"}


def _field(name: str, description: str, secret: bool, required: bool, **default: str | None) -> dict[str, Any]:
    # MLflow's field dicts: "default" appears only when the table gives one.
    return {"name": name, "description": description, "secret": secret, "required": required, **default}


def _mode(display_name: str, description: str, fields: list[dict[str, Any]], **flags: Any) -> AuthMode:
    return {"display_name": display_name, "description": description, "fields": fields, **flags}


AUTH_MODES: dict[str, dict[str, AuthMode]] = {
    "bedrock": {
        "api_key": _mode(
            "API Key",
            "Use Amazon Bedrock API Key (bearer token)",
            [
                _field("api_key", "Amazon Bedrock API Key", SECRET, REQUIRED),
                _field("aws_region_name", "AWS Region", CONFIG, REQUIRED),
            ],
            default=True,
        ),
        "access_keys": _mode(
            "Access Keys",
            "Use AWS Access Key ID and Secret Access Key",
            [
                _field("aws_access_key_id", "AWS Access Key ID", SECRET, REQUIRED),
                _field("aws_secret_access_key", "AWS Secret Access Key", SECRET, REQUIRED),
                _field("aws_region_name", "AWS Region (e.g., us-east-1)", CONFIG, OPTIONAL),
            ],
        ),
        "iam_role": _mode(
            "IAM Role Assumption",
            "Assume an IAM role using the server's ambient credentials (instance profile, IRSA, ECS task role, ~/.aws/credentials, etc.)",
            [
                _field("aws_role_name", "IAM Role ARN to assume", CONFIG, REQUIRED),
                _field("aws_region_name", "AWS Region (e.g., us-east-1)", CONFIG, OPTIONAL),
            ],
        ),
        "default_chain": _mode(
            "Default Credential Chain",
            "Use the server's default AWS credentials (instance profile, IRSA, ECS task role, ~/.aws/credentials, etc.)",
            [
                _field("aws_role_name", "IAM Role ARN to assume (optional, for cross-account access)", CONFIG, OPTIONAL),
                _field("aws_session_name", "Session name for assumed role", CONFIG, OPTIONAL),
                _field("aws_region_name", "AWS Region (e.g., us-east-1)", CONFIG, OPTIONAL),
            ],
        ),
    },
    "azure": {
        "api_key": _mode(
            "API Key",
            "Use Azure OpenAI API Key",
            [
                _field("api_key", "Azure OpenAI API Key", SECRET, REQUIRED),
                _field("api_base", "Azure OpenAI endpoint URL", CONFIG, REQUIRED),
                _field("api_version", "API version (e.g., 2024-02-01)", CONFIG, REQUIRED),
            ],
            default=True,
        ),
    },
    "vertex_ai": {
        "service_account_json": _mode(
            "Service Account JSON",
            "Use GCP Service Account credentials (JSON key file contents)",
            [
                _field("vertex_credentials", "Service Account JSON key file contents", SECRET, REQUIRED),
                _field("vertex_project", "GCP Project ID", CONFIG, REQUIRED),
                _field("vertex_location", "GCP Region (e.g., us-central1)", CONFIG, OPTIONAL, default="us-central1"),
            ],
            default=True,
        ),
        "default_chain": _mode(
            "Application Default Credentials",
            "Use the server's Application Default Credentials (GOOGLE_APPLICATION_CREDENTIALS, gcloud auth application-default login, or attached GCE/GKE/Cloud Run service account)",
            [
                _field("vertex_project", "GCP Project ID", CONFIG, REQUIRED),
                _field("vertex_location", "GCP Region (e.g., us-central1)", CONFIG, OPTIONAL, default="us-central1"),
            ],
        ),
    },
    "databricks": {
        "pat_token": _mode(
            "Personal Access Token",
            "Use Databricks Personal Access Token",
            [
                _field("api_key", "Databricks Personal Access Token", SECRET, REQUIRED),
                _field("api_base", "Databricks workspace URL", CONFIG, REQUIRED),
            ],
            default=True,
        ),
        "oauth_m2m": _mode(
            "OAuth M2M (Service Principal)",
            "Use OAuth machine-to-machine authentication",
            [
                _field("client_secret", "OAuth Client Secret", SECRET, REQUIRED),
                _field("api_base", "Databricks workspace URL", CONFIG, REQUIRED),
                _field("client_id", "OAuth Client ID", CONFIG, REQUIRED),
            ],
            runtime_auth="databricks_oauth_m2m",
        ),
    },
    "portkey": {
        "api_key": _mode(
            "API Key",
            "Use Portkey API Key with an optional routing target",
            [
                _field("api_key", "Portkey API Key", SECRET, REQUIRED),
                _field(
                    "portkey_provider",
                    "Provider to route to: a Model Catalog slug (e.g. @openai-prod) or a bare provider slug (e.g. openai)",
                    CONFIG,
                    OPTIONAL,
                ),
                _field(
                    "portkey_config",
                    "Portkey config ID (e.g. pc-xxxx) or JSON config. Stored as a secret since a raw JSON config may embed upstream credentials",
                    SECRET,
                    OPTIONAL,
                ),
                _field(
                    "provider_api_key", "Upstream provider API key (only for bare provider slugs not stored in Portkey)", SECRET, OPTIONAL
                ),
                _field("api_base", "Portkey API Base URL (defaults to https://api.portkey.ai/v1)", CONFIG, OPTIONAL),
            ],
            default=True,
        ),
    },
    "sagemaker": {
        "access_keys": _mode(
            "Access Keys",
            "Use AWS Access Key ID and Secret Access Key",
            [
                _field("aws_access_key_id", "AWS Access Key ID", SECRET, REQUIRED),
                _field("aws_secret_access_key", "AWS Secret Access Key", SECRET, REQUIRED),
                _field("aws_region_name", "AWS Region (e.g., us-east-1)", CONFIG, REQUIRED),
            ],
            default=True,
        ),
        "iam_role": _mode(
            "IAM Role Assumption",
            "Assume an IAM role using base credentials (for cross-account access)",
            [
                _field("aws_access_key_id", "AWS Access Key ID (for assuming role)", SECRET, REQUIRED),
                _field("aws_secret_access_key", "AWS Secret Access Key", SECRET, REQUIRED),
                _field("aws_role_name", "IAM Role ARN to assume", CONFIG, REQUIRED),
                _field("aws_session_name", "Session name for assumed role", CONFIG, OPTIONAL),
                _field("aws_region_name", "AWS Region (e.g., us-east-1)", CONFIG, REQUIRED),
            ],
        ),
        "default_chain": _mode(
            "Default Credential Chain",
            "Use the server's default AWS credentials (instance profile, IRSA, ECS task role, ~/.aws/credentials, etc.)",
            [
                _field("aws_role_name", "IAM Role ARN to assume (optional, for cross-account access)", CONFIG, OPTIONAL),
                _field("aws_session_name", "Session name for assumed role", CONFIG, OPTIONAL),
                _field("aws_region_name", "AWS Region (e.g., us-east-1)", CONFIG, OPTIONAL),
            ],
        ),
    },
    "typesafe": {
        "api_key": _mode(
            "API Key",
            "Use TypeSafe API Key",
            [
                _field("api_key", "TypeSafe API Key", SECRET, REQUIRED),
                _field("api_base", "TypeSafe API Base URL (defaults to https://api.typesafe.ai/v1)", CONFIG, OPTIONAL),
            ],
            default=True,
        ),
    },
}


def _response_field(field: dict[str, Any]) -> dict[str, Any]:
    response = {
        "name": field["name"],
        "type": "string",
        "description": field.get("description", ""),
        "required": field.get("required", True),
    }
    if "default" in field:
        response["default"] = field["default"]
    return response


def _mode_response(mode_id: str, mode: AuthMode) -> dict[str, Any]:
    fields = mode["fields"]
    return {
        "mode": mode_id,
        "display_name": mode["display_name"],
        "description": mode["description"],
        "secret_fields": [_response_field(f) for f in fields if f.get("secret")],
        "config_fields": [_response_field(f) for f in fields if not f.get("secret")],
    }


def _api_key_mode(provider: str) -> AuthMode:
    # str.title() as MLflow uses it ("together_ai" -> "Together_Ai").
    title = provider.title()
    return _mode(
        "API Key",
        f"Use {title} API Key",
        [_field("api_key", f"{title} API Key", SECRET, REQUIRED), _field("api_base", f"{title} API Base URL", CONFIG, OPTIONAL)],
        default=True,
    )


def provider_config(provider: str | None) -> dict[str, Any]:
    """``GET /ajax-api/3.0/mlflow/gateway/provider-config?provider=...``: the provider's auth modes."""
    if not provider:
        raise invalid("Provider parameter is required")
    if not provider_filter.is_allowed(provider):
        raise invalid(f"Provider '{provider}' is not allowed by the current gateway provider policy.")
    provider = provider_filter.normalize(provider.lower())
    modes = AUTH_MODES.get(_CONFIG_PROVIDER.get(provider, provider))
    if modes is None:
        return {"auth_modes": [_mode_response("api_key", _api_key_mode(provider))], "default_mode": "api_key"}
    responses = [_mode_response(mode_id, mode) for mode_id, mode in modes.items()]
    # MLflow's loop keeps the last mode flagged default.
    defaults = [mode_id for mode_id, mode in modes.items() if mode.get("default")]
    return {"auth_modes": responses, "default_mode": defaults[-1] if defaults else responses[0]["mode"]}
