"""Stack configuration read from CDK context (``cdk.json`` or ``cdk synth -c key=value``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from aws_cdk import aws_logs as logs
from constructs import Construct

AUTHORIZATION_MODES = ("iam", "basic", "none")
# MLflow's permission names a user gets on a resource without a grant (basic_auth.ini default_permission).
DEFAULT_PERMISSIONS = ("READ", "USE", "EDIT", "MANAGE", "NO_PERMISSIONS")

_RETENTION: dict[int, logs.RetentionDays] = {
    1: logs.RetentionDays.ONE_DAY,
    3: logs.RetentionDays.THREE_DAYS,
    7: logs.RetentionDays.ONE_WEEK,
    14: logs.RetentionDays.TWO_WEEKS,
    30: logs.RetentionDays.ONE_MONTH,
    90: logs.RetentionDays.THREE_MONTHS,
    180: logs.RetentionDays.SIX_MONTHS,
    365: logs.RetentionDays.ONE_YEAR,
}


@dataclass(frozen=True)
class StackConfig:
    # Physical table name; the local runtime and tests use the same default.
    table_name: str = "mlflow-serverless"
    # "iam": every route needs a SigV4-signed request (MLFLOW_TRACKING_AWS_SIGV4=true on the client).
    # "basic": MLflow's basic auth (users, per-user permissions; MLFLOW_TRACKING_USERNAME/PASSWORD on the
    #          client, a login prompt in a browser). The first admin's password is in a Secrets Manager secret.
    # "none": open API, for short trials only.
    authorization: str = "iam"
    # basic: the permission a user has on a resource without a grant, and the first admin's user name.
    auth_default_permission: str = "READ"
    # basic with workspaces: MLflow's grant_default_workspace_access (every user holds auth_default_permission in
    # the `default` workspace, as if it held a role there); off, as MLflow ships it.
    auth_grant_default_workspace_access: bool = False
    admin_username: str = "admin"
    log_level: str = "INFO"
    log_retention_days: int = 30
    # Stage-wide throttling defaults (requests/second and burst) for the HTTP API.
    throttle_rate: int = 200
    throttle_burst: int = 400
    api_memory_mb: int = 1024
    indexer_memory_mb: int = 1024
    # Deleted or overwritten artifacts stay recoverable (S3 versioning) this many days.
    noncurrent_version_days: int = 30
    # Extra browser origins (comma-separated) allowed to read presigned artifact URLs; the API's own is always allowed.
    cors_origins: str = ""
    # Alarm notifications: an existing SNS topic's ARN, and/or an e-mail address for a topic the stack creates.
    alarm_topic_arn: str = ""
    alarm_email: str = ""
    # AI gateway: the providers (comma-separated) its catalog offers, MLflow's MLFLOW_GATEWAY_ALLOWED_PROVIDERS;
    # empty offers every provider of the bundled catalog.
    gateway_allowed_providers: str = ""
    # Registry events: an existing EventBridge bus to put them on (name or ARN); empty: the stack creates one.
    event_bus_name: str = ""
    # Webhook targets, as MLflow's MLFLOW_WEBHOOK_ALLOWED_SCHEMES / MLFLOW_WEBHOOK_ALLOW_PRIVATE_IPS (the CONFIG
    # partition's settings item, `python -m tools.settings set`, overrides them without a redeploy).
    webhook_allowed_schemes: str = "https"
    webhook_allow_private_ips: bool = False
    # MLflow's workspaces (`mlflow server --enable-workspaces`): every function gets MLFLOW_ENABLE_WORKSPACES=true.
    # Partial: see README's workspaces section for the resource families scoped so far.
    enable_workspaces: bool = False
    # MLflow's MLFLOW_SERVER_ENABLE_CUSTOM_SCORERS: `@scorer` (custom code) scorers may be registered and run by the
    # job worker (scorer/invoke, genai/evaluate/invoke). Their code runs in the worker with its role: only for a
    # team that trusts everyone who can register a scorer.
    enable_custom_scorers: bool = False
    # Amazon Bedrock models the gateway runtime may call with its role (comma-separated, or a list in cdk.json):
    # model ids (foundation models in the stack's region) or full ARNs (other regions, inference profiles). Its
    # role gets bedrock:InvokeModel and bedrock:InvokeModelWithResponseStream on those only; empty: no Bedrock
    # right at all (a Bedrock endpoint's calls are refused by Bedrock).
    bedrock_models: str = ""

    @property
    def webhook_settings(self) -> dict[str, str]:
        """The webhook settings as the environment of the functions that check targets."""
        return {
            "MLFLOW_WEBHOOK_ALLOWED_SCHEMES": self.webhook_allowed_schemes,
            "MLFLOW_WEBHOOK_ALLOW_PRIVATE_IPS": "true" if self.webhook_allow_private_ips else "false",
        }

    def __post_init__(self) -> None:
        if self.authorization not in AUTHORIZATION_MODES:
            raise ValueError(f"context 'authorization' must be one of {AUTHORIZATION_MODES}, got {self.authorization!r}")
        if self.auth_default_permission not in DEFAULT_PERMISSIONS:
            raise ValueError(
                f"context 'auth_default_permission' must be one of {DEFAULT_PERMISSIONS}, got {self.auth_default_permission!r}"
            )
        if not self.admin_username:
            raise ValueError("context 'admin_username' must not be empty")
        if self.noncurrent_version_days < 1:
            raise ValueError(f"context 'noncurrent_version_days' must be at least 1, got {self.noncurrent_version_days}")
        if self.alarm_topic_arn and not self.alarm_topic_arn.startswith("arn:"):
            raise ValueError(f"context 'alarm_topic_arn' must be an SNS topic ARN, got {self.alarm_topic_arn!r}")
        for model in self.bedrock_model_list:
            # Least privilege: each entry names models; a wildcard would reach every model of the account.
            if "*" in model or any(c.isspace() for c in model):
                raise ValueError(f"context 'bedrock_models' entries must name models (no '*', no spaces), got {model!r}")
        if self.log_level.upper() not in ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"):
            raise ValueError(f"context 'log_level' is not a log level: {self.log_level!r}")

    @property
    def bedrock_model_list(self) -> list[str]:
        return [model.strip() for model in self.bedrock_models.split(",") if model.strip()]

    @property
    def iam_auth(self) -> bool:
        return self.authorization == "iam"

    @property
    def basic_auth(self) -> bool:
        return self.authorization == "basic"

    @property
    def extra_cors_origins(self) -> list[str]:
        return [origin.strip().rstrip("/") for origin in self.cors_origins.split(",") if origin.strip()]

    @property
    def log_retention(self) -> logs.RetentionDays:
        # CloudWatch only accepts a fixed set of retention periods.
        try:
            return _RETENTION[self.log_retention_days]
        except KeyError:
            raise ValueError(f"context 'log_retention_days' must be one of {sorted(_RETENTION)}, got {self.log_retention_days}") from None

    @classmethod
    def from_context(cls, scope: Construct) -> StackConfig:
        """Read every field from context, falling back to the dataclass default."""
        values: dict[str, Any] = {}
        for name, default in cls.__dataclass_fields__.items():
            raw = scope.node.try_get_context(name)
            if raw is None:
                continue
            # `-c key=value` always arrives as a string; cdk.json may give a list for a comma-separated field.
            if isinstance(raw, list) and isinstance(default.default, str):
                values[name] = ",".join(str(item) for item in raw)
            elif isinstance(default.default, bool):
                values[name] = raw if isinstance(raw, bool) else str(raw).strip().lower() in ("true", "1", "yes")
            else:
                values[name] = type(default.default)(raw) if not isinstance(default.default, str) else str(raw)
        return cls(**values)
