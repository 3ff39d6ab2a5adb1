"""The ``databricks`` namespace without databricks-sdk, in the job worker's package only (infra/assets.py).

The worker leaves databricks-sdk out (tools/locks.py EXCLUDED): it never talks to Databricks. MLflow probes
``importlib.util.find_spec("databricks.agents")`` at import (``mlflow.genai.scorers.validation``), which raises
instead of answering None when no ``databricks`` package exists at all; with this empty one it answers None, and
``from databricks.sdk import ...`` (Databricks-only code paths) fails as it would without the SDK.
"""
