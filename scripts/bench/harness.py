"""The benchmark's own stack and what every measurement needs from it: ports and state dir, the log line, workers
run from a frozen copy of the build, their processes, real paused Step Functions executions, and the reference
design's server (API Gateway + Lambda + DynamoDB, from the article ringi improves on)."""
from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import sys
import time
import uuid
from pathlib import Path

import ringi_stack
from ringi_stack import REGION, Ports, Stack, http_ok

from common import CpuMeter, WorkerProcs

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]

# RINGI_BENCH_PORTS=worker,moto,idp,mailbox moves the bench stack (a second checkout measuring alongside).
PORTS = Ports(*map(int, os.environ["RINGI_BENCH_PORTS"].split(","))) if os.environ.get("RINGI_BENCH_PORTS") \
    else Ports(worker=8887, moto=5410, idp=9410, mailbox=8045)
SEED_PORT = 8890
STATE = ROOT / ".ringi" / "bench"
DOC = ROOT / "docs" / "benchmarks.md"
APPROVER = "bench-approver"
T0 = time.monotonic()


def log(msg: str) -> None:
    print(f"[bench {time.monotonic() - T0:6.1f}s] {msg}", flush=True)


def seed_dir() -> Path:
    """The reference design's two Lambda handlers, read where they are at bench time (`../shared/bench` beside the
    repository, or RINGI_SEED_DIR): never copied into the project."""
    return Path(os.environ.get("RINGI_SEED_DIR", ROOT.parent / "shared" / "bench")).resolve()


def e2e_support():
    """The end-to-end tests' support package (tests/e2e/support: paused executions, the stores as an operator
    reads them, the callback-counting proxy), loaded as a package from its directory: it is not installed, and
    the benchmark uses it as the tests do rather than keeping copies."""
    import importlib.util
    if "support" not in sys.modules:
        init = ROOT / "tests" / "e2e" / "support" / "__init__.py"
        spec = importlib.util.spec_from_file_location("support", init, submodule_search_locations=[str(init.parent)])
        module = importlib.util.module_from_spec(spec)
        sys.modules["support"] = module
        spec.loader.exec_module(module)
    return sys.modules["support"]


def bearer(token: str) -> dict:
    return {"authorization": f"Bearer {token}"}


# ------------------------------------------------------------------------------------------------ worker processes
def worker_procs(stack: Stack, name: str, port: int) -> WorkerProcs:
    return WorkerProcs(next(p for p in stack.procs if p.name == name).popen.pid, port)


def worker_cpu(wp: WorkerProcs) -> CpuMeter:
    return CpuMeter(wp.ticks)


def worker_vars(stack: Stack, port: int) -> dict:
    return {**stack.worker_vars(), "PUBLIC_BASE_URL": f"http://127.0.0.1:{port}"}


def launch_worker(stack: Stack, name: str, port: int) -> str:
    """Another worker of this stack (own D1) on `port`, with the stack's settings."""
    return stack._launch_worker(name, port, worker_vars(stack, port))


@contextlib.contextmanager
def other_root(root: Path):
    """Launch a worker from another tree (edge/ with its own build, dist/): the stack launcher runs wrangler in
    ROOT/edge, so point ROOT elsewhere for the duration of the launch."""
    saved = ringi_stack.ROOT
    ringi_stack.ROOT = root
    try:
        yield
    finally:
        ringi_stack.ROOT = saved


def make_tree(tree: Path, edge_build: Path, dist: Path, edge: Path = ROOT / "edge") -> Path:
    """A tree `wrangler dev` can run in (edge/ with wrangler.toml, migrations and a build; dist/ beside it), made of
    copies: other people rebuilding edge/build or dist/ (wrangler dev reloads on change) cannot touch it. `edge`:
    where wrangler.toml and the migrations come from (another checkout's, for a build of another commit)."""
    if tree.exists():
        shutil.rmtree(tree)
    (tree / "edge").mkdir(parents=True)
    shutil.copytree(edge_build, tree / "edge" / "build")
    shutil.copytree(dist, tree / "dist", ignore=shutil.ignore_patterns(".stage"))
    shutil.copytree(edge / "migrations", tree / "edge" / "migrations")
    shutil.copy2(edge / "wrangler.toml", tree / "edge" / "wrangler.toml")
    html = (tree / "dist" / "index.html").read_text()
    missing = [ref for ref in re.findall(r'(?:src|href|content)="/([^"]+)"', html) if not (tree / "dist" / ref).exists()]
    if missing or not (tree / "edge" / "build" / "worker" / "shim.mjs").exists():
        raise RuntimeError(f"{dist} or {edge_build} is incomplete (a build in progress?): missing {missing}")
    return tree


def run_workers_from(stack: Stack, tree: Path) -> None:
    """From now on the stack's workers run from `tree` (see make_tree); `stack.bench_tree` may be changed."""
    stack.bench_tree = tree

    def launch(name, port, variables, assets=None):
        with other_root(stack.bench_tree):
            return Stack._launch_worker(stack, name, port, variables, assets)

    stack._launch_worker = launch


@contextlib.contextmanager
def tree_for(stack: Stack, tree: Path):
    saved, stack.bench_tree = stack.bench_tree, tree
    try:
        yield
    finally:
        stack.bench_tree = saved


# ------------------------------------------------------------------------------------------------ AWS side
def definition(timeout: int = 3600) -> str:
    """A Standard workflow paused on an SQS `.waitForTaskToken` task (as the end-to-end tests'), so that the
    benchmark can collect the task tokens from one queue."""
    return json.dumps({
        "StartAt": "RequestApproval",
        "States": {
            "RequestApproval": {
                "Type": "Task", "Resource": "arn:aws:states:::sqs:sendMessage.waitForTaskToken",
                "Parameters": {"QueueUrl.$": "$.queueUrl",
                               "MessageBody": {"taskToken.$": "$$.Task.Token", "request.$": "$.request"}},
                "TimeoutSeconds": timeout, "ResultPath": "$.approval",
                "Catch": [{"ErrorEquals": ["States.ALL"], "ResultPath": "$.error", "Next": "Failed"}],
                "Next": "Approved"},
            "Approved": {"Type": "Pass", "End": True},
            "Failed": {"Type": "Pass", "End": True},
        }})


class Paused:
    """Real paused moto executions and their task tokens."""

    def __init__(self, stack: Stack):
        self.sfn, self.sqs = stack.aws("stepfunctions"), stack.aws("sqs")
        self.arn = self.sfn.create_state_machine(name=f"ringi-bench-{uuid.uuid4().hex[:6]}", definition=definition(),
                                                 roleArn="arn:aws:iam::123456789012:role/ringi-bench")["stateMachineArn"]
        self.queue = self.sqs.create_queue(QueueName=f"ringi-bench-{uuid.uuid4().hex[:8]}")["QueueUrl"]
        self.started = 0

    def start(self, n: int, timeout: float = 300) -> list[str]:
        """Starts n executions and returns their n task tokens once all are paused."""
        names = set()
        for _ in range(n):
            name = f"r{self.started:05d}-{uuid.uuid4().hex[:6]}"
            self.sfn.start_execution(stateMachineArn=self.arn, name=name,
                                     input=json.dumps({"queueUrl": self.queue, "request": name}))
            names.add(name)
            self.started += 1
        tokens = {}
        deadline = time.monotonic() + timeout
        while len(tokens) < n and time.monotonic() < deadline:
            msgs = self.sqs.receive_message(QueueUrl=self.queue, MaxNumberOfMessages=10, WaitTimeSeconds=1)
            for m in msgs.get("Messages", []):
                body = json.loads(m["Body"])
                if body["request"] in names:
                    tokens[body["request"]] = body["taskToken"]
                self.sqs.delete_message(QueueUrl=self.queue, ReceiptHandle=m["ReceiptHandle"])
        if len(tokens) < n:
            raise RuntimeError(f"only {len(tokens)} of {n} executions paused within {timeout:.0f}s")
        return list(tokens.values())

    def succeeded(self, expect: int, timeout: float = 60) -> int:
        deadline = time.monotonic() + timeout
        while True:
            count = 0
            for page in self.sfn.get_paginator("list_executions").paginate(stateMachineArn=self.arn,
                                                                           statusFilter="SUCCEEDED"):
                count += len(page["executions"])
            if count >= expect or time.monotonic() > deadline:
                return count
            time.sleep(0.5)


def setup_seed(stack: Stack, table: str = "seed-approvals", port: int = SEED_PORT, inject_ms: float = 0.0,
               name: str = "seed", sfn_endpoint: str | None = None):
    """The reference design's AWS side: its DynamoDB table and an IAM user for its Lambdas; then its server on
    `port` (`inject_ms`: a delay before each of its AWS calls, the latency model's in-region RTT; `sfn_endpoint`:
    where its Step Functions calls go instead of moto, e.g. a proxy counting them)."""
    stack.aws("dynamodb").create_table(TableName=table, BillingMode="PAY_PER_REQUEST",
                                       KeySchema=[{"AttributeName": "approvalId", "KeyType": "HASH"}],
                                       AttributeDefinitions=[{"AttributeName": "approvalId", "AttributeType": "S"}])
    iam = stack.aws("iam")
    iam.create_user(UserName=f"{name}-lambda")
    iam.put_user_policy(UserName=f"{name}-lambda", PolicyName="seed-lambda", PolicyDocument=json.dumps({
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Resource": "*", "Action": [
            "dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:DeleteItem",
            "states:SendTaskSuccess", "states:SendTaskFailure"]}]}))
    key = iam.create_access_key(UserName=f"{name}-lambda")["AccessKey"]
    proc = stack._spawn(name, [sys.executable, str(HERE / "seed_server.py"), "--port", str(port),
                               "--issuer", stack.issuer, "--client-id", stack.client_id, "--seed-dir", str(seed_dir()),
                               "--inject-ms", str(inject_ms)],
                        env={"AWS_ENDPOINT_URL": stack.moto_url, "AWS_DEFAULT_REGION": REGION,
                             "AWS_ACCESS_KEY_ID": key["AccessKeyId"], "AWS_SECRET_ACCESS_KEY": key["SecretAccessKey"],
                             "TABLE_NAME": table, "PYTHONUNBUFFERED": "1",
                             **({"AWS_ENDPOINT_URL_SFN": sfn_endpoint} if sfn_endpoint else {})},
                        drop=("AWS_",))
    stack._wait(proc, lambda: http_ok(f"http://127.0.0.1:{port}/healthz"), 30)
    return proc


def register_inbox(client, api_key: str, n: int = 30) -> list[str]:
    """The inbox user's approvals (`bench-inbox`, also reachable through group `ops`): the request types' and the
    first loads' approvals, registered alike on every build the benchmark measures."""
    return [register_synthetic(client, api_key, [{"sub": "bench-inbox"}, {"group": "ops"}], f"Deploy #{i}",
                               summary="A change to review. " * 8, timeoutSeconds=86400 + i * 60,
                               context={"executionArn": f"arn:aws:states:us-east-1:123456789012:execution:demo:{i}"})
            for i in range(n)]


def register_synthetic(client, api_key: str, approvers: list, title: str, **fields) -> str:
    """Registers an approval with a made-up task token (nothing will be decided); returns its id."""
    st, data, _ = client.request("POST", "/api/v1/approvals", {
        "taskToken": f"bench-synthetic-{uuid.uuid4()}", "approvers": approvers, "title": title,
        "timeoutSeconds": 3600, **fields}, bearer(api_key))
    assert st == 201, (st, data)
    return json.loads(data)["id"]
