"""The local runtime refuses what a function's deployed role would refuse (``local/iam.py``).

Every end-to-end test runs under this enforcement, so these tests only pin the mechanism itself.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.conftest import unique

pytestmark = pytest.mark.e2e


@pytest.fixture
def key() -> dict[str, str]:
    from serverless_mlflow.storage import schema

    return {schema.PK: unique("IAM#"), schema.SK: "probe"}


def test_a_function_cannot_use_a_table_action_it_was_not_granted(server: str, key: dict[str, str]) -> None:
    from local import iam
    from serverless_mlflow.storage import table

    # The basic-auth authorizer may read one user item (GetItem) and nothing else.
    with iam.acting_as("authorizer"), pytest.raises(iam.AccessDenied, match=r"'authorizer' is not allowed to perform dynamodb:Query"):
        table.query(key["pk"])
    # Outside a function (the runtime's own set-up, tests) nothing is checked.
    assert table.get(key) is None


def test_only_declared_actions_are_allowed(server: str, key: dict[str, str]) -> None:
    from local import iam
    from serverless_mlflow.storage import table

    with iam.acting_as("artifacts"):
        assert table.get(key) is None
        with pytest.raises(iam.AccessDenied, match="dynamodb:PutItem"):
            table.put({**key, "entity_type": "probe"})
    with iam.acting_as("indexer"), pytest.raises(iam.AccessDenied, match="dynamodb:ConditionCheckItem"):
        table.transact([table.check_op(key, "attribute_not_exists(pk)")])


def test_s3_rights_stop_at_the_declared_prefix(server: str) -> None:
    from local import iam
    from serverless_mlflow.storage import s3

    bucket = s3.bucket_name()
    with iam.acting_as("artifacts"):
        s3.client().put_object(Bucket=bucket, Key=f"mlartifacts/{unique('iam')}/ok.txt", Body=b"1")
        s3.client().list_objects_v2(Bucket=bucket, Prefix="mlartifacts/")
        with pytest.raises(iam.AccessDenied, match="s3:PutObject"):
            s3.client().put_object(Bucket=bucket, Key="elsewhere/x.txt", Body=b"1")
        with pytest.raises(iam.AccessDenied, match="s3:ListBucket"):
            s3.client().list_objects_v2(Bucket=bucket, Prefix="")
        # Presigning is where the artifacts role hands its rights to the client: checked too.
        with pytest.raises(iam.AccessDenied, match="s3:GetObject"):
            s3.presign_client().generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": "elsewhere/x.txt"})
    with iam.acting_as("runs"), pytest.raises(iam.AccessDenied, match="s3:GetObject"):
        s3.client().get_object(Bucket=bucket, Key="mlartifacts/x")


def test_worker_threads_keep_the_function_s_rights(server: str, key: dict[str, str]) -> None:
    from local import iam
    from serverless_mlflow.storage import table

    with iam.acting_as("authorizer"), ThreadPoolExecutor(max_workers=1) as pool:
        with pytest.raises(iam.AccessDenied):
            pool.submit(table.query, key["pk"]).result()


def test_user_credentials_and_gateway_secrets_are_written_only_by_their_owners(server: str) -> None:
    """``permissions.PROTECTED``: the deployed roles carry explicit Denies (dynamodb:LeadingKeys/Attributes)."""
    from local import iam
    from serverless_mlflow.storage import table

    user = {"pk": unique("USER#"), "sk": "U#META", "entity_type": "probe", "password_hash": "x"}
    secret = {"pk": unique("GW#"), "sk": "S#probe", "entity_type": "probe"}
    with iam.acting_as("experiments"):
        with pytest.raises(iam.AccessDenied, match="dynamodb:PutItem"):
            table.put(user)
        with pytest.raises(iam.AccessDenied, match="dynamodb:PutItem"):
            table.put(secret)
        # Its own grants live in users' partitions: writing those stays allowed.
        table.put({"pk": user["pk"], "sk": "U#PERM#probe", "entity_type": "probe", "permission": "MANAGE"})
    # The gateway runtime writes budget windows and the outbox only, never the configuration it decrypts.
    with iam.acting_as("gateway_runtime"), pytest.raises(iam.AccessDenied, match="dynamodb:PutItem"):
        table.put(secret)
    # Evaluation binds judges to endpoints in the bindings partition, and may not touch the configuration.
    with iam.acting_as("evaluation"):
        with pytest.raises(iam.AccessDenied, match="dynamodb:PutItem"):
            table.put(secret)
        table.put({"pk": unique("GWBIND#"), "sk": "E#probe#B#scorer#probe", "entity_type": "probe"})
    with iam.acting_as("auth"):
        table.put(user)
    with iam.acting_as("gateway"):
        table.put(secret)
