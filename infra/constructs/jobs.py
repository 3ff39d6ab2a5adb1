"""Server-side jobs: the jobs API (a feature function) -> an SQS queue -> the ``job_worker`` function.

* One message per job attempt; the worker takes one at a time (batch size 1: a job may use the whole
  invocation, up to Lambda's 15 minutes) and records every state change on the job's item with a condition.
* Retries: the worker makes a transiently failed message visible again after a backoff; after
  ``MAX_RECEIVES`` deliveries SQS moves it to the jobs' dead-letter queue (the job itself is FAILED by then).
* Longer runs: a job checkpoints onto its item and the worker sends a fresh message to continue it in the next
  invocation (docs/jobs.md). The queue's visibility timeout is longer than the function's, so a message is never
  delivered twice while an invocation still runs it.
* The worker's kinds (MLflow's demo generators) drive this stack's own API with the stock client; the role may
  invoke that API and nothing else of it (IAM auth: SigV4-signed requests).
"""

from __future__ import annotations

from aws_cdk import Duration, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_event_sources as sources
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from infra import assets
from infra.constructs.functions import ServerlessFunction, SharedResources
from infra.constructs.layer import built_code
from serverless_mlflow.jobs import job_queue

WORKER_FUNCTION = "job_worker"
WORKER_TIMEOUT = Duration.minutes(15)
WORKER_MEMORY_MB = 2048
# Jobs run at most this many at once (the queue's event source maximum), reserved so the API cannot starve them.
WORKER_CONCURRENCY = 5


def worker_code() -> lambda_.Code:
    """The worker's package built from ``requirements/job_worker.lock`` for Lambda (``infra/assets.py``; cached per
    lock). Synth builds it when missing, so a plain ``cdk deploy`` ships mlflow too; a build that cannot run (no
    network, no llvm-strip) stops synth with pip's or the tool's message."""
    return built_code(assets.build_worker(assets.RUNTIME))


class JobsRunner(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        shared: SharedResources,
        api_function: ServerlessFunction,
        api_url: str,
        api_id: str,
        submitters: tuple[ServerlessFunction, ...] = (),
    ) -> None:
        super().__init__(scope, construct_id)
        config = shared.config
        self.dead_letter_queue = sqs.Queue(
            self, "JobDeadLetters", encryption=sqs.QueueEncryption.SQS_MANAGED, enforce_ssl=True, retention_period=Duration.days(14)
        )
        self.queue = sqs.Queue(
            self,
            "Jobs",
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
            retention_period=Duration.days(4),
            # Past the worker's timeout: a message is not delivered again while an invocation still runs its job.
            visibility_timeout=Duration.seconds(WORKER_TIMEOUT.to_seconds() + 60),
            dead_letter_queue=sqs.DeadLetterQueue(queue=self.dead_letter_queue, max_receive_count=job_queue.MAX_RECEIVES),
        )
        # LITELLM_LOCAL_MODEL_COST_MAP: litellm (MLflow's GenAI extras) reads the price map it ships instead of
        # fetching it from GitHub at every cold start (about 15 s of retries where the worker has no egress).
        environment = {"JOB_QUEUE_URL": self.queue.queue_url, "JOB_SERVER_URL": api_url, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
        if config.iam_auth:
            environment["MLFLOW_TRACKING_AWS_SIGV4"] = "true"
        self.worker = ServerlessFunction(
            self,
            "Worker",
            name=WORKER_FUNCTION,
            code=worker_code(),
            handler=f"{WORKER_FUNCTION}.handler.lambda_handler",
            shared=shared,
            memory_size=WORKER_MEMORY_MB,
            timeout=WORKER_TIMEOUT,
            description="mlflow-serverless job worker (MLflow's server-side jobs: demo data, judges, evaluation, issue detection, prompt optimization)",
            environment=environment,
            reserved_concurrency=config.reserved(WORKER_CONCURRENCY),
        )
        self.worker.alias.add_event_source(
            sources.SqsEventSource(self.queue, batch_size=1, report_batch_item_failures=True, max_concurrency=WORKER_CONCURRENCY)
        )
        self.queue.grant(self.worker.role, "sqs:SendMessage", "sqs:ChangeMessageVisibility")
        # The functions that submit jobs: the jobs API, and the routes MLflow answers with a job (prompt optimization).
        for submitter in (api_function, *submitters):
            self.queue.grant_send_messages(submitter.role)
            submitter.function.add_environment("JOB_QUEUE_URL", self.queue.queue_url)
        self.api_resource = Stack.of(self).format_arn(service="execute-api", resource=api_id, resource_name="*")
        self.worker.role.add_to_principal_policy(iam.PolicyStatement(actions=["execute-api:Invoke"], resources=[self.api_resource]))
