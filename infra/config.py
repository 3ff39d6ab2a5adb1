"""Stack configuration read from CDK context (``cdk.json`` or ``cdk synth -c key=value``)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from aws_cdk import aws_logs as logs
from constructs import Construct

AUTHORIZATION_MODES = ("iam", "basic", "none")
# basic: the alarms an operator must hear about, no dashboard (<= $3/month idle, tools/idle_cost.py);
# full: those plus per-function duration/throttle alarms and the dashboard.
MONITORING_LEVELS = ("basic", "full")
BOOLEANS = {"true": True, "1": True, "yes": True, "false": False, "0": False, "no": False}
_EMAIL = re.compile(r"^[^@\s,;]+@[^@\s,;]+\.[A-Za-z]{2,}$")
_REGION = re.compile(r"^[a-z]{2}(-[a-z]+)+-\d$")
_SNS_TOPIC_ARN = re.compile(r"^arn:aws[a-z-]*:sns:[a-z0-9-]+:\d{12}:[A-Za-z0-9_-]{1,256}(\.fifo)?$")
_ARCHIVAL_RETENTION = re.compile(r"^[1-9][0-9]*[mhd]$")  # MLflow's trace archival duration
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


# 15 API functions (+ the authorizer) x this, plus the workers' reservations, stay below the default quota of 1,000
# minus the 100 Lambda keeps unreserved.
MAX_API_FUNCTION_CONCURRENCY = 50


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
    # Alarms always notify the stack's own SNS topic (output AlarmTopicArn); an e-mail address subscribes to it, and
    # an existing topic's ARN is notified too.
    alarm_topic_arn: str = ""
    alarm_email: str = ""
    # Which alarms and dashboard (MONITORING_LEVELS): "basic" (default) or "full".
    monitoring: str = "basic"
    # Reserved concurrency of each API function: caps the API within the account's concurrency quota (the default
    # quota is 1,000; 15 API functions x 40 + the workers' 65 leave 335 unreserved). 0: no reservations
    # at all (accounts whose quota is below 1,000, where any reservation fails the deploy).
    api_function_concurrency: int = 40
    # Opt-in: each function's `live` alias moves to a new version through CodeDeploy (10% for 5 minutes), rolled
    # back when the alias's errors alarm.
    canary: bool = False
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
    # MLflow's server-owned trace archival (its MLFLOW_TRACE_ARCHIVAL_CONFIG file's retention, long-retention
    # allowlist and max_traces_per_pass): a retention such as "30d" turns it on; the monitor's minute tick then moves
    # older traces' spans to the artifact store (s3://<bucket>/mlartifacts, MLflow's layout). Empty: off.
    trace_archival_retention: str = ""
    trace_archival_long_retention_allowlist: str = ""
    trace_archival_max_traces_per_pass: int = 0
    trace_archival_interval_seconds: int = 300

    @property
    def trace_archival_settings(self) -> dict[str, str]:
        """The archival settings as every function's environment (server-info, experiments and the monitor read them)."""
        if not self.trace_archival_retention:
            return {}
        settings = {"TRACE_ARCHIVAL_RETENTION": self.trace_archival_retention}
        if self.trace_archival_long_retention_allowlist:
            settings["TRACE_ARCHIVAL_LONG_RETENTION_ALLOWLIST"] = self.trace_archival_long_retention_allowlist
        if self.trace_archival_max_traces_per_pass:
            settings["TRACE_ARCHIVAL_MAX_TRACES_PER_PASS"] = str(self.trace_archival_max_traces_per_pass)
        settings["TRACE_ARCHIVAL_INTERVAL_SECONDS"] = str(self.trace_archival_interval_seconds)
        return settings

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
        if self.trace_archival_retention and not _ARCHIVAL_RETENTION.match(self.trace_archival_retention):
            raise ValueError(
                f"context 'trace_archival_retention' must be <int><unit> with unit m, h or d (e.g. 30d), got {self.trace_archival_retention!r}"
            )
        if not 1 <= self.trace_archival_interval_seconds <= 86_400:
            raise ValueError(f"context 'trace_archival_interval_seconds' must be 1 to 86400, got {self.trace_archival_interval_seconds}")
        if self.trace_archival_max_traces_per_pass < 0:
            raise ValueError(
                f"context 'trace_archival_max_traces_per_pass' must be 0 (no limit) or more, got {self.trace_archival_max_traces_per_pass}"
            )
        if self.noncurrent_version_days < 1:
            raise ValueError(f"context 'noncurrent_version_days' must be at least 1, got {self.noncurrent_version_days}")
        if self.alarm_topic_arn and not _SNS_TOPIC_ARN.match(self.alarm_topic_arn):
            raise ValueError(
                f"context 'alarm_topic_arn' must be an SNS topic ARN (arn:aws:sns:<region>:<account>:<name>), got {self.alarm_topic_arn!r}"
            )
        if self.alarm_email and not _EMAIL.match(self.alarm_email):
            raise ValueError(f"context 'alarm_email' must be one e-mail address (name@example.com), got {self.alarm_email!r}")
        if self.monitoring not in MONITORING_LEVELS:
            raise ValueError(f"context 'monitoring' must be one of {MONITORING_LEVELS}, got {self.monitoring!r}")
        if not 0 <= self.api_function_concurrency <= MAX_API_FUNCTION_CONCURRENCY:
            raise ValueError(
                f"context 'api_function_concurrency' must be 0 (no reservations) to {MAX_API_FUNCTION_CONCURRENCY} "
                f"(the default account quota of 1,000), got {self.api_function_concurrency}"
            )
        for model in self.bedrock_model_list:
            # Least privilege: each entry names models; a wildcard would reach every model of the account.
            if "*" in model or any(c.isspace() for c in model):
                raise ValueError(f"context 'bedrock_models' entries must name models (no '*', no spaces), got {model!r}")
        if self.log_level.upper() not in ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"):
            raise ValueError(f"context 'log_level' is not a log level: {self.log_level!r}")

    def reserved(self, count: int) -> int | None:
        """A worker's reserved concurrency, unless reservations are off (``api_function_concurrency`` 0)."""
        return count if self.api_function_concurrency else None

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
                values[name] = raw if isinstance(raw, bool) else _boolean(name, raw)
            elif isinstance(default.default, int):
                try:
                    values[name] = int(raw)
                except ValueError:
                    raise ValueError(f"context {name!r} must be a whole number, got {raw!r}") from None
            else:
                values[name] = str(raw)
        return cls(**values)


def _boolean(name: str, raw: object) -> bool:
    try:
        return BOOLEANS[str(raw).strip().lower()]
    except KeyError:
        raise ValueError(f"context {name!r} must be one of {tuple(BOOLEANS)}, got {raw!r}") from None


def stack_environment(stated_region: str | None, environ: Mapping[str, str]) -> tuple[str | None, str | None]:
    """(account, region) of the stack: the region stated in context (``region``), else the CLI's
    (``CDK_DEFAULT_REGION``) when it resolved an account too. Without AWS configuration the CLI still sets
    ``us-east-1``, which would be written into every ARN: the stack stays environment-agnostic instead (ARNs carry
    ``AWS::Region``, resolved where it is deployed)."""
    account = environ.get("CDK_DEFAULT_ACCOUNT") or None
    if stated_region:
        if not _REGION.match(stated_region):
            raise ValueError(f"context 'region' must be an AWS region name (eu-west-1, us-east-1, ...), got {stated_region!r}")
        return account, stated_region
    return account, (environ.get("CDK_DEFAULT_REGION") or None) if account else None
