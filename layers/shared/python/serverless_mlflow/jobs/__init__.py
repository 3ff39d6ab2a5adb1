"""Work handed out of a request: the jobs queue (``job_queue``: one SQS message per attempt) and what checks and hands
work to it (``invoke_jobs``: the UI's invoke routes; ``online_scoring``: the monitor's minute dispatcher;
``issue_detection_dispatch``: the scheduled issue detection's) and webhook deliveries (``webhook_http``: a webhook
request sent as MLflow sends it).

May import: core, request, storage, store, auth.
"""
