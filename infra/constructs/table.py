"""The single DynamoDB table, built from ``serverless_mlflow.storage.schema`` (keys, indexes, TTL)."""

from __future__ import annotations

from aws_cdk import RemovalPolicy
from aws_cdk import aws_dynamodb as dynamodb
from constructs import Construct

from serverless_mlflow.storage import schema

_PROJECTIONS = {"ALL": dynamodb.ProjectionType.ALL, "KEYS_ONLY": dynamodb.ProjectionType.KEYS_ONLY}


def _string(name: str) -> dynamodb.Attribute:
    # Every key attribute of the schema is a string (numbers are order-preserving encoded strings).
    return dynamodb.Attribute(name=name, type=dynamodb.AttributeType.STRING)


class MlflowTable(Construct):
    def __init__(self, scope: Construct, construct_id: str, *, table_name: str) -> None:
        super().__init__(scope, construct_id)
        self.table = dynamodb.Table(
            self,
            "Table",
            table_name=table_name,
            partition_key=_string(schema.PK),
            sort_key=_string(schema.SK),
            billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
            # The indexer derives RANK/FTS items from before/after images.
            stream=dynamodb.StreamViewType.NEW_AND_OLD_IMAGES,
            point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(point_in_time_recovery_enabled=True),
            encryption=dynamodb.TableEncryption.AWS_MANAGED,
            time_to_live_attribute=schema.TTL_ATTRIBUTE,
            deletion_protection=True,
            # Tracking data outlives the stack: deleting the stack must never delete the runs.
            removal_policy=RemovalPolicy.RETAIN,
        )
        for index in schema.INDEXES:
            projection = _PROJECTIONS[index.projection]
            if index.kind == "GSI":
                self.table.add_global_secondary_index(
                    index_name=index.name,
                    partition_key=_string(index.pk),
                    sort_key=_string(index.sk),
                    projection_type=projection,
                )
            elif index.kind == "LSI":
                self.table.add_local_secondary_index(index_name=index.name, sort_key=_string(index.sk), projection_type=projection)
            else:  # pragma: no cover - schema.py only declares GSI/LSI
                raise ValueError(f"unknown index kind {index.kind!r} for {index.name}")
