"""The worker's API as a thin HTTP client, real paused Step Functions executions to register with it, and the
operator's view of the local D1."""
from __future__ import annotations

import json
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

import requests
from ringi_stack import Stack, query_d1

from . import ROOT
from .leaks import SEEN


class Api:
    """Thin HTTP client for the worker's API."""

    def __init__(self, stack: Stack, base_url: str | None = None, claims: dict | None = None):
        self.stack = stack
        self.base = base_url or stack.base_url
        # Claims every bearer of this client carries unless a call says otherwise (e.g. ID tokens: ID_TOKEN).
        self.claims = claims or {}

    def register(self, token: str, approvers=None, headers=None, **fields):
        body = {"taskToken": token, "approvers": approvers or [{"sub": "alice"}], "title": "Deploy v2 to production",
                "timeoutSeconds": 600, **fields}
        r = requests.post(f"{self.base}/api/v1/approvals", json=body,
                          headers={"authorization": f"Bearer {self.stack.api_key}", **(headers or {})}, timeout=30)
        return r

    def get(self, approval_id: str, as_user="alice", headers=None, **claims):
        return requests.get(f"{self.base}/api/v1/approvals/{approval_id}",
                            headers={**self.auth(as_user, **claims), **(headers or {})}, timeout=30)

    def decide(self, approval_id: str, decision="approve", as_user="alice", body=None, headers=None, **claims):
        payload = body if body is not None else {"decision": decision}
        return requests.post(f"{self.base}/api/v1/approvals/{approval_id}/decision", json=payload,
                             headers={**self.auth(as_user, **claims), **(headers or {})}, timeout=60)

    def auth(self, user, **claims):
        return {"authorization": f"Bearer {self.stack.mint(user, **{**self.claims, **claims})}"}

    def call(self, method: str, path: str, as_user="alice", body=None, **claims):
        """Any API call as `as_user` (JSON body or none)."""
        return requests.request(method, f"{self.base}{path}", json=body, headers=self.auth(as_user, **claims),
                                timeout=60)


def id_token_claims(stack: Stack) -> dict:
    """What turns the Cognito stand-in's access-token claims into an ID token's (`token_use: id`, `aud` the SPA's
    client): the bearer of a worker with TOKEN_USE=id, whose callers' emails can be verified."""
    return {"token_use": "id", "aud": stack.client_id, "client_id": None, "scope": None}


def envelope(detail: dict, account: str, region: str) -> dict:
    """An event as an EventBridge API destination delivers it: the registration in `detail`, where it came from
    in `account` and `region`."""
    return {"version": "0", "id": str(uuid.uuid4()), "detail-type": "ringi.approval.requested",
            "source": "ringi.e2e", "account": account, "time": "2026-12-04T00:00:00Z", "region": region,
            "resources": [], "detail": detail}


def registration(token: str, **extra) -> dict:
    """A minimal registration body for approver `alice`."""
    return {"taskToken": token, "approvers": [{"sub": "alice"}], "title": "Deploy", "timeoutSeconds": 600, **extra}


def paused_factory(workflows, api):
    """make(timeout=300, approvers=None, **fields): a real paused execution registered with ringi (approver
    `alice` unless told otherwise) → (approvalId, executionArn)."""
    def make(timeout=300, approvers=None, **fields):
        arn, token = workflows.start_paused(timeout)
        r = api.register(token, approvers=approvers, **fields)
        assert r.status_code == 201, r.text
        return r.json()["id"], arn
    return make


def decide_concurrently(stack, base_url: str, approval_id: str, n: int = 20, user: str = "alice") -> list:
    """n approvals of one approval by one approver at the same moment (each request with its own token): the
    responses, in no particular order."""
    from concurrent.futures import ThreadPoolExecutor
    tokens = [stack.mint(user) for _ in range(n)]

    def go(tok):
        return requests.post(f"{base_url}/api/v1/approvals/{approval_id}/decision", json={"decision": "approve"},
                             headers={"authorization": f"Bearer {tok}"}, timeout=60)

    with ThreadPoolExecutor(max_workers=n) as pool:
        return list(pool.map(go, tokens))


def round_trips(resp) -> dict:
    """The worker's own count of a response's remote round trips ({"d1": 2, "sfn": 1, "ses": 0}); sent only
    while a dev switch (D1_FAULTS, INJECT_LATENCY) is on."""
    header = resp.headers["x-ringi-round-trips"]
    return {k: int(v) for k, v in (part.split("=") for part in header.split(";"))}


def d1(stack, sql: str, persist=None) -> list:
    """Reads (or changes) the worker's local D1 directly, as an operator would."""
    return query_d1(persist or stack.d1_dir, sql)


def log_with(path, *lines: str, timeout: float = 10.0) -> str:
    """A component's log once it names every one of `lines` (or as it is after `timeout` s): wrangler writes a
    worker's log lines from its output pipe, which may be a moment behind the response that caused them."""
    deadline = time.monotonic() + timeout
    while True:
        text = path.read_text(errors="replace") if path.exists() else ""
        if all(line in text for line in lines) or time.monotonic() > deadline:
            return text
        time.sleep(0.05)


def wait_execution_done(sfn, arn: str, timeout: float = 20, poll: float = 0.2) -> dict:
    """describe_execution once the execution has left RUNNING (else the test fails after `timeout` seconds)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        d = sfn.describe_execution(executionArn=arn)
        if d["status"] != "RUNNING":
            return d
        time.sleep(poll)
    raise AssertionError(f"execution {arn} still RUNNING after {timeout}s")


def _definition(timeout: int) -> str:
    """A Standard workflow paused on an SQS `.waitForTaskToken` task, as in the reference design ringi improves
    on (JSONPath, ResultPath keeps the input; Catch routes a rejection and a timeout)."""
    return json.dumps({
        "Comment": "ringi e2e approval",
        "StartAt": "RequestApproval",
        "States": {
            "RequestApproval": {
                "Type": "Task",
                "Resource": "arn:aws:states:::sqs:sendMessage.waitForTaskToken",
                "Parameters": {"QueueUrl.$": "$.queueUrl",
                               "MessageBody": {"taskToken.$": "$$.Task.Token", "request.$": "$.request"}},
                "TimeoutSeconds": timeout,
                "ResultPath": "$.approval",
                "Catch": [
                    {"ErrorEquals": ["Rejected"], "ResultPath": "$.rejection", "Next": "Rejected"},
                    {"ErrorEquals": ["States.Timeout"], "ResultPath": "$.timeout", "Next": "TimedOut"},
                ],
                "Next": "Approved",
            },
            "Approved": {"Type": "Pass", "End": True},
            "Rejected": {"Type": "Pass", "End": True},
            "TimedOut": {"Type": "Pass", "End": True},
        },
    })


def start_paused(sfn, sqs, machine: str, request: str = "deploy"):
    """Starts an execution of `machine` (a `_definition` workflow) on a new queue of `sqs` and returns
    (executionArn, taskToken) once it is paused."""
    q = sqs.create_queue(QueueName=f"ringi-e2e-{uuid.uuid4().hex[:10]}")["QueueUrl"]
    arn = sfn.start_execution(stateMachineArn=machine, input=json.dumps({"queueUrl": q, "request": request}))["executionArn"]
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        msgs = sqs.receive_message(QueueUrl=q, WaitTimeSeconds=1).get("Messages", [])
        if msgs:
            token = json.loads(msgs[0]["Body"])["taskToken"]
            SEEN.task_tokens.add(token)
            return arn, token
    raise AssertionError("the execution never handed out a task token")


class Workflows:
    def __init__(self, stack: Stack, timeouts=(300, 3)):
        """One state machine per task timeout in seconds (`timeouts`), each paused on its callback."""
        self.sfn = stack.aws("stepfunctions")
        self.sqs = stack.aws("sqs")
        role = "arn:aws:iam::123456789012:role/ringi-e2e"
        self.machines = {
            t: self.sfn.create_state_machine(name=f"ringi-e2e-{t}-{uuid.uuid4().hex[:6]}", definition=_definition(t),
                                             roleArn=role)["stateMachineArn"]
            for t in timeouts
        }

    def start_paused(self, timeout: int = 300, request: str = "deploy"):
        """Starts an execution and returns (executionArn, taskToken) once it is paused."""
        return start_paused(self.sfn, self.sqs, self.machines[timeout], request)

    def start_many(self, n: int, timeout: int = 300):
        """Starts n executions on one queue; returns [(executionArn, taskToken)] once all are paused. The starts
        go out several at a time and the queue's messages are removed ten at a time: a pool of hundreds is
        seconds of round trips to moto otherwise."""
        q = self.sqs.create_queue(QueueName=f"ringi-e2e-many-{uuid.uuid4().hex[:10]}")["QueueUrl"]

        def start(tag):
            return tag, self.sfn.start_execution(stateMachineArn=self.machines[timeout],
                                                 input=json.dumps({"queueUrl": q, "request": tag}))["executionArn"]
        with ThreadPoolExecutor(max_workers=8) as pool:
            arns = dict(pool.map(start, [f"req-{i}" for i in range(n)]))
        tokens = {}
        deadline = time.monotonic() + 60 + n / 5
        while len(tokens) < n and time.monotonic() < deadline:
            messages = self.sqs.receive_message(QueueUrl=q, MaxNumberOfMessages=10, WaitTimeSeconds=1).get("Messages", [])
            for m in messages:
                body = json.loads(m["Body"])
                tokens[body["request"]] = body["taskToken"]
                SEEN.task_tokens.add(body["taskToken"])
            if messages:
                self.sqs.delete_message_batch(QueueUrl=q, Entries=[{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]}
                                                                   for i, m in enumerate(messages)])
        assert len(tokens) == n, f"only {len(tokens)} of {n} executions paused"
        return [(arns[t], tokens[t]) for t in arns]

    def wait_done(self, arn: str, timeout: float = 20) -> dict:
        return wait_execution_done(self.sfn, arn, timeout)

    def status(self, arn: str) -> str:
        return self.sfn.describe_execution(executionArn=arn)["status"]

    def history(self, arn: str) -> list:
        return self.sfn.get_execution_history(executionArn=arn, maxResults=1000)["events"]
