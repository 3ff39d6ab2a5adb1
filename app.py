#!/usr/bin/env python3
"""CDK app: ``cdk synth`` / ``cdk deploy`` (via ``make synth`` / ``make deploy``).

Context (cdk.json or ``-c key=value``): ``table_name`` (default ``mlflow-serverless``), ``authorization``
(``iam`` default | ``none``), ``log_level``, ``log_retention_days``, ``throttle_rate``, ``throttle_burst``,
``api_memory_mb``, ``indexer_memory_mb``, ``monitoring`` (``basic`` default | ``full``), ``alarm_email``,
``alarm_topic_arn``, ``canary``, ``api_function_concurrency``, ``region``, ``stack_name`` (default ``MlflowServerless``), ``nag``
(``true`` default: run the AwsSolutions and Serverless cdk-nag packs on every synth; acknowledgements
are in ``infra/nag.py``).
"""

from __future__ import annotations

import os

import aws_cdk as cdk
from cdk_nag import AwsSolutionsChecks, ServerlessChecks

import infra  # noqa: F401 - puts layers/shared/python on sys.path
from infra.config import stack_environment
from infra.stack import MlflowServerlessStack

app = cdk.App()
# The region stated in context (`-c region=eu-west-1`), else the CLI's when it knows the account; else
# environment-agnostic (no region written into ARNs).
account, region = stack_environment(app.node.try_get_context("region"), os.environ)
stack = MlflowServerlessStack(
    app,
    app.node.try_get_context("stack_name") or "MlflowServerless",
    env=cdk.Environment(account=account, region=region),
)
if str(app.node.try_get_context("nag") or "true").lower() == "true":
    # cdk-nag 3 runs as a policy-validation plugin: an unacknowledged finding fails the synth.
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app, verbose=True), ServerlessChecks(app, verbose=True))
app.synth()
