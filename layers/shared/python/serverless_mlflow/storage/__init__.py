"""The table and the bucket: table access (``table``, the only code that talks to DynamoDB), the key schema declared as
data (``schema``), key encodings (``keys``), the table's layout version, DynamoDB's limits (``dynamo_limits``,
``item_size``), request counters (``stats``), S3 (``s3``), values sealed with the stack's KMS key (``kms_secrets``),
and the ``issue_trace`` items a trace implies (``issue_links``, shared by the issues store, the trace search and the
indexer).

May import: core.
"""
