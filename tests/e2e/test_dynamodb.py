"""The decision path on the DynamoDB backend (`STORAGE=dynamodb`): a worker in workerd whose approvals live in a
DynamoDB table in moto (the seed design's token table: hash key `approvalId`, the approver index on
`approverUserId`, TTL on `expiresAt`; an IAM user allowed the table's item actions only), deciding real paused
executions. Also a state machine that writes the seed's item itself (`aws-sdk:dynamodb:putItem.waitForTaskToken`,
no Lambda), decided through ringi."""
import json
import time
import uuid

import pytest
import requests

from support.api import Api, decide_concurrently, round_trips, wait_execution_done
from support.leaks import SEEN
from ringi_stack import DDB_TABLE

TABLE = DDB_TABLE


@pytest.fixture(scope="module")
def ddb_url(dynamodb_url):
    return dynamodb_url  # the session's DynamoDB worker (conftest.py), on TABLE


@pytest.fixture(scope="module")
def ddb_api(stack, ddb_url):
    return Api(stack, ddb_url)


@pytest.fixture(scope="module")
def table(stack):
    return stack.aws("dynamodb")


def item(table, approval_id: str) -> dict:
    return table.get_item(TableName=TABLE, Key={"approvalId": {"S": approval_id}}, ConsistentRead=True).get("Item", {})


def inbox(stack, url: str, user: str, status: str, **claims) -> list:
    r = requests.get(f"{url}/api/v1/approvals", params={"status": status},
                     headers={"authorization": f"Bearer {stack.mint(user, **claims)}"}, timeout=30)
    assert r.status_code == 200, r.text
    return [i["id"] for i in r.json()["items"]]


def register(ddb_api, workflows, timeout=300, **fields):
    arn, token = workflows.start_paused(timeout)
    r = ddb_api.register(token, **fields)
    assert r.status_code == 201, r.text
    return r.json()["id"], arn, token


def test_register_view_inbox_approve_resumes_the_execution(stack, ddb_url, ddb_api, workflows, table):
    form = [{"name": "risk", "label": "Risk", "type": "choice", "options": ["low", "high"], "required": True}]
    arn, token = workflows.start_paused()
    r = ddb_api.register(token, form=form)
    assert r.status_code == 201, r.text
    assert round_trips(r) == {"d1": 0, "sfn": 0, "ses": 0, "ddb": 1}, "one TransactWriteItems"
    approval_id = r.json()["id"]
    stored = item(table, approval_id)
    assert stored["status"] == {"S": "pending"} and stored["taskToken"] == {"S": token}
    assert int(stored["expiresAt"]["N"]) * 1000 >= int(stored["expiresAtMs"]["N"]), "TTL in epoch seconds"
    # The same registration again (EventBridge redelivers): the first answer; another ID for the task: 409.
    again = ddb_api.register(token, form=form)
    assert (again.status_code, again.json()["id"]) == (200, approval_id)
    other = ddb_api.register(token, approvalId="AnotherId-0123456789abcdef")
    assert other.status_code == 409 and other.json()["error"]["code"] == "duplicate_approval"

    view = ddb_api.get(approval_id)
    assert view.status_code == 200 and view.json()["status"] == "pending"
    assert round_trips(view) == {"d1": 0, "sfn": 0, "ses": 0, "ddb": 1}
    assert "taskToken" not in view.text and token not in view.text
    assert approval_id in inbox(stack, ddb_url, "alice", "pending")

    r = ddb_api.decide(approval_id, body={"decision": "approve", "comment": "ship it", "feedback": {"risk": "low"}})
    assert r.status_code == 200 and r.json()["status"] == "approved", r.text
    assert round_trips(r) == {"d1": 0, "sfn": 1, "ses": 0, "ddb": 3}, "load, claim, final write + one callback"
    done = workflows.wait_done(arn)
    assert done["status"] == "SUCCEEDED"
    decision = json.loads(done["output"])["approval"]
    assert (decision["decision"], decision["approvedBy"]["sub"], decision["feedback"]) == ("approved", "alice", {"risk": "low"})
    assert [e["type"] for e in workflows.history(arn)].count("TaskSucceeded") == 1
    stored = item(table, approval_id)
    assert stored["status"] == {"S": "approved"} and "taskToken" not in stored and "claimId" not in stored
    assert stored["votes"]["M"]["alice"]["M"]["comment"] == {"S": "ship it"}
    assert ddb_api.get(approval_id).json()["myDecision"]["decision"] == "approve"
    assert approval_id not in inbox(stack, ddb_url, "alice", "pending")
    assert approval_id in inbox(stack, ddb_url, "alice", "decided")
    second = ddb_api.decide(approval_id, body={"decision": "reject", "feedback": {"risk": "high"}})
    assert second.status_code == 409 and second.json()["error"]["code"] in ("already_decided", "already_voted")


def test_reject_takes_the_rejected_catch(ddb_api, workflows):
    approval_id, arn, _ = register(ddb_api, workflows)
    r = ddb_api.decide(approval_id, body={"decision": "reject", "comment": "not now"})
    assert r.status_code == 200 and r.json()["status"] == "rejected", r.text
    out = json.loads(workflows.wait_done(arn)["output"])
    assert out["rejection"]["Error"] == "Rejected"
    assert json.loads(out["rejection"]["Cause"])["comment"] == "not now"


def test_quorum_all_decides_on_the_last_vote(stack, ddb_url, ddb_api, workflows):
    approval_id, arn, _ = register(ddb_api, workflows, approvers=[{"sub": "alice"}, {"group": "finance"}], quorum="all")
    r = ddb_api.decide(approval_id, as_user="alice")
    assert r.status_code == 200 and r.json()["status"] == "pending", r.text
    assert r.json()["progress"] == {"approvals": 1, "required": 2}
    assert r.headers["x-ringi-round-trips"].endswith("sfn=0;ses=0;ddb=3"), "load, vote, votes: no callback"
    assert workflows.status(arn) == "RUNNING"
    # The group's member finds it in their inbox through the approver index.
    assert approval_id in inbox(stack, ddb_url, "dave", "pending", **{"cognito:groups": ["finance"]})
    again = ddb_api.decide(approval_id, as_user="alice")
    assert again.status_code == 200 and again.json()["status"] == "pending", "the same vote again counts once"
    r = ddb_api.decide(approval_id, as_user="dave", **{"cognito:groups": ["finance"]})
    assert r.status_code == 200 and r.json()["status"] == "approved", r.text
    done = workflows.wait_done(arn)
    assert done["status"] == "SUCCEEDED"
    assert [a["sub"] for a in json.loads(done["output"])["approval"]["approvals"]] == ["alice"]


def test_twenty_concurrent_approvals_make_exactly_one_callback(stack, ddb_url, ddb_api, workflows):
    approval_id, arn, _ = register(ddb_api, workflows)
    results = decide_concurrently(stack, ddb_url, approval_id)
    codes = sorted(r.status_code for r in results)
    assert codes == [200] + [409] * 19, [(r.status_code, r.text) for r in results]
    assert {r.json()["error"]["code"] for r in results if r.status_code == 409} <= {"in_progress", "already_decided", "already_voted"}
    assert workflows.wait_done(arn)["status"] == "SUCCEEDED"
    assert [e["type"] for e in workflows.history(arn)].count("TaskSucceeded") == 1
    calls = [line for line in (stack.state / "worker-dynamodb.log").read_text().splitlines()
             if '"sfn_callback"' in line and approval_id in line]
    assert len(calls) == 1, calls


def test_non_approver_and_unknown_id_get_the_same_404_and_take_no_claim(ddb_api, workflows, table):
    approval_id, _, _ = register(ddb_api, workflows)
    unknown = "ZZZZZZZZZZZZZZZZZZZZZZ"
    responses = [ddb_api.get(approval_id, as_user="mallory"), ddb_api.get(unknown),
                 ddb_api.decide(approval_id, as_user="mallory"), ddb_api.decide(unknown)]
    assert {r.status_code for r in responses} == {404}
    assert len({r.text for r in responses}) == 1
    stored = item(table, approval_id)
    assert stored["status"] == {"S": "pending"} and "claimId" not in stored and "attempt" not in stored
    assert ddb_api.decide(approval_id).status_code == 200


def test_step_functions_down_gives_503_and_the_approval_stays_decidable(stack, ddb_api, workflows, table):
    """A second DynamoDB worker on the same table whose Step Functions endpoint is dead: 503, the claim given
    back; the healthy worker then decides the same approval."""
    dead = Api(stack, stack.extra_worker("dynamodb-nosfn", {**stack.dynamodb_vars(TABLE), "SFN_ENDPOINT": "http://127.0.0.1:9"}))
    approval_id, arn, _ = register(ddb_api, workflows)
    r = dead.decide(approval_id)
    assert r.status_code == 503 and r.json()["error"]["code"] == "sfn_unavailable", r.text
    stored = item(table, approval_id)
    assert stored["status"] == {"S": "pending"} and "claimId" not in stored
    assert dead.get(approval_id).json()["status"] == "pending"
    assert workflows.status(arn) == "RUNNING"
    r = ddb_api.decide(approval_id)
    assert r.status_code == 200 and r.json()["status"] == "approved", r.text
    assert workflows.wait_done(arn)["status"] == "SUCCEEDED"


def test_timed_out_task_is_409_expired(ddb_api, workflows, table):
    approval_id, arn, _ = register(ddb_api, workflows, timeout=3)
    workflows.wait_done(arn, timeout=15)
    r = ddb_api.decide(approval_id)
    assert r.status_code == 409 and r.json()["error"]["code"] == "expired", r.text
    assert ddb_api.get(approval_id).json()["status"] == "expired"
    assert "taskToken" not in item(table, approval_id)


def test_the_cron_expires_what_nobody_decided(stack, ddb_url, ddb_api, workflows, table):
    approval_id, _, _ = register(ddb_api, workflows, timeoutSeconds=2)
    time.sleep(2.5)
    assert ddb_api.get(approval_id).json()["status"] == "expired", "past its expiry before the cron, too"
    stack.run_cron(ddb_url)
    stored = item(table, approval_id)
    assert stored["status"] == {"S": "expired"} and "taskToken" not in stored
    assert ddb_api.decide(approval_id).json()["error"]["code"] == "expired"


def test_governance_features_answer_501_not_supported(stack, ddb_url, ddb_api, workflows):
    approval_id, _, _ = register(ddb_api, workflows)
    auth = {"authorization": f"Bearer {stack.mint('alice')}"}
    r = requests.post(f"{ddb_url}/api/v1/approvals/{approval_id}/delegation", json={"to": {"sub": "bob"}}, headers=auth,
                      timeout=30)
    assert r.status_code == 501 and r.json()["error"]["code"] == "not_supported_by_backend", r.text
    assert "delegation" in r.json()["error"]["message"]
    _, token = workflows.start_paused()
    r = ddb_api.register(token, reminders=["PT1M"])
    assert r.status_code == 501 and r.json()["error"]["code"] == "not_supported_by_backend", r.text
    r = ddb_api.register(token, onExpiry="reject")
    assert r.status_code == 501, r.text
    r = ddb_api.register(token, notify=[{"channel": "deploys"}])
    assert r.status_code == 501 and "chat" in r.json()["error"]["message"], r.text
    assert ddb_api.register(token).status_code == 201, "nothing was written by the refused registrations"


def _seed_definition(table: str) -> str:
    """The seed design without its Lambda: the state machine writes `{approvalId, approverUserId, taskToken,
    expiresAt}` itself and waits for the callback."""
    return json.dumps({
        "StartAt": "RequestApproval",
        "States": {
            "RequestApproval": {
                "Type": "Task",
                "Resource": "arn:aws:states:::aws-sdk:dynamodb:putItem.waitForTaskToken",
                "Parameters": {
                    "TableName": table,
                    "Item": {"approvalId": {"S.$": "$.approvalId"}, "approverUserId": {"S.$": "$.approverUserId"},
                             "taskToken": {"S.$": "$$.Task.Token"}, "expiresAt": {"N.$": "$.expiresAt"}},
                },
                "TimeoutSeconds": 300,
                "ResultPath": "$.approval",
                "Catch": [{"ErrorEquals": ["Rejected"], "ResultPath": "$.rejection", "Next": "Rejected"}],
                "Next": "Approved",
            },
            "Approved": {"Type": "Pass", "End": True},
            "Rejected": {"Type": "Pass", "End": True},
        },
    })


def test_a_state_machine_writes_the_seed_item_itself_and_ringi_decides_it(stack, ddb_url, ddb_api, workflows, table):
    """moto's Step Functions executes `aws-sdk:dynamodb:putItem.waitForTaskToken`: the item in the seed's shape,
    written by the workflow, is readable as is, in the approver's inbox, and decided through ringi."""
    sfn = stack.aws("stepfunctions")
    machine = sfn.create_state_machine(name=f"ringi-seed-{uuid.uuid4().hex[:6]}", definition=_seed_definition(TABLE),
                                       roleArn="arn:aws:iam::123456789012:role/ringi-e2e")["stateMachineArn"]
    approval_id = "seed" + uuid.uuid4().hex[:20]
    expires_at = int(time.time()) + 8 * 24 * 3600
    arn = sfn.start_execution(stateMachineArn=machine, input=json.dumps(
        {"approvalId": approval_id, "approverUserId": "alice", "expiresAt": str(expires_at)}))["executionArn"]
    deadline = time.monotonic() + 20
    while not item(table, approval_id) and time.monotonic() < deadline:
        time.sleep(0.2)
    stored = item(table, approval_id)
    assert set(stored) == {"approvalId", "approverUserId", "taskToken", "expiresAt"}, "the seed's item, nothing else"
    SEEN.task_tokens.add(stored["taskToken"]["S"])

    view = ddb_api.get(approval_id)
    assert view.status_code == 200, view.text
    shown = view.json()
    assert (shown["status"], shown["quorum"], shown["title"]) == ("pending", "any", f"Approval {approval_id}")
    assert shown["approvers"] == [{"sub": "alice"}]
    assert ddb_api.get(approval_id, as_user="bob").status_code == 404
    assert approval_id in inbox(stack, ddb_url, "alice", "pending")

    r = ddb_api.decide(approval_id, body={"decision": "approve", "comment": "seeded"})
    assert r.status_code == 200 and r.json()["status"] == "approved", r.text
    done = wait_execution_done(sfn, arn)
    assert done["status"] == "SUCCEEDED"
    assert json.loads(done["output"])["approval"]["comment"] == "seeded"
    stored = item(table, approval_id)
    assert stored["status"] == {"S": "approved"} and "taskToken" not in stored
