"""The local AWS stand-in (standins/moto_server.py) behaves like Step Functions where ringi relies on it.

Starts the launcher on a free 127.0.0.1 port in 5100-5199, sets things up with the admin key (which skips
IAM auth), and checks .waitForTaskToken pauses and callbacks, AWS's callback error codes, and IAM auth
for a least-privilege "edge" user. Run: python -m pytest -q tests/e2e/test_moto_standin.py
"""
import json
import os
import random
import subprocess
import sys
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import boto3
import botocore.auth
import botocore.awsrequest
import botocore.credentials
import pytest
import requests
from botocore.config import Config
from botocore.exceptions import ClientError
from support.api import wait_execution_done

from ringi_stack import port_free

ROOT = Path(__file__).resolve().parents[2]
LAUNCHER = ROOT / "standins" / "moto_server.py"
REGION = "us-east-1"
ADMIN_KEY = "ringi-admin"
ROLE = "arn:aws:iam::123456789012:role/ringi-sfn"
TABLE = "ringi-approvals"
SHORT_TIMEOUT = 2  # TimeoutSeconds of the "expiring" machine
LONG_TIMEOUT = 30  # other machines: never reached, but no execution waits forever


# ---------------------------------------------------------------- server fixture

@pytest.fixture(scope="module")
def moto_url(tmp_path_factory):
    # No AWS_*/MOTO_* from the caller: a stale MOTO_PORT or MOTO_ADMIN_ACCESS_KEY would change the server.
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "MOTO_"))}
    log = tmp_path_factory.mktemp("moto") / "moto.log"
    # Another run may grab the same free port between our check and moto's bind, and its server would
    # then answer our HTTP probe: only werkzeug's "Running on" line in *our* log proves the bind was ours.
    for port in random.sample([p for p in range(5100, 5200) if port_free(p)], 5):
        with open(log, "w") as out:
            proc = subprocess.Popen([sys.executable, str(LAUNCHER), "-H", "127.0.0.1", "-p", str(port)],
                                    stdout=out, stderr=subprocess.STDOUT, env=env)
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 30
        while proc.poll() is None and time.monotonic() < deadline:
            if f"Running on {url}" in log.read_text():
                requests.get(f"{url}/moto-api/config", timeout=5).raise_for_status()
                break
            time.sleep(0.2)
        if proc.poll() is None and time.monotonic() < deadline:
            break
        proc.kill()  # lost the port, or hung: try another one
        proc.wait()
    else:
        pytest.fail(f"moto launcher did not come up:\n{log.read_text()}")
    try:
        yield url
    finally:
        proc.terminate()  # SIGTERM: the launcher must stop by itself, cleanly
        try:
            rc = proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            pytest.fail("moto launcher ignored SIGTERM")
        assert rc == 0, f"launcher exited {rc} on SIGTERM:\n{log.read_text()[-2000:]}"


def client(url, service, key=ADMIN_KEY, secret="anything"):
    return boto3.client(service, endpoint_url=url, region_name=REGION, aws_access_key_id=key,
                        aws_secret_access_key=secret,
                        config=Config(retries={"total_max_attempts": 1}))


@pytest.fixture(scope="module")
def sfn(moto_url):
    return client(moto_url, "stepfunctions")


@pytest.fixture(scope="module")
def sqs(moto_url):
    return client(moto_url, "sqs")


@pytest.fixture(scope="module")
def ddb(moto_url):
    ddb = client(moto_url, "dynamodb")
    ddb.create_table(TableName=TABLE, BillingMode="PAY_PER_REQUEST",
                     AttributeDefinitions=[{"AttributeName": "approvalId", "AttributeType": "S"}],
                     KeySchema=[{"AttributeName": "approvalId", "KeyType": "HASH"}])
    return ddb


# ---------------------------------------------------------------- state machines

def _definition(resource, parameters, timeout):
    return json.dumps({
        "StartAt": "AwaitDecision",
        "States": {
            "AwaitDecision": {
                "Type": "Task", "Resource": resource, "Parameters": parameters,
                "TimeoutSeconds": timeout, "ResultPath": "$.decision", "Next": "Approved",
                "Catch": [
                    {"ErrorEquals": ["Rejected"], "ResultPath": "$.error", "Next": "Rejected"},
                    # A Wait after the timeout keeps the execution RUNNING while the task is closed.
                    {"ErrorEquals": ["States.Timeout"], "ResultPath": "$.error", "Next": "Expired"},
                ],
            },
            "Approved": {"Type": "Pass", "Result": "approved", "ResultPath": "$.outcome", "End": True},
            "Rejected": {"Type": "Pass", "Result": "rejected", "ResultPath": "$.outcome", "End": True},
            "Expired": {"Type": "Wait", "Seconds": 3, "Next": "ExpiredEnd"},
            "ExpiredEnd": {"Type": "Pass", "Result": "expired", "ResultPath": "$.outcome", "End": True},
        },
    })


SQS_PARAMS = {"QueueUrl.$": "$.queueUrl",
              "MessageBody": {"approvalId.$": "$.approvalId", "taskToken.$": "$$.Task.Token"}}
DDB_PARAMS = {"TableName": TABLE,
              "Item": {"approvalId": {"S.$": "$.approvalId"}, "taskToken": {"S.$": "$$.Task.Token"},
                       "status": {"S": "PENDING"}}}


@pytest.fixture(scope="module")
def machines(sfn, ddb):
    def make(name, resource, params, timeout):
        return sfn.create_state_machine(name=name, roleArn=ROLE, type="STANDARD",
                                        definition=_definition(resource, params, timeout))["stateMachineArn"]
    return {
        "sqs": make("approval-sqs", "arn:aws:states:::sqs:sendMessage.waitForTaskToken", SQS_PARAMS,
                    LONG_TIMEOUT),
        "ddb": make("approval-ddb", "arn:aws:states:::aws-sdk:dynamodb:putItem.waitForTaskToken",
                    DDB_PARAMS, LONG_TIMEOUT),
        "expiring": make("approval-expiring", "arn:aws:states:::sqs:sendMessage.waitForTaskToken",
                         SQS_PARAMS, SHORT_TIMEOUT),
    }


@pytest.fixture
def start(sfn, sqs, ddb, machines):
    """start(kind) -> (executionArn, taskToken), once the execution has handed its token out."""
    def _start(kind="sqs"):
        approval_id = str(uuid.uuid4())
        queue_url = sqs.create_queue(QueueName=f"approvals-{approval_id[:8]}")["QueueUrl"]
        arn = sfn.start_execution(stateMachineArn=machines[kind], name=approval_id,
                                  input=json.dumps({"approvalId": approval_id, "queueUrl": queue_url,
                                                    "requestedBy": "bob"}))["executionArn"]
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if kind == "ddb":
                item = ddb.get_item(TableName=TABLE, Key={"approvalId": {"S": approval_id}}).get("Item")
                if item:
                    assert item["status"] == {"S": "PENDING"}
                    return arn, item["taskToken"]["S"]
                time.sleep(0.1)
            else:
                for m in sqs.receive_message(QueueUrl=queue_url, WaitTimeSeconds=1).get("Messages", []):
                    body = json.loads(m["Body"])
                    assert body["approvalId"] == approval_id
                    return arn, body["taskToken"]
        pytest.fail(f"no task token handed out; execution: {sfn.describe_execution(executionArn=arn)}")
    return _start


def finished(sfn, arn, timeout=10):
    return wait_execution_done(sfn, arn, timeout, poll=0.1)


def error_of(call, **kwargs):
    """(error code, HTTP status) of a call that must fail."""
    with pytest.raises(ClientError) as exc:
        call(**kwargs)
    resp = exc.value.response
    return resp["Error"]["Code"], resp["ResponseMetadata"]["HTTPStatusCode"]


def assert_task_closed(sfn, token):
    assert error_of(sfn.send_task_success, taskToken=token, output="{}") == ("TaskTimedOut", 400)
    assert error_of(sfn.send_task_failure, taskToken=token, error="Rejected") == ("TaskTimedOut", 400)
    assert error_of(sfn.send_task_heartbeat, taskToken=token) == ("TaskTimedOut", 400)


# ---------------------------------------------------------------- pause and resume

@pytest.mark.parametrize("kind", ["sqs", "ddb"])
def test_wait_for_task_token_pauses_then_success_resumes(sfn, start, kind):
    arn, token = start(kind)
    time.sleep(0.5)
    assert sfn.describe_execution(executionArn=arn)["status"] == "RUNNING"

    sfn.send_task_success(taskToken=token, output=json.dumps({"approved": True, "by": "alice"}))
    desc = finished(sfn, arn)
    assert desc["status"] == "SUCCEEDED"
    output = json.loads(desc["output"])
    assert output["decision"] == {"approved": True, "by": "alice"}  # ResultPath keeps the input too
    assert output["requestedBy"] == "bob" and output["outcome"] == "approved"


def test_send_task_failure_routes_via_catch_and_keeps_cause(sfn, start):
    arn, token = start()
    sfn.send_task_failure(taskToken=token, error="Rejected", cause="budget frozen")
    desc = finished(sfn, arn)
    assert desc["status"] == "SUCCEEDED"
    output = json.loads(desc["output"])
    assert output["outcome"] == "rejected"
    assert output["error"] == {"Error": "Rejected", "Cause": "budget frozen"}


# ---------------------------------------------------------------- callback error codes

def test_answered_task_is_closed(sfn, start):
    arn, token = start()
    sfn.send_task_success(taskToken=token, output='{"approved": true}')
    # At once (the execution may still be RUNNING) and after it finished: the task is closed either way.
    assert error_of(sfn.send_task_success, taskToken=token, output="{}") == ("TaskTimedOut", 400)
    assert finished(sfn, arn)["status"] == "SUCCEEDED"
    assert_task_closed(sfn, token)


def test_late_callback_after_timeout_is_task_timed_out(sfn, start):
    arn, token = start("expiring")
    deadline = time.monotonic() + SHORT_TIMEOUT + 5
    while time.monotonic() < deadline:
        events = sfn.get_execution_history(executionArn=arn)["events"]
        if any(e["type"] == "TaskTimedOut" for e in events):
            break
        time.sleep(0.1)
    else:
        pytest.fail("task did not time out")
    # The Catch went to a Wait: the execution is still RUNNING, but this task is over.
    assert sfn.describe_execution(executionArn=arn)["status"] == "RUNNING"
    assert_task_closed(sfn, token)
    desc = finished(sfn, arn)
    assert desc["status"] == "SUCCEEDED"
    output = json.loads(desc["output"])
    assert output["outcome"] == "expired" and output["error"]["Error"] == "States.Timeout"
    assert "decision" not in output  # the late callbacks did not leak in


def test_unknown_token_is_invalid_token(sfn, machines):
    garbage = "not-a-token-" + uuid.uuid4().hex
    assert error_of(sfn.send_task_success, taskToken=garbage, output="{}") == ("InvalidToken", 400)
    assert error_of(sfn.send_task_failure, taskToken=garbage, error="Rejected") == ("InvalidToken", 400)
    assert error_of(sfn.send_task_heartbeat, taskToken=garbage) == ("InvalidToken", 400)


def test_non_json_output_is_invalid_output_and_task_keeps_waiting(sfn, start):
    arn, token = start()
    assert error_of(sfn.send_task_success, taskToken=token, output="approved!") == ("InvalidOutput", 400)
    time.sleep(0.3)
    assert sfn.describe_execution(executionArn=arn)["status"] == "RUNNING"
    sfn.send_task_heartbeat(taskToken=token)  # a live task without HeartbeatSeconds accepts heartbeats
    sfn.send_task_success(taskToken=token, output='{"approved": true}')
    assert finished(sfn, arn)["status"] == "SUCCEEDED"


def test_errors_use_the_aws_json_1_0_shape(moto_url, sfn, start):
    _, token = start()
    sfn.send_task_success(taskToken=token, output="{}")

    def raw(target, body):
        req = botocore.awsrequest.AWSRequest(
            method="POST", url=moto_url + "/", data=json.dumps(body),
            headers={"Content-Type": "application/x-amz-json-1.0", "X-Amz-Target": f"AWSStepFunctions.{target}"})
        botocore.auth.SigV4Auth(botocore.credentials.Credentials(ADMIN_KEY, "x"), "states", REGION).add_auth(req)
        return requests.post(req.url, data=req.body, headers=dict(req.headers), timeout=5)

    r = raw("SendTaskSuccess", {"taskToken": token, "output": "{}"})
    assert r.status_code == 400 and r.json()["__type"] == "TaskTimedOut" and r.json()["message"]
    r = raw("SendTaskFailure", {"taskToken": "garbage", "error": "Rejected"})
    assert r.status_code == 400 and r.json()["__type"] == "InvalidToken"


def test_nameless_executions_get_uuid_names(sfn, sqs, machines):
    queue_url = sqs.create_queue(QueueName="nameless")["QueueUrl"]
    names = []
    for _ in range(2):
        arn = sfn.start_execution(stateMachineArn=machines["sqs"],
                                  input=json.dumps({"approvalId": "x", "queueUrl": queue_url}))["executionArn"]
        names.append(arn.rsplit(":", 1)[1])
        sfn.stop_execution(executionArn=arn)
    assert names[0] != names[1]
    assert all(uuid.UUID(n) for n in names)


# ---------------------------------------------------------------- IAM auth (SigV4 + policy)

@pytest.fixture(scope="module")
def edge_key(moto_url):
    iam = client(moto_url, "iam")
    iam.create_user(UserName="edge")
    iam.put_user_policy(UserName="edge", PolicyName="callbacks-only", PolicyDocument=json.dumps({
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Action": ["states:SendTaskSuccess", "states:SendTaskFailure"],
                       "Resource": "*"}]}))
    key = iam.create_access_key(UserName="edge")["AccessKey"]
    return key["AccessKeyId"], key["SecretAccessKey"]


def test_edge_user_can_answer_a_task(moto_url, sfn, start, edge_key):
    edge = client(moto_url, "stepfunctions", *edge_key)
    assert error_of(edge.send_task_success, taskToken="garbage", output="{}") == ("InvalidToken", 400)
    arn, token = start()
    edge.send_task_success(taskToken=token, output='{"approved": true}')
    assert finished(sfn, arn)["status"] == "SUCCEEDED"


BACKEND_ERRORS = ("InvalidToken", "TaskTimedOut", "InvalidOutput")


def assert_auth_failure(code, status):
    # moto answers auth failures with XML and HTTP 403 (boto3 sees Code "403"); AWS answers in JSON with
    # other codes, so only "a 4xx that did not come from the SFN backend" is asserted.
    assert 400 <= status < 500 and code not in BACKEND_ERRORS, (code, status)


def test_wrong_secret_is_rejected(moto_url, sfn, start, edge_key):
    arn, token = start()
    edge = client(moto_url, "stepfunctions", edge_key[0], edge_key[1] + "x")
    assert_auth_failure(*error_of(edge.send_task_success, taskToken=token, output="{}"))
    time.sleep(0.3)
    assert sfn.describe_execution(executionArn=arn)["status"] == "RUNNING"  # not resumed
    sfn.stop_execution(executionArn=arn)


@pytest.mark.parametrize("key", [("AKIAUNKNOWN000000000", "secret"), ("testing", "testing")])
def test_unknown_keys_are_rejected(moto_url, key):
    assert_auth_failure(*error_of(client(moto_url, "stepfunctions", *key).send_task_success,
                                  taskToken="garbage", output="{}"))


def test_edge_user_cannot_call_other_actions(moto_url, edge_key):
    edge = client(moto_url, "stepfunctions", *edge_key)
    assert_auth_failure(*error_of(edge.list_state_machines))
    assert_auth_failure(*error_of(edge.send_task_heartbeat, taskToken="garbage"))  # not in its policy


# ---------------------------------------------------------------- DynamoDB writes

def test_a_failed_transaction_keeps_what_others_wrote_meanwhile(moto_url, ddb):
    """A TransactWriteItems whose condition fails leaves the table as it was, except for what other requests
    wrote while it ran: writes to DynamoDB are atomic with respect to each other, as on AWS (patch 8)."""
    table = "ringi-concurrency"
    ddb.create_table(TableName=table, BillingMode="PAY_PER_REQUEST",
                     AttributeDefinitions=[{"AttributeName": "k", "AttributeType": "S"}],
                     KeySchema=[{"AttributeName": "k", "KeyType": "HASH"}])
    # A table of some size: moto copies all of it at the start of every transaction.
    for i in range(300):
        ddb.put_item(TableName=table, Item={"k": {"S": f"pad-{i}"}, "v": {"S": "x" * 200}})
    ddb.put_item(TableName=table, Item={"k": {"S": "counter"}, "n": {"N": "0"}})
    increments, stop = 60, threading.Event()

    def failing_transactions():
        db = client(moto_url, "dynamodb")
        while not stop.is_set():
            with pytest.raises(ClientError, match="TransactionCanceled"):
                db.transact_write_items(TransactItems=[{"Update": {
                    "TableName": table, "Key": {"k": {"S": "pad-0"}}, "UpdateExpression": "SET v = :v",
                    "ConditionExpression": "attribute_exists(nothing)", "ExpressionAttributeValues": {":v": {"S": "y"}}}}])

    with ThreadPoolExecutor(max_workers=2) as pool:
        busy = [pool.submit(failing_transactions) for _ in range(2)]
        db = client(moto_url, "dynamodb")
        for _ in range(increments):
            db.update_item(TableName=table, Key={"k": {"S": "counter"}}, UpdateExpression="ADD n :one",
                           ExpressionAttributeValues={":one": {"N": "1"}})
        stop.set()
        for f in busy:
            f.result()
    item = ddb.get_item(TableName=table, Key={"k": {"S": "counter"}}, ConsistentRead=True)["Item"]
    assert item["n"]["N"] == str(increments)


# ---------------------------------------------------------------- launcher guard

def test_launcher_refuses_other_moto_versions(tmp_path):
    fake = tmp_path / "moto"
    fake.mkdir()
    (fake / "__init__.py").write_text('__version__ = "5.0.0"\n')
    r = subprocess.run([sys.executable, str(LAUNCHER), "-p", "5199"], capture_output=True, text=True,
                       env={**os.environ, "PYTHONPATH": str(tmp_path)}, timeout=30)
    assert r.returncode != 0
    assert "moto==5.2.5" in r.stderr and "5.0.0" in r.stderr
