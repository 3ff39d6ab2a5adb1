"""``POST /ajax-api/2.0/mlflow/runs/create-promptlab-run``: the prompt engineering UI's run (MLflow's
``create_promptlab_run_handler`` and ``_create_promptlab_run_impl``).

A run with the model's parameters, route and template as params, the evaluation table and a promptlab model
(``model/``: MLmodel, environment files, parameters, input examples) among its artifacts, then FINISHED; any
failure after the run exists marks it FAILED, as MLflow's server does. The files are the few small text files
``mlflow.prompt.promptlab_model.save_model`` writes, composed here (no mlflow on the request path) and put to
S3 by this function under the run's root. YAML is written with JSON-quoted strings, which YAML reads alike.
"""

from __future__ import annotations

import json
import platform
import re
import uuid
from datetime import UTC, datetime
from typing import Any

from serverless_mlflow.core import clock
from serverless_mlflow.core.errors import MlflowError, invalid
from serverless_mlflow.http.server_info import MLFLOW_API_VERSION
from serverless_mlflow.request import parse_message
from serverless_mlflow.storage import s3
from serverless_mlflow.store.artifact_locations import artifact_key, relative_path

from . import data, inputs, lifecycle
from .messages import MESSAGES

_REQUIRED = ("experiment_id", "prompt_template", "prompt_parameters", "model_route", "model_input", "mlflow_version")
LOGGED_ARTIFACTS_TAG = "mlflow.loggedArtifacts"
RUN_SOURCE_TYPE_TAG = "mlflow.runSourceType"


def _params(args: dict[str, Any], name: str) -> list[dict[str, str]]:
    """``Param(param.get("key"), param.get("value"))`` then ``str(value)``, as MLflow builds them."""
    given = args.get(name) or []
    if not isinstance(given, list) or not all(isinstance(entry, dict) for entry in given):
        raise invalid(f"Invalid value for parameter '{name}': a list of {{key, value}} objects is expected.")
    out = []
    for index, entry in enumerate(given):
        key = entry.get("key")
        if not isinstance(key, str):
            raise invalid(f"Invalid value {key!r} for parameter '{name}[{index}].key': a string is expected.")
        # Python's str() of the JSON value, as MLflow stores str(param.value) (0.5 -> "0.5", true -> "True").
        out.append({"key": key, "value": str(entry.get("value"))})
    return out


def create_promptlab_run(args: dict[str, Any]) -> dict[str, Any]:
    for name in _REQUIRED:
        if not args.get(name):
            raise invalid(f"CreatePromptlabRun request must specify {name}.")
    prompt_parameters = _params(args, "prompt_parameters")
    model_parameters = _params(args, "model_parameters")
    output_parameters = _params(args, "model_output_parameters")
    created = lifecycle.create_run(
        parse_message(
            {
                "experiment_id": args["experiment_id"],
                "user_id": args.get("user_id", "unknown"),
                "start_time": args.get("start_time", clock.now_millis()),
                "tags": args.get("tags") or [],
                **({"run_name": args["run_name"]} if args.get("run_name") is not None else {}),
            },
            MESSAGES["create_run"],
        )
    )
    info = created["run"]["info"]
    run_id = info["run_id"]
    status = "FINISHED"
    try:
        _log(run_id, info["artifact_uri"], args, prompt_parameters, model_parameters, output_parameters)
    except Exception:
        status = "FAILED"
    lifecycle.update_run({"run_id": run_id, "status": status, "end_time": clock.now_millis(), "run_name": info.get("run_name")})
    return lifecycle.get_run({"run_id": run_id})


def _log(
    run_id: str,
    artifact_uri: str,
    args: dict[str, Any],
    prompt_parameters: list[dict[str, str]],
    model_parameters: list[dict[str, str]],
    output_parameters: list[dict[str, str]],
) -> None:
    params = [
        *model_parameters,
        {"key": "model_route", "value": str(args["model_route"])},
        {"key": "prompt_template", "value": str(args["prompt_template"])},
    ]
    tags = [
        {"key": LOGGED_ARTIFACTS_TAG, "value": json.dumps([{"path": "eval_results_table.json", "type": "table"}])},
        {"key": RUN_SOURCE_TYPE_TAG, "value": "PROMPT_ENGINEERING"},
    ]
    batch = {"run_id": run_id, "params": params, "tags": tags}
    data.log_batch(batch, batch)
    created = datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S.%f")
    model_uuid = uuid.uuid4().hex
    summary = {"run_id": run_id, "artifact_path": "model", "utc_time_created": created, "model_uuid": model_uuid, "flavors": {}}
    inputs.log_model({"run_id": run_id, "model_json": json.dumps(summary)})
    root = relative_path(artifact_uri)
    if root is None:
        # MLflow's server writes other roots (s3://...) with its own credentials; this role writes the stack's prefix only.
        raise MlflowError(
            f"Run '{run_id}' stores its artifacts at '{artifact_uri}', outside the server's artifact store.", "INVALID_PARAMETER_VALUE"
        )
    files = model_files(run_id, model_uuid, created, args, prompt_parameters, model_parameters)
    files["eval_results_table.json"] = json.dumps(
        eval_results(prompt_parameters, args["model_input"], output_parameters, args.get("model_output"))
    )
    client = s3.client()
    for name, text in files.items():
        client.put_object(
            Bucket=s3.bucket_name(), Key=artifact_key(f"{root}/{name}"), Body=text.encode("utf-8"), ContentType=_content_type(name)
        )


def _content_type(name: str) -> str:
    return "application/json" if name.endswith(".json") else "text/plain"


def eval_results(
    prompt_parameters: list[dict[str, str]], model_input: Any, output_parameters: list[dict[str, str]], model_output: Any
) -> dict[str, Any]:
    """``create_eval_results_json``: one row, prompt parameters then prompt and output then output parameters."""
    columns = [p["key"] for p in prompt_parameters] + ["prompt", "output"] + [p["key"] for p in output_parameters]
    row = [p["value"] for p in prompt_parameters] + [model_input, model_output] + [p["value"] for p in output_parameters]
    return {"columns": columns, "data": [row]}


def model_files(
    run_id: str,
    model_uuid: str,
    created: str,
    args: dict[str, Any],
    prompt_parameters: list[dict[str, str]],
    model_parameters: list[dict[str, str]],
) -> dict[str, str]:
    """``model/...`` as ``promptlab_model.save_model`` writes them (the server's Python, MLflow's API level)."""
    python = platform.python_version()
    requirement = f"mlflow[gateway]=={MLFLOW_API_VERSION}"
    colspec = [{"type": "string", "name": p["key"], "required": True} for p in prompt_parameters]
    example = {"inputs": [p["value"] for p in prompt_parameters]}
    mlmodel = {
        "artifact_path": "model",
        "flavors": {
            "python_function": {
                "env": {"conda": "conda.yaml", "virtualenv": "python_env.yaml"},
                "loader_module": "mlflow.prompt.promptlab_model",
                "parameters_path": "parameters.yaml",
                "python_version": python,
            }
        },
        "is_signature_from_type_hint": False,
        "mlflow_version": MLFLOW_API_VERSION,
        "model_id": None,
        "model_uuid": model_uuid,
        "prompts": None,
        "run_id": run_id,
        "saved_input_example_info": {
            "artifact_path": "input_example.json",
            "serving_input_path": "serving_input_example.json",
            "type": "json_object",
        },
        "signature": {
            "inputs": json.dumps(colspec),
            "outputs": json.dumps([{"type": "string", "name": "output", "required": True}]),
            "params": None,
        },
        "type_hint_from_example": False,
        "utc_time_created": created,
    }
    parameters = {
        "model_parameters": {p["key"]: p["value"] for p in model_parameters},
        "model_route": str(args["model_route"]),
        "prompt_parameters": {p["key"]: p["value"] for p in prompt_parameters},
        "prompt_template": str(args["prompt_template"]),
    }
    conda = {
        "channels": ["conda-forge"],
        "dependencies": [f"python={python}", "pip", {"pip": [requirement]}],
        "name": "mlflow-env",
    }
    python_env = {"python": python, "build_dependencies": ["pip", "setuptools", "wheel"], "dependencies": ["-r requirements.txt"]}
    return {
        "model/MLmodel": to_yaml(mlmodel),
        "model/conda.yaml": to_yaml(conda),
        "model/python_env.yaml": to_yaml(python_env, sort=False),
        "model/requirements.txt": requirement,
        "model/parameters.yaml": to_yaml(parameters),
        "model/input_example.json": json.dumps(example),
        "model/serving_input_example.json": json.dumps({"inputs": example}, indent=2),
    }


_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def to_yaml(value: dict[str, Any], sort: bool = True) -> str:
    """Block YAML of plain data (``yaml.safe_dump``'s layout): strings JSON-quoted, which YAML reads alike."""
    return "\n".join(_yaml_lines(value, 0, sort)) + "\n"


def _scalar(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return json.dumps(value)
    return json.dumps(str(value), ensure_ascii=False)


def _yaml_lines(value: Any, indent: int, sort: bool) -> list[str]:
    pad = " " * indent
    lines: list[str] = []
    if isinstance(value, dict):
        for key in sorted(value) if sort else value:
            item = value[key]
            label = f"{pad}{key if _PLAIN_KEY.fullmatch(key) else _scalar(key)}:"
            if isinstance(item, (dict, list)) and item:
                lines.append(label)
                lines += _yaml_lines(item, indent + 2 if isinstance(item, dict) else indent, sort)
            else:
                lines.append(
                    f"{label} {_scalar(item) if not isinstance(item, (dict, list)) else ('{}' if isinstance(item, dict) else '[]')}"
                )
        return lines
    for item in value:
        if isinstance(item, dict) and item:
            nested = _yaml_lines(item, indent + 2, sort)
            lines.append(f"{pad}- {nested[0].lstrip()}")
            lines += nested[1:]
        else:
            lines.append(f"{pad}- {_scalar(item)}")
    return lines
