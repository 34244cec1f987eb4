"""Shared fixtures of the end-to-end suite: one real stack (workerd + moto + IdP) per session, started by
the same launcher as `make dev`, and helpers to run real paused Step Functions executions."""
from __future__ import annotations

import json
import os
import sys
import time
import uuid
from pathlib import Path

import pytest
import requests

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))

from ringi_stack import MIN_CLAIM_LEASE_SECONDS, Ports, Stack, fresh_state  # noqa: E402

ARTIFACTS = ROOT / "tests" / "artifacts"


@pytest.fixture(scope="session")
def stack():
    ports = Ports(worker=int(os.environ.get("RINGI_TEST_WORKER_PORT", "8797")),
                  moto=int(os.environ.get("RINGI_TEST_MOTO_PORT", "5010")),
                  idp=int(os.environ.get("RINGI_TEST_IDP_PORT", "9010")),
                  mailbox=int(os.environ.get("RINGI_TEST_MAILBOX_PORT", "8035")))
    # Another suite may run at the same time on other ports (RINGI_TEST_*_PORT): it needs its own state dir.
    state = Path(os.environ.get("RINGI_TEST_STATE_DIR", ROOT / ".ringi" / "test"))
    # The shortest lease the worker accepts: test_faults waits for a dead worker's claim to run out.
    s = Stack(state=fresh_state(state), ports=ports, claim_lease_seconds=MIN_CLAIM_LEASE_SECONDS, demo=True)
    s.start()
    mint = s.mint

    def recording_mint(*args, **kwargs):
        token = mint(*args, **kwargs)
        SEEN["jwts"].add(token)
        return token

    s.mint = recording_mint
    yield s
    s.stop()


# Everything secret the suite handled and every worker response it got: tests/e2e/test_zz_leaks.py checks
# that none of the secrets shows up in a response or a log line.
SEEN = {"task_tokens": set(), "jwts": set(), "responses": []}


@pytest.fixture(scope="session", autouse=True)
def record_responses():
    original = requests.Session.send

    def send(self, request, **kwargs):
        response = original(self, request, **kwargs)
        if request.url.startswith("http://127.0.0.1:"):
            SEEN["responses"].append((request.method, request.url, response.status_code, response.text))
        return response

    requests.Session.send = send
    yield
    requests.Session.send = original


class Api:
    """Thin HTTP client for the worker's API."""

    def __init__(self, stack: Stack, base_url: str | None = None):
        self.stack = stack
        self.base = base_url or stack.base_url

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
        return {"authorization": f"Bearer {self.stack.mint(user, **claims)}"}


@pytest.fixture(scope="session")
def api(stack):
    return Api(stack)


def _definition(timeout: int) -> str:
    """A Standard workflow paused on an SQS `.waitForTaskToken` task, as seed 000 (JSONPath, ResultPath
    keeps the input; Catch routes a rejection and a timeout)."""
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


class Workflows:
    def __init__(self, stack: Stack):
        self.sfn = stack.aws("stepfunctions")
        self.sqs = stack.aws("sqs")
        role = "arn:aws:iam::123456789012:role/ringi-e2e"
        self.machines = {
            t: self.sfn.create_state_machine(name=f"ringi-e2e-{t}-{uuid.uuid4().hex[:6]}", definition=_definition(t),
                                             roleArn=role)["stateMachineArn"]
            for t in (300, 3)
        }

    def start_paused(self, timeout: int = 300, request: str = "deploy"):
        """Starts an execution and returns (executionArn, taskToken) once it is paused."""
        q = self.sqs.create_queue(QueueName=f"ringi-e2e-{uuid.uuid4().hex[:10]}")["QueueUrl"]
        arn = self.sfn.start_execution(stateMachineArn=self.machines[timeout],
                                       input=json.dumps({"queueUrl": q, "request": request}))["executionArn"]
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            msgs = self.sqs.receive_message(QueueUrl=q, WaitTimeSeconds=1).get("Messages", [])
            if msgs:
                token = json.loads(msgs[0]["Body"])["taskToken"]
                SEEN["task_tokens"].add(token)
                return arn, token
        raise AssertionError("the execution never handed out a task token")

    def start_many(self, n: int, timeout: int = 300):
        """Starts n executions on one queue; returns [(executionArn, taskToken)] once all are paused."""
        q = self.sqs.create_queue(QueueName=f"ringi-e2e-many-{uuid.uuid4().hex[:10]}")["QueueUrl"]
        arns = {}
        for i in range(n):
            tag = f"req-{i}"
            arns[tag] = self.sfn.start_execution(stateMachineArn=self.machines[timeout],
                                                 input=json.dumps({"queueUrl": q, "request": tag}))["executionArn"]
        tokens = {}
        deadline = time.monotonic() + 60 + n / 5
        while len(tokens) < n and time.monotonic() < deadline:
            for m in self.sqs.receive_message(QueueUrl=q, MaxNumberOfMessages=10, WaitTimeSeconds=1).get("Messages", []):
                body = json.loads(m["Body"])
                tokens[body["request"]] = body["taskToken"]
                SEEN["task_tokens"].add(body["taskToken"])
                self.sqs.delete_message(QueueUrl=q, ReceiptHandle=m["ReceiptHandle"])
        assert len(tokens) == n, f"only {len(tokens)} of {n} executions paused"
        return [(arns[t], tokens[t]) for t in arns]

    def wait_done(self, arn: str, timeout: float = 20) -> dict:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            d = self.sfn.describe_execution(executionArn=arn)
            if d["status"] != "RUNNING":
                return d
            time.sleep(0.2)
        raise AssertionError(f"execution still RUNNING after {timeout}s")

    def status(self, arn: str) -> str:
        return self.sfn.describe_execution(executionArn=arn)["status"]

    def history(self, arn: str) -> list:
        return self.sfn.get_execution_history(executionArn=arn, maxResults=1000)["events"]


@pytest.fixture(scope="session")
def workflows(stack):
    return Workflows(stack)


@pytest.fixture
def paused(workflows, api):
    """A real paused execution registered with ringi for approver `alice`: (approvalId, executionArn)."""
    def make(timeout=300, approvers=None, **fields):
        arn, token = workflows.start_paused(timeout)
        r = api.register(token, approvers=approvers, **fields)
        assert r.status_code == 201, r.text
        return r.json()["id"], arn
    return make
