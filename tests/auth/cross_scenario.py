"""Issue #22's permission bypasses, played against MLflow's basic-auth app and ours (``test_cross_resources``).

xalice owns an experiment (a run with a secret param, a logged model, a trace, a scorer with an online
config), a registered model with a version; she denies xbob her experiment and her model. xbob owns an
experiment, a run, a registered model and a dataset. Then xbob tries, with his own ids beside hers:
GraphQL naming her ids inline, in variables, under aliases and fragments, in a second operation, in a batch;
requests of his own that link to her resources (a model version from her run, logged model or model; metrics,
inputs and outputs on her logged model; a logged model from her run; her trace started or exported into his
experiment; her online scoring config); and credentials that are wrong on the public pages.

Every xbob answer must be free of ``CANARY`` (xalice's secret param value). Steps with ``differs`` are the
places where this project closes what MLflow leaves open (both statuses asserted).
"""

from __future__ import annotations

import json
import uuid
from typing import Any

from tests.auth.conftest import ADMIN, ADMIN_PASSWORD
from tests.auth.scenario import M2, M3, Ctx, Step

ALICE, BOB = "xalice", "xbob"
PASSWORDS = {ADMIN: ADMIN_PASSWORD, ALICE: "xalice-password-1", BOB: "xbob-password-12"}
CANARY = "alice-canary-" + uuid.uuid4().hex[:8]
# Client-chosen trace ids (the same on both servers: each has its own store).
ALICE_TRACE_HEX = uuid.uuid4().hex
ALICE_TRACE = "tr-" + ALICE_TRACE_HEX
BOB_TRACE = "tr-" + uuid.uuid4().hex
# A trace never stored: a link to it (admin's) waits on its locator, which names no experiment.
PENDING_TRACE = "tr-" + uuid.uuid4().hex
ALICE_MODEL, BOB_MODEL = "x-alice-model", "x-bob-model"


def _set(*path: str, key: str) -> Any:
    def keep(ctx: Ctx, body: dict[str, Any]) -> None:
        value: Any = body
        for part in path:
            value = value[part]
        ctx[key] = value

    return keep


def _trace(trace_id: str, experiment: str, preview: str) -> Any:
    def payload(ctx: Ctx) -> dict[str, Any]:
        info = {
            "trace_id": trace_id,
            "trace_location": {"type": "MLFLOW_EXPERIMENT", "mlflow_experiment": {"experiment_id": ctx[experiment]}},
            "request_time": "2024-01-01T00:00:00Z",
            "execution_duration": "1s",
            "state": "OK",
            "request_preview": preview,
        }
        return {"trace": {"trace_info": info}}

    return payload


def _otlp_spans(ctx: Ctx) -> bytes:
    """One root span of xalice's trace (OTLP JSON: hex ids), exported by xbob to his own experiment."""
    span = {
        "traceId": ALICE_TRACE_HEX,
        "spanId": uuid.uuid4().hex[:16],
        "name": "bob-span",
        "startTimeUnixNano": "1700000000000000000",
        "endTimeUnixNano": "1700000001000000000",
    }
    return json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}).encode()


def _gql(query: str, variables: Any = None, operation: str | None = None) -> Any:
    def payload(ctx: Ctx) -> dict[str, Any]:
        body: dict[str, Any] = {"query": query.format(**ctx)}
        if variables is not None:
            body["variables"] = variables(ctx)
        if operation is not None:
            body["operationName"] = operation
        return body

    return payload


_PARAMS = "{{ run {{ data {{ params {{ key value }} }} }} }}"


def _version(**fields: Any) -> Any:
    return lambda ctx: {"name": BOB_MODEL, **{k: (v(ctx) if callable(v) else v) for k, v in fields.items()}}


def _bob_metric(**extra: Any) -> Any:
    return lambda ctx: {
        "run_id": ctx["bob_run"],
        "key": "m",
        "value": 1.0,
        "timestamp": 1,
        "step": 0,
        **{k: v(ctx) for k, v in extra.items()},
    }


STEPS: list[Step] = [
    # --- set-up --------------------------------------------------------------------------------------
    Step("admin creates xalice", ADMIN, "POST", f"{M2}/users/create", lambda c: {"username": ALICE, "password": PASSWORDS[ALICE]}),
    Step("admin creates xbob", ADMIN, "POST", f"{M2}/users/create", lambda c: {"username": BOB, "password": PASSWORDS[BOB]}),
    Step(
        "xalice creates an experiment",
        ALICE,
        "POST",
        f"{M2}/experiments/create",
        lambda c: {"name": "x-alice-exp"},
        keep=_set("experiment_id", key="exp"),
    ),
    Step(
        "xalice creates a run",
        ALICE,
        "POST",
        f"{M2}/runs/create",
        lambda c: {"experiment_id": c["exp"], "run_name": "alice-run"},
        keep=lambda c, b: c.update(run=b["run"]["info"]["run_id"], art=b["run"]["info"]["artifact_uri"]),
    ),
    Step(
        "xalice logs a secret", ALICE, "POST", f"{M2}/runs/log-parameter", lambda c: {"run_id": c["run"], "key": "secret", "value": CANARY}
    ),
    Step(
        "xalice logs a metric",
        ALICE,
        "POST",
        f"{M2}/runs/log-metric",
        lambda c: {"run_id": c["run"], "key": "m", "value": 1.0, "timestamp": 1, "step": 0},
    ),
    Step(
        "xalice logs a dataset input",
        ALICE,
        "POST",
        f"{M2}/runs/log-inputs",
        lambda c: {
            "run_id": c["run"],
            "datasets": [{"dataset": {"name": CANARY, "digest": "d1", "source_type": "local", "source": "{}"}}],
        },
    ),
    Step(
        "xalice creates a logged model",
        ALICE,
        "POST",
        f"{M2}/logged-models",
        lambda c: {"experiment_id": c["exp"], "name": "alice-lm"},
        keep=_set("model", "info", "model_id", key="lm"),
    ),
    Step("xalice creates a model", ALICE, "POST", f"{M2}/registered-models/create", lambda c: {"name": ALICE_MODEL}),
    Step(
        "xalice registers her run",
        ALICE,
        "POST",
        f"{M2}/model-versions/create",
        lambda c: {"name": ALICE_MODEL, "source": c["art"] + "/model", "run_id": c["run"]},
    ),
    Step("xalice starts a trace", ALICE, "POST", f"{M3}/traces", _trace(ALICE_TRACE, "exp", CANARY)),
    Step(
        "xalice registers a scorer",
        ALICE,
        "POST",
        f"{M3}/scorers/register",
        lambda c: {"experiment_id": c["exp"], "name": "alice-scorer", "serialized_scorer": json.dumps({"name": "alice-scorer"})},
        keep=_set("scorer_id", key="scorer_id"),
    ),
    Step(
        "xalice configures online scoring",
        ALICE,
        "PUT",
        f"{M3}/scorers/online-config",
        lambda c: {"experiment_id": c["exp"], "name": "alice-scorer", "sample_rate": 0},
    ),
    Step(
        "xalice denies xbob her experiment",
        ALICE,
        "POST",
        f"{M3}/users/permissions/grant",
        lambda c: {"username": BOB, "resource_type": "experiment", "resource_id": c["exp"], "permission": "DENY"},
    ),
    Step(
        "xalice denies xbob her model",
        ALICE,
        "POST",
        f"{M3}/users/permissions/grant",
        lambda c: {"username": BOB, "resource_type": "registered_model", "resource_id": ALICE_MODEL, "permission": "DENY"},
    ),
    Step(
        "xbob creates an experiment",
        BOB,
        "POST",
        f"{M2}/experiments/create",
        lambda c: {"name": "x-bob-exp"},
        keep=_set("experiment_id", key="bob_exp"),
    ),
    Step(
        "xbob creates a run",
        BOB,
        "POST",
        f"{M2}/runs/create",
        lambda c: {"experiment_id": c["bob_exp"], "run_name": "bob-run"},
        keep=lambda c, b: c.update(bob_run=b["run"]["info"]["run_id"], bob_art=b["run"]["info"]["artifact_uri"]),
    ),
    Step("xbob logs a param", BOB, "POST", f"{M2}/runs/log-parameter", lambda c: {"run_id": c["bob_run"], "key": "mine", "value": "bob"}),
    Step("xbob creates a model", BOB, "POST", f"{M2}/registered-models/create", lambda c: {"name": BOB_MODEL}),
    Step("xbob starts a trace", BOB, "POST", f"{M3}/traces", _trace(BOB_TRACE, "bob_exp", "bob-preview")),
    Step(
        "xbob creates a dataset",
        BOB,
        "POST",
        f"{M3}/datasets/create",
        lambda c: {"name": "bob-dataset", "experiment_ids": [c["bob_exp"]]},
        keep=_set("dataset", "dataset_id", key="bob_dataset"),
    ),
    # xalice may read xbob's run (default READ): she registers it into her model, which xbob may not read.
    Step(
        "xalice registers xbob's run",
        ALICE,
        "POST",
        f"{M2}/model-versions/create",
        lambda c: {"name": ALICE_MODEL, "source": c["bob_art"] + "/model", "run_id": c["bob_run"]},
    ),
    # --- GraphQL: every id the executed document names is judged -----------------------------------------
    Step(
        "graphql: her run inline, his experiment in variables",
        BOB,
        "POST",
        "/graphql",
        _gql(
            'query Q($e: String) {{ mlflowGetRun(input: {{runId: "{run}"}}) ' + _PARAMS + " "
            "mlflowGetExperiment(input: {{experimentId: $e}}) {{ experiment {{ name }} }} }}",
            lambda c: {"e": c["bob_exp"]},
        ),
        compare_json=True,
    ),
    Step(
        "graphql: her experiment in variables",
        BOB,
        "POST",
        "/graphql",
        _gql(
            "query Q($e: String) {{ mlflowGetExperiment(input: {{experimentId: $e}}) {{ experiment {{ name }} }} }}",
            lambda c: {"e": c["exp"]},
        ),
        compare_json=True,
    ),
    Step(
        "graphql: aliases and a fragment on the root",
        BOB,
        "POST",
        "/graphql",
        _gql(
            "query Q($mine: String) {{ ...Both }} fragment Both on Query {{ mine: mlflowGetRun(input: {{runId: $mine}}) "
            + _PARAMS
            + ' theirs: mlflowGetRun(input: {{runUuid: "{run}"}}) '
            + _PARAMS
            + " }}",
            lambda c: {"mine": c["bob_run"]},
        ),
        compare_json=True,
    ),
    Step(
        "graphql: nested input object in variables",
        BOB,
        "POST",
        "/graphql",
        _gql("query Q($i: MlflowGetRunInput) {{ mlflowGetRun(input: $i) " + _PARAMS + " }}", lambda c: {"i": {"runId": c["run"]}}),
        compare_json=True,
    ),
    Step(
        "graphql: the second operation names her run",
        BOB,
        "POST",
        "/graphql",
        _gql(
            'query Mine {{ mlflowGetRun(input: {{runId: "{bob_run}"}}) '
            + _PARAMS
            + ' }} query Theirs {{ mlflowGetRun(input: {{runId: "{run}"}}) '
            + _PARAMS
            + " }}",
            operation="Theirs",
        ),
        compare_json=True,
    ),
    Step(
        "graphql: metric history of his run and hers",
        BOB,
        "POST",
        "/graphql",
        _gql(
            'query Q($r: [String]) {{ mlflowGetMetricHistoryBulkInterval(input: {{runIds: $r, metricKey: "m"}}) {{ metrics {{ key value }} }} }}',
            lambda c: {"r": [c["bob_run"], c["run"]]},
        ),
        compare_json=True,
    ),
    Step(
        "graphql: search runs of her experiment and his",
        BOB,
        "POST",
        "/graphql",
        _gql(
            "query Q($e: [String]) {{ mlflowSearchRuns(input: {{experimentIds: $e}}) {{ runs {{ info {{ runName }} }} }} }}",
            lambda c: {"e": [c["exp"], c["bob_exp"]]},
        ),
        compare_json=True,
    ),
    Step(
        "graphql: search runs of her experiment only",
        BOB,
        "POST",
        "/graphql",
        _gql('query {{ mlflowSearchRuns(input: {{experimentIds: ["{exp}"]}}) {{ runs {{ info {{ runName }} }} }} }}'),
        compare_json=True,
    ),
    Step(
        "graphql: search runs as a mutation",
        BOB,
        "POST",
        "/graphql",
        _gql('mutation {{ mlflowSearchRuns(input: {{experimentIds: ["{exp}"]}}) {{ runs {{ info {{ runName }} }} }} }}'),
        compare_json=True,
    ),
    Step(
        "graphql: list artifacts of her run beside his",
        BOB,
        "POST",
        "/graphql",
        _gql(
            'query {{ hers: mlflowListArtifacts(input: {{runId: "{run}"}}) {{ files {{ path }} }} '
            'his: mlflowListArtifacts(input: {{runUuid: "{bob_run}"}}) {{ files {{ path }} }} }}'
        ),
        compare_json=True,
    ),
    Step(
        "graphql: search datasets of her experiment and his",
        BOB,
        "POST",
        "/graphql",
        _gql(
            "mutation Q($e: [String]) {{ mlflowSearchDatasets(input: {{experimentIds: $e}}) {{ datasetSummaries {{ name }} }} }}",
            lambda c: {"e": [c["exp"], c["bob_exp"]]},
        ),
        compare_json=True,
    ),
    Step(
        "graphql: search datasets of her experiment only",
        BOB,
        "POST",
        "/graphql",
        _gql('mutation {{ mlflowSearchDatasets(input: {{experimentIds: ["{exp}"]}}) {{ datasetSummaries {{ name }} }} }}'),
        compare_json=True,
    ),
    Step(
        "graphql: his run's model versions leave out her model",
        BOB,
        "POST",
        "/graphql",
        _gql('query {{ mlflowGetRun(input: {{runId: "{bob_run}"}}) {{ run {{ modelVersions {{ name version }} }} }} }}'),
        compare_json=True,
    ),
    Step(
        "graphql: a missing run",
        BOB,
        "POST",
        "/graphql",
        _gql('query {{ mlflowGetRun(input: {{runId: "' + "0" * 32 + '"}}) ' + _PARAMS + " }}"),
        compare_json=True,
    ),
    Step(
        "graphql: 11 root fields",
        BOB,
        "POST",
        "/graphql",
        _gql(
            "query {{ "
            + " ".join(
                f'r{i}: mlflowGetRun(input: {{{{runId: "{{bob_run}}"}}}}) {{{{ run {{{{ info {{{{ runId }}}} }}}} }}}}' for i in range(11)
            )
            + " }}"
        ),
        compare_json=True,
    ),
    Step(
        "graphql: 11 aliases on one level",
        BOB,
        "POST",
        "/graphql",
        _gql(
            'query {{ mlflowGetRun(input: {{runId: "{bob_run}"}}) {{ run {{ '
            + " ".join(f"a{i}: info {{{{ runId }}}}" for i in range(11))
            + " }} }} }}"
        ),
        compare_json=True,
    ),
    Step(
        "graphql: 11 levels deep",
        BOB,
        "POST",
        "/graphql",
        _gql("query {{ " + "".join(f"f{i} {{{{ " for i in range(10)) + "leaf" + " }}" * 10 + " }}"),
        compare_json=True,
    ),
    # MLflow answers a JSON list (a batch) with a 500 (it reads the body as an object); ours runs none of it.
    Step(
        "graphql: a batch of two queries",
        BOB,
        "POST",
        "/graphql",
        raw=lambda c: json.dumps(
            [{"query": 'query {{ mlflowGetRun(input: {{runId: "{run}"}}) {{ run {{ data {{ params {{ value }} }} }} }} }}'.format(**c)}] * 2
        ).encode(),
        headers=lambda c: {"Content-Type": "application/json"},
        differs=(200, 500),
    ),
    # --- model versions: READ on what a version is registered from ----------------------------------------
    Step(
        "version from her run",
        BOB,
        "POST",
        f"{M2}/model-versions/create",
        _version(source=lambda c: c["art"] + "/model", run_id=lambda c: c["run"]),
    ),
    Step(
        "version from her run's URI, his run id",
        BOB,
        "POST",
        f"{M2}/model-versions/create",
        _version(source=lambda c: f"runs:/{c['run']}/model", run_id=lambda c: c["bob_run"]),
    ),
    Step(
        "version from her run's URI alone", BOB, "POST", f"{M2}/model-versions/create", _version(source=lambda c: f"runs:/{c['run']}/model")
    ),
    Step(
        "version from her logged model",
        BOB,
        "POST",
        f"{M2}/model-versions/create",
        _version(source=lambda c: c["bob_art"] + "/model", model_id=lambda c: c["lm"]),
    ),
    Step(
        "version from her logged model's URI", BOB, "POST", f"{M2}/model-versions/create", _version(source=lambda c: f"models:/{c['lm']}")
    ),
    Step("version copied from her model", BOB, "POST", f"{M2}/model-versions/create", _version(source=f"models:/{ALICE_MODEL}/1")),
    Step("version with an empty run id", BOB, "POST", f"{M2}/model-versions/create", _version(source="s3://some-bucket/model", run_id="")),
    # MLflow checks no s3:// source: ours finds the run (or logged model, trace, experiment) whose files it is.
    Step(
        "version from S3 under her run",
        BOB,
        "POST",
        f"{M2}/model-versions/create",
        _version(source=lambda c: f"s3://some-bucket/artifacts/{c['exp']}/{c['run']}/artifacts/model"),
        differs=(403, 200),
    ),
    Step(
        "version from S3 under her experiment in this stack's bucket",
        BOB,
        "POST",
        f"{M2}/model-versions/create",
        _version(source=lambda c: f"s3://{c['bucket']}/mlartifacts/{c['exp']}/shared/model"),
        differs=(403, 200),
    ),
    Step(
        "version from his own run",
        BOB,
        "POST",
        f"{M2}/model-versions/create",
        _version(source=lambda c: c["bob_art"] + "/model", run_id=lambda c: c["bob_run"]),
    ),
    # --- runs: metrics, inputs and outputs onto her logged model -------------------------------------------
    Step("metric onto her logged model", BOB, "POST", f"{M2}/runs/log-metric", _bob_metric(model_id=lambda c: c["lm"])),
    Step("metric onto a missing logged model", BOB, "POST", f"{M2}/runs/log-metric", _bob_metric(model_id=lambda c: "m-" + "0" * 32)),
    Step(
        "batch metric onto her logged model",
        BOB,
        "POST",
        f"{M2}/runs/log-batch",
        lambda c: {"run_id": c["bob_run"], "metrics": [{"key": "m", "value": 1.0, "timestamp": 1, "step": 0, "model_id": c["lm"]}]},
    ),
    Step(
        "inputs: her logged model",
        BOB,
        "POST",
        f"{M2}/runs/log-inputs",
        lambda c: {"run_id": c["bob_run"], "models": [{"model_id": c["lm"]}]},
    ),
    Step(
        "outputs: her logged model",
        BOB,
        "POST",
        f"{M2}/runs/outputs",
        lambda c: {"run_id": c["bob_run"], "models": [{"model_id": c["lm"], "step": 0}]},
    ),
    Step(
        "her logged model is untouched",
        ALICE,
        "GET",
        f"{M2}/logged-models/{{lm}}",
        keep=lambda c, b: c.update(lm_metrics=b["model"]["data"].get("metrics", [])),
    ),
    Step(
        "logged model from her run",
        BOB,
        "POST",
        f"{M2}/logged-models",
        lambda c: {"experiment_id": c["bob_exp"], "source_run_id": c["run"]},
    ),
    # --- traces ---------------------------------------------------------------------------------------
    Step(
        "link her trace to his run", BOB, "POST", f"{M2}/traces/link-to-run", lambda c: {"trace_ids": [ALICE_TRACE], "run_id": c["bob_run"]}
    ),
    Step(
        "admin links a trace not stored yet to his run",
        ADMIN,
        "POST",
        f"{M2}/traces/link-to-run",
        lambda c: {"trace_ids": [PENDING_TRACE], "run_id": c["bob_run"]},
    ),
    Step(
        # MLflow's validator reads the trace's info and denies a trace it does not have; so does ours, with the
        # admin's link waiting on the trace's locator.
        "link a trace not stored yet to his run",
        BOB,
        "POST",
        f"{M2}/traces/link-to-run",
        lambda c: {"trace_ids": [PENDING_TRACE], "run_id": c["bob_run"]},
    ),
    Step(
        "assess her trace",
        BOB,
        "POST",
        f"{M3}/traces/{ALICE_TRACE}/assessments",
        lambda c: {"assessment": {"assessment_name": "a", "feedback": {"value": 1}}},
    ),
    Step(
        # Deletes nothing (her trace is read back below). MLflow answers {"traces_deleted": 0}, ours {}.
        "delete her trace through his experiment",
        BOB,
        "POST",
        f"{M3}/traces/delete-traces",
        lambda c: {"experiment_id": c["bob_exp"], "request_ids": [ALICE_TRACE]},
    ),
    # MLflow's store moves an existing trace into the experiment start_trace names, and appends exported spans
    # to it: either changes her trace.
    Step(
        "start her trace in his experiment", BOB, "POST", f"{M3}/traces", _trace(ALICE_TRACE, "bob_exp", "bob-preview"), differs=(403, 200)
    ),
    Step(
        "export spans of her trace to his experiment",
        BOB,
        "POST",
        "/v1/traces",
        raw=_otlp_spans,
        headers=lambda c: {"Content-Type": "application/json", "x-mlflow-experiment-id": c["bob_exp"]},
        differs=(403, 200),
    ),
    Step("xbob reads her trace", BOB, "GET", f"{M3}/traces/{ALICE_TRACE}", differs=(403, 200)),
    Step(
        "her trace stays in her experiment",
        ALICE,
        "GET",
        f"{M3}/traces/{ALICE_TRACE}",
        keep=lambda c, b: c.update(trace_experiment=b["trace"]["trace_info"]["trace_location"]["mlflow_experiment"]["experiment_id"]),
    ),
    # --- GenAI evaluation ---------------------------------------------------------------------------------
    Step("her online scoring config", BOB, "GET", f"{M3}/scorers/online-configs", lambda c: {"scorer_ids": [c["scorer_id"]]}),
    Step("scorers of every experiment", BOB, "GET", f"{M3}/scorers/list", compare_json=True),
    Step("scorers of her experiment by ids", BOB, "GET", f"{M3}/scorers/list", lambda c: {"experiment_ids": [c["exp"]]}, compare_json=True),
    Step(
        "her experiment into his dataset",
        BOB,
        "POST",
        f"{M3}/datasets/{{bob_dataset}}/add-experiments",
        lambda c: {"experiment_ids": [c["exp"]]},
    ),
    # --- wrong credentials on public pages ----------------------------------------------------------------
    Step("the UI page with a wrong password", BOB, "GET", "/", password="wrong-password-1"),
    Step("the UI page as an unknown user", "nobody", "GET", "/", password="nobody-password-1"),
    Step("the UI page with his password", BOB, "GET", "/"),
    Step("a static file with a wrong password", BOB, "GET", "/static-files/favicon.ico", password="wrong-password-1", differs=(401, 200)),
    Step("a static file without credentials", None, "GET", "/static-files/favicon.ico"),
    Step("health with a wrong password", BOB, "GET", "/health", password="wrong-password-1", differs=(401, 200)),
    Step("health without credentials", None, "GET", "/health"),
    Step("server-info with a wrong password", BOB, "GET", f"{M3}/server-info", password="wrong-password-1", differs=(401, 200)),
    Step("login with a wrong password", BOB, "GET", "/login", password="wrong-password-1"),
]
