"""A small GraphQL executor for the queries the MLflow web UI sends (no graphene in the Lambdas).

MLflow's ``/graphql`` runs a graphene schema generated from its protos. The UI's bundle sends a handful
of fixed operations (``MlflowGetExperimentQuery``, ``GetRun``, ``SearchRuns``,
``GetMetricHistoryBulkInterval``), so this module parses GraphQL documents (operations, variables with
defaults, aliases, arguments, fragments, inline fragments, ``__typename``) and
projects the selection onto plain values that resolvers build: dicts keyed by GraphQL field names, each
object with its ``__typename``; a callable value is resolved lazily, only when selected.

Answers have graphene's shape: ``{"data": ..., "errors": [messages] | None}``; a resolver's
``MlflowError`` nulls that root field and adds its message; a document that does not parse or selects an
unknown field answers ``data: null`` with the message (graphene's validation behaviour). Before anything
runs, a document is held to MLflow's limits (``graphql_no_batching.check_query_safety``: depth, total
selections, root fields and aliases per level), and a ``Guard`` (basic auth) judges every root field with
its actual arguments (variables substituted, wherever the field sits: aliases, fragments, any operation)
and may filter nested values.
"""

from .executor import Guard, Resolver, execute, input_of
from .limits import check_query_safety
from .parser import Document, GraphQLError, parse

__all__ = ["Document", "GraphQLError", "Guard", "Resolver", "check_query_safety", "execute", "input_of", "parse"]
