"""Registered scorers end to end with the real client, compared call by call with MLflow's SqlAlchemyStore."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.conftest import unique


@pytest.fixture
def custom_scorers_allowed(monkeypatch: pytest.MonkeyPatch) -> None:
    # The operator opt-in MLflow's server reads; the in-process runtime reads the same variable.
    monkeypatch.setenv("MLFLOW_SERVER_ENABLE_CUSTOM_SCORERS", "true")


def _scorer_view(scorer: Any) -> dict[str, Any]:
    dump = scorer.model_dump()
    dump.pop("mlflow_version", None)
    return {"name": scorer.name, "type": type(scorer).__name__, "dump": dump}


def test_scorer_registry_matches_mlflow(against: Any, custom_scorers_allowed: None) -> None:
    import mlflow
    from mlflow.genai.judges import make_judge
    from mlflow.genai.scorers import Guidelines, delete_scorer, get_scorer, list_scorers, scorer

    @scorer
    def short_answer(outputs: str) -> bool:
        return len(outputs) < 20

    def scenario() -> dict[str, Any]:
        experiment_id = mlflow.create_experiment(unique("scorers"))
        mlflow.set_experiment(experiment_id=experiment_id)
        store = mlflow.tracking._tracking_service.utils._get_store()
        out: dict[str, Any] = {}
        first = Guidelines(name="polite", guidelines=["Be polite."]).register()
        out["first"] = (first.name, first._registered_backend)
        Guidelines(name="polite", guidelines=["Be very polite."]).register()
        Guidelines(name="polite", guidelines=["Be extremely polite."]).register()
        short_answer.register()
        make_judge(name="judge", instructions="Is {{ outputs }} correct?", feedback_value_type=bool, model="openai:/gpt-4o").register()
        out["list"] = [_scorer_view(s) for s in list_scorers()]
        out["latest"] = get_scorer(name="polite").guidelines
        out["v1"] = get_scorer(name="polite", version=1).guidelines
        versions = store.list_scorer_versions(experiment_id, "polite")
        out["versions"] = [
            (v.scorer_version, v.scorer_name, v.experiment_id == experiment_id, bool(v.scorer_id), v.creation_time > 0) for v in versions
        ]
        out["one_scorer_id"] = len({v.scorer_id for v in versions}) == 1
        raw_experiment = mlflow.create_experiment(unique("scorers"))
        registered = store.register_scorer(raw_experiment, "raw", json.dumps({"name": "raw", "aggregations": []}))
        out["register_raw"] = (registered.scorer_version, registered.scorer_name, registered.experiment_id == raw_experiment)
        out["raw_listed"] = [(v.scorer_name, v.scorer_version, v._serialized_scorer) for v in store.list_scorers(raw_experiment)]
        # Deleting the latest version frees its number, as in MLflow.
        delete_scorer(name="polite", version=3)
        out["after_delete_v3"] = [v.scorer_version for v in store.list_scorer_versions(experiment_id, "polite")]
        out["reregistered"] = Guidelines(name="polite", guidelines=["Again."]).register()._scorer_version
        from mlflow.genai.scorers import ScorerSamplingConfig

        stopped = get_scorer(name="polite").stop()
        out["stopped"] = (stopped.sample_rate, stopped.filter_string, get_scorer(name="polite").sample_rate)
        try:
            get_scorer(name="polite").start(sampling_config=ScorerSamplingConfig(sample_rate=0.5))
            out["start"] = "ok"
        except mlflow.MlflowException as error:
            out["start"] = (error.error_code, "does not use a gateway model" in error.message)
        delete_scorer(name="judge", version="all")
        out["after_delete_all"] = sorted(s.name for s in list_scorers())
        errors = {}
        for label, call in {
            "get_missing": lambda: get_scorer(name="judge"),
            "get_missing_version": lambda: get_scorer(name="polite", version=99),
            "delete_missing_version": lambda: delete_scorer(name="polite", version=99),
            "delete_missing": lambda: delete_scorer(name="nope", version="all"),
            "versions_missing": lambda: store.list_scorer_versions(experiment_id, "nope"),
            "blank_name": lambda: store.register_scorer(experiment_id, "   ", json.dumps({"name": "x"})),
            "missing_experiment": lambda: store.register_scorer("987654321", "x", json.dumps({"name": "x"})),
            "blank_model": lambda: store.register_scorer(experiment_id, "x", json.dumps({"builtin_scorer_pydantic_data": {"model": " "}})),
            "gateway_model": lambda: store.register_scorer(
                experiment_id, "x", json.dumps({"builtin_scorer_pydantic_data": {"model": "gateway:/ep"}})
            ),
            "list_missing_experiment": lambda: store.list_scorers("987654321"),
        }.items():
            try:
                call()
                errors[label] = "ok"
            except mlflow.MlflowException as error:
                errors[label] = error.error_code
        out["errors"] = errors
        mlflow.delete_experiment(experiment_id)
        try:
            store.list_scorers(experiment_id)
            out["deleted_experiment"] = "ok"
        except mlflow.MlflowException as error:
            out["deleted_experiment"] = error.error_code
        return out

    ours, reference = against(scenario)
    assert ours == reference
    assert ours["versions"][-1][0] == 3 and ours["after_delete_v3"] == [1, 2] and ours["reregistered"] == 3
    assert ours["errors"]["get_missing"] == "RESOURCE_DOES_NOT_EXIST"
    assert ours["stopped"] == (0.0, None, 0.0) and ours["start"] == ("INVALID_PARAMETER_VALUE", True)


def test_custom_scorer_needs_the_operator_opt_in(server: str, monkeypatch: pytest.MonkeyPatch) -> None:
    import mlflow
    from mlflow.genai.scorers import list_scorers, scorer

    monkeypatch.delenv("MLFLOW_SERVER_ENABLE_CUSTOM_SCORERS", raising=False)
    mlflow.set_tracking_uri(server)
    experiment_id = mlflow.create_experiment(unique("scorers"))

    @scorer
    def exact(outputs: str, expectations: dict[str, Any]) -> bool:
        return outputs == expectations["answer"]

    with pytest.raises(mlflow.MlflowException, match="Custom scorer registration") as raised:
        exact.register(experiment_id=experiment_id)
    assert raised.value.error_code == "INVALID_PARAMETER_VALUE"
    assert list_scorers(experiment_id=experiment_id) == []


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        ("not json", "serialized_scorer must be valid JSON"),
        (json.dumps({"third_party_scorer_data": {"kwargs": {"api_base": "http://x"}}}), "must not contain 'api_base'"),
        (json.dumps({"third_party_scorer_data": {"kwargs": [1]}}), "kwargs must be a JSON object"),
        (json.dumps(["a", "list"]), "serialized_scorer must be a JSON object"),
    ],
)
def test_bad_payloads_are_refused_before_any_write(server: str, payload: str, message: str) -> None:
    import mlflow
    import requests

    mlflow.set_tracking_uri(server)
    experiment_id = mlflow.create_experiment(unique("scorers"))
    response = requests.post(
        f"{server}/api/3.0/mlflow/scorers/register",
        json={"experiment_id": experiment_id, "name": "bad", "serialized_scorer": payload},
        timeout=30,
    )
    assert response.status_code == 400
    assert response.json()["error_code"] == "INVALID_PARAMETER_VALUE" and message in response.json()["message"]
    listed = requests.get(f"{server}/api/3.0/mlflow/scorers/list", params={"experiment_id": experiment_id}, timeout=30)
    assert listed.status_code == 200 and listed.json() == {}


def test_concurrent_registrations_get_distinct_versions(server: str) -> None:
    from concurrent.futures import ThreadPoolExecutor

    import mlflow
    import requests

    mlflow.set_tracking_uri(server)
    experiment_id = mlflow.create_experiment(unique("scorers"))

    def register(i: int) -> int:
        body = {"experiment_id": experiment_id, "name": "race", "serialized_scorer": json.dumps({"name": "race", "i": i})}
        response = requests.post(f"{server}/api/3.0/mlflow/scorers/register", json=body, timeout=60)
        assert response.status_code == 200, response.text
        return response.json()["version"]

    with ThreadPoolExecutor(max_workers=6) as pool:
        versions = sorted(pool.map(register, range(12)))
    assert versions == list(range(1, 13))
    listed = requests.get(f"{server}/api/3.0/mlflow/scorers/versions", params={"experiment_id": experiment_id, "name": "race"}, timeout=30)
    assert [s["scorer_version"] for s in listed.json()["scorers"]] == list(range(1, 13))
    assert len({s["scorer_id"] for s in listed.json()["scorers"]}) == 1


def test_online_scoring_starts_for_a_gateway_model_judge(against: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """MLflow's test_online_scoring_config: a scorer judging with ``gateway:/<endpoint>`` takes a positive sample
    rate (any other model is refused), and the configuration reads back."""
    import mlflow
    from mlflow.entities import GatewayEndpointModelConfig, GatewayModelLinkageType

    # MLflow's store encrypts gateway secrets with this passphrase; ours uses the stack's KMS key.
    monkeypatch.setenv("MLFLOW_CRYPTO_KEK_PASSPHRASE", "test-passphrase-at-least-32-characters-long")

    def scenario() -> dict[str, Any]:
        store = mlflow.tracking._tracking_service.utils._get_store()
        experiment_id = mlflow.create_experiment(unique("online"))
        secret = store.create_gateway_secret(secret_name=unique("secret"), secret_value={"api_key": "sk-test"}, provider="openai")
        model = store.create_gateway_model_definition(
            name=unique("model"), secret_id=secret.secret_id, provider="openai", model_name="gpt-4"
        )
        endpoint = store.create_gateway_endpoint(
            name=unique("endpoint"),
            model_configs=[
                GatewayEndpointModelConfig(model_definition_id=model.model_definition_id, linkage_type=GatewayModelLinkageType.PRIMARY)
            ],
        )
        gateway_judge = json.dumps({"instructions_judge_pydantic_data": {"model": f"gateway:/{endpoint.name}"}})
        version = store.register_scorer(experiment_id, "judge", gateway_judge)
        config = store.upsert_online_scoring_config(
            experiment_id=experiment_id, scorer_name="judge", sample_rate=0.5, filter_string="status = 'OK'"
        )
        out: dict[str, Any] = {"config": (config.sample_rate, config.filter_string, config.scorer_id == version.scorer_id)}
        read = store.get_online_scoring_configs([version.scorer_id])
        out["read"] = [(c.sample_rate, c.filter_string, c.experiment_id == experiment_id) for c in read]
        store.register_scorer(experiment_id, "openai", json.dumps({"instructions_judge_pydantic_data": {"model": "openai:/gpt-4o"}}))
        try:
            store.upsert_online_scoring_config(experiment_id=experiment_id, scorer_name="openai", sample_rate=0.5, filter_string=None)
            out["openai"] = "ok"
        except mlflow.MlflowException as error:
            # A REST error's message carries the code as a prefix, the in-process store's does not.
            out["openai"] = (error.error_code, error.message.removeprefix(f"{error.error_code}: "))
        return out

    ours, reference = against(scenario)
    assert ours == reference
    assert ours["config"] == (0.5, "status = 'OK'", True) and ours["openai"][0] == "INVALID_PARAMETER_VALUE"


def test_gateway_judge_is_bound_to_its_endpoint(against: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """SqlAlchemyStore.register_scorer binds a judge on ``gateway:/<endpoint>`` to the endpoint (the UI's "Used by"):
    a version on another endpoint moves the binding, one without a gateway model keeps it, deleting the scorer
    removes it."""
    import mlflow
    from mlflow.entities import GatewayEndpointModelConfig, GatewayModelLinkageType

    monkeypatch.setenv("MLFLOW_CRYPTO_KEK_PASSPHRASE", "test-passphrase-at-least-32-characters-long")

    def scenario() -> list[Any]:
        store = mlflow.tracking._tracking_service.utils._get_store()
        experiment_id = mlflow.create_experiment(unique("bound"))
        secret = store.create_gateway_secret(secret_name=unique("secret"), secret_value={"api_key": "sk-test"}, provider="openai")
        model = store.create_gateway_model_definition(
            name=unique("model"), secret_id=secret.secret_id, provider="openai", model_name="gpt-4"
        )
        config = GatewayEndpointModelConfig(model_definition_id=model.model_definition_id, linkage_type=GatewayModelLinkageType.PRIMARY)
        first, second = (store.create_gateway_endpoint(name=unique("endpoint"), model_configs=[config]) for _ in range(2))
        label = {first.endpoint_id: "first", second.endpoint_id: "second"}

        def judge(endpoint: Any) -> str:
            return json.dumps({"instructions_judge_pydantic_data": {"model": f"gateway:/{endpoint.name}"}})

        def bound() -> list[Any]:
            found = [b for e in (first, second) for b in store.list_endpoint_bindings(endpoint_id=e.endpoint_id)]
            return [(label[b.endpoint_id], b.resource_type, b.resource_id == scorer_id, b.display_name) for b in found]

        scorer_id = store.register_scorer(experiment_id, "judge", judge(first)).scorer_id
        steps = [bound()]
        store.register_scorer(experiment_id, "judge", judge(second))
        steps.append(bound())
        store.register_scorer(experiment_id, "judge", json.dumps({"instructions_judge_pydantic_data": {"model": "openai:/gpt-4o"}}))
        steps.append(bound())
        store.delete_scorer(experiment_id, "judge")
        steps.append(bound())
        return steps

    ours, reference = against(scenario)
    assert ours == reference
    assert ours == [[("first", "scorer", True, "judge")], [("second", "scorer", True, "judge")], [("second", "scorer", True, "judge")], []]


# Instructions a judge may have, and whether MLflow refuses automatic evaluation for them at a positive rate.
_JUDGE_INSTRUCTIONS = {
    "expectations": "Is {{ outputs }} what {{ expectations }} says?",
    "expectations, tight": "Compare {{outputs}} with {{expectations}}.",
    "conversation and expectations": "Does {{ conversation }} meet {{ expectations }}?",
    "no expectations": "Is {{ outputs }} polite?",
    # InstructionsJudge refuses a variable of its own: MLflow's check fails open.
    "unknown variable": "Is {{ outputs }} like {{ expectations }} and {{ other }}?",
}


def test_online_scoring_refuses_a_judge_that_needs_expectations_as_mlflow_server(server: str) -> None:
    """SqlAlchemyStore.upsert_online_scoring_config's second check (after the gateway model's): an instructions
    judge whose template uses ``{{ expectations }}`` takes no positive sample rate; status and body as ``mlflow server``'s."""
    import mlflow
    import requests
    from mlflow.entities import GatewayEndpointModelConfig, GatewayModelLinkageType

    from tests.mlflow_reference import reference_server

    def scenario(uri: str) -> dict[str, Any]:
        mlflow.set_tracking_uri(uri)
        store = mlflow.tracking._tracking_service.utils._get_store()
        experiment_id = mlflow.create_experiment(unique("online-expectations"))
        secret = store.create_gateway_secret(secret_name=unique("secret"), secret_value={"api_key": "sk-test"}, provider="openai")
        model = store.create_gateway_model_definition(
            name=unique("model"), secret_id=secret.secret_id, provider="openai", model_name="gpt-4"
        )
        endpoint = store.create_gateway_endpoint(
            name=unique("endpoint"),
            model_configs=[
                GatewayEndpointModelConfig(model_definition_id=model.model_definition_id, linkage_type=GatewayModelLinkageType.PRIMARY)
            ],
        )
        out: dict[str, Any] = {}
        for index, (case, instructions) in enumerate(_JUDGE_INSTRUCTIONS.items()):
            name = f"judge{index}"
            judge = {"name": name, "instructions_judge_pydantic_data": {"instructions": instructions, "model": f"gateway:/{endpoint.name}"}}
            store.register_scorer(experiment_id, name, json.dumps(judge))
            for rate in (0.5, 0.0):
                body = {"experiment_id": experiment_id, "name": name, "sample_rate": rate}
                answer = requests.put(f"{uri}/api/3.0/mlflow/scorers/online-config", json=body, timeout=60)
                reply = answer.json()
                out[f"{case} at {rate}"] = (
                    answer.status_code,
                    reply.get("error_code"),
                    reply.get("message"),
                    reply.get("config", {}).get("sample_rate"),
                )
        return out

    ours = scenario(server)
    mlflow.set_tracking_uri(server)
    assert ours == scenario(reference_server().url)
    refused = (
        400,
        "INVALID_PARAMETER_VALUE",
        "Scorer 'judge0' requires expectations, but scorers with expectations are not currently supported for automatic evaluation.",
        None,
    )
    assert ours["expectations at 0.5"] == refused
    assert ours["expectations at 0.0"][0] == ours["no expectations at 0.5"][0] == ours["unknown variable at 0.5"][0] == 200
    assert ours["conversation and expectations at 0.5"][0] == 400
