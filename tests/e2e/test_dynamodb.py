"""The decision path on the DynamoDB backend (`STORAGE=dynamodb`): a worker in workerd whose approvals live in a
DynamoDB table in moto (the seed design's token table: hash key `approvalId`, the approver index on
`approverUserId`, TTL on `expiresAt`; an IAM user allowed the table's item actions only), deciding real paused
executions. Also a state machine that writes the seed's item itself (`aws-sdk:dynamodb:putItem.waitForTaskToken`,
no Lambda), decided through ringi; and the audit trail on this backend (event items in the same table, the
timeline, the operators' export through the month index, retries recorded once)."""
import csv
import http.client
import io
import json
import secrets
import threading
import urllib.parse
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import requests

from support.api import Api, decide_concurrently, round_trips, wait_execution_done
from support.audit import chained_events, events_of, export, kinds_of, operator, wait_for_kind
from support.leaks import SEEN
from ringi_stack import DDB_TABLE

TABLE = DDB_TABLE
RETENTION_DAYS = 30  # its AUDIT_RETENTION_DAYS
DAY_MS = 86_400_000
ALICE = {"email": "alice@example.com"}


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


def event_items(table, approval_id):
    """The approval's event items, straight from the timeline index."""
    return table.query(TableName=TABLE, IndexName="eventsByApproval", KeyConditionExpression="eventOf = :a",
                       ExpressionAttributeValues={":a": {"S": approval_id}})["Items"]


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
    assert round_trips(r) == {"d1": 0, "sfn": 0, "ses": 0, "ddb": 2}, \
        "the listed people's out-of-office (one BatchGetItem), then one TransactWriteItems"
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
    assert round_trips(view) == {"d1": 0, "sfn": 0, "ses": 0, "ddb": 3}, \
        "GetItem, the timeline's Query and the first view's transaction, side by side"
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
    calls = stack.log_lines("worker-dynamodb", '"sfn_callback"', approval_id)
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


def test_the_view_reads_its_three_requests_side_by_side(ddb_api, workflows):
    """With every AWS round trip delayed (the latency switch), the view takes one delay, not three: its
    requests run at once. A decision's three DynamoDB requests and its callback stay serial (four delays)."""
    approval_id, _, _ = register(ddb_api, workflows)
    delay = 600
    slow = {"x-ringi-latency": f"aws={delay}"}
    t0 = time.monotonic()
    view = ddb_api.get(approval_id, headers=slow)
    elapsed_ms = (time.monotonic() - t0) * 1000
    assert view.status_code == 200 and round_trips(view)["ddb"] == 3, view.text
    assert delay <= elapsed_ms < 2 * delay, f"view took {elapsed_ms:.0f} ms with {delay} ms per round trip"
    print(f"view with aws={delay}: {elapsed_ms:.0f} ms")
    t0 = time.monotonic()
    r = ddb_api.decide(approval_id, headers=slow)
    elapsed_ms = (time.monotonic() - t0) * 1000
    assert r.status_code == 200 and round_trips(r) == {"d1": 0, "sfn": 1, "ses": 0, "ddb": 3}, r.text
    assert elapsed_ms >= 4 * delay, f"decide took {elapsed_ms:.0f} ms"
    print(f"decide with aws={delay}: {elapsed_ms:.0f} ms")


def test_the_timeline_from_registration_to_decision(stack, ddb_url, ddb_api, workflows, table):
    approval_id, arn, _ = register(ddb_api, workflows, approvers=[ALICE])
    wait_for_kind(stack, ddb_url, approval_id, "mailed")
    # Opened twice by the approver: one `viewed`. A non-approver's GET records nothing.
    first = ddb_api.get(approval_id, email="alice@example.com")
    assert first.status_code == 200
    assert [e["kind"] for e in first.json()["events"]] == ["registered", "mailed", "viewed"], "its own view included"
    assert ddb_api.get(approval_id, email="alice@example.com").status_code == 200
    assert ddb_api.get(approval_id, "bob", email="bob@example.com").status_code == 404
    d = ddb_api.decide(approval_id, "approve", email="alice@example.com")
    assert d.status_code == 200 and d.json()["status"] == "approved", d.text
    assert workflows.wait_done(arn)["status"] == "SUCCEEDED"

    view = ddb_api.get(approval_id, email="alice@example.com")
    events = view.json()["events"]
    assert [e["kind"] for e in events] == ["registered", "mailed", "viewed", "decided"], events
    registered, mailed, viewed, decided = events
    assert registered["actor"]["type"] == "registrant" and registered["actor"]["id"].startswith("api-key:")
    assert registered["detail"] == {"approvers": 1, "quorum": "any", "notified": 1}
    assert mailed["actor"] == {"type": "system"}
    assert mailed["detail"] == {"mail": "request", "recipients": 1, "accepted": 1, "failed": 0}
    alice = {"type": "user", "sub": "alice", "display": "alice@example.com"}
    assert viewed["actor"] == alice and decided["actor"] == alice
    assert decided["detail"] == {"verdict": "approve", "status": "approved", "confirmed": True}
    assert [e["at"] for e in events] == sorted(e["at"] for e in events)
    exported = events_of(stack, ddb_url, approval_id)
    assert events == [{k: v for k, v in e.items() if k != "chain"} for e in exported], "the export has the same events"
    assert "taskToken" not in view.text and stack.api_key not in view.text

    # Items of their own in the same table, under the documented layout, kept for AUDIT_RETENTION_DAYS.
    items = event_items(table, approval_id)
    assert len(items) == 4
    for i in items:
        at = int(i["at"]["N"])
        assert i["approvalId"]["S"].startswith(f"event#{approval_id}:")
        assert i["eventMonth"]["S"] == time.strftime("%Y-%m", time.gmtime(at / 1000))
        assert i["eventSort"]["S"] == f"{at:013d}#{int(i['seq']['N']):016d}"
        assert int(i["expiresAt"]["N"]) == (at + RETENTION_DAYS * DAY_MS) // 1000 + 1
        assert "taskToken" not in i
    # The first view is once by its key; the others are once by the conditional write they go with.
    assert f"event#{approval_id}:viewed:alice" in {i["approvalId"]["S"] for i in items}


def test_votes_and_rejections_are_recorded_once(stack, ddb_url, ddb_api, workflows):
    approval_id, arn, _ = register(ddb_api, workflows, approvers=[{"sub": "alice"}, {"sub": "carol"}], quorum="all")
    for _ in range(2):
        v = ddb_api.decide(approval_id, as_user="alice")
        assert v.status_code == 200 and v.json()["status"] == "pending", v.text
    d = ddb_api.decide(approval_id, as_user="carol")
    assert d.status_code == 200 and d.json()["status"] == "approved", d.text
    assert workflows.wait_done(arn)["status"] == "SUCCEEDED"
    events = events_of(stack, ddb_url, approval_id)
    assert [(e["kind"], e["actor"].get("sub")) for e in events] == [
        ("registered", None), ("voted", "alice"), ("decided", "carol")], events
    assert events[1]["detail"] == {"verdict": "approve"}

    rejected, arn, _ = register(ddb_api, workflows)
    assert ddb_api.decide(rejected, "reject").json()["status"] == "rejected"
    assert workflows.wait_done(arn)["status"] == "SUCCEEDED"
    decided = [e for e in events_of(stack, ddb_url, rejected) if e["kind"] == "decided"]
    assert [e["detail"] for e in decided] == [{"verdict": "reject", "status": "rejected", "confirmed": True}]


def test_step_functions_down_gives_503_and_the_approval_stays_decidable(stack, ddb_url, ddb_api, workflows, table):
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
    # The failed callback is on record (its class and code, never the token), then the decision.
    events = events_of(stack, ddb_url, approval_id)
    assert [e["kind"] for e in events] == ["registered", "callback_failed", "viewed", "decided"], events
    failed = events[1]
    assert failed["actor"]["type"] == "user" and failed["actor"]["sub"] == "alice"
    assert failed["detail"]["verdict"] == "approve" and failed["detail"]["error"] == "unavailable", failed
    assert set(failed["detail"]) == {"verdict", "error", "code", "maybeDelivered"}


def test_timed_out_task_is_409_expired(ddb_api, workflows, table):
    approval_id, arn, _ = register(ddb_api, workflows, timeout=3)
    workflows.wait_done(arn, timeout=15)
    r = ddb_api.decide(approval_id)
    assert r.status_code == 409 and r.json()["error"]["code"] == "expired", r.text
    assert ddb_api.get(approval_id).json()["status"] == "expired"
    assert "taskToken" not in item(table, approval_id)
    # Step Functions said the task is closed: one `expired` by ringi itself, also when asked again.
    assert ddb_api.decide(approval_id).status_code == 409
    expired = [e for e in ddb_api.get(approval_id).json()["events"] if e["kind"] == "expired"]
    assert [(e["actor"], e["detail"]) for e in expired] == [({"type": "system"}, {"reason": "task_closed"})]


def test_the_cron_expires_what_nobody_decided(stack, ddb_url, ddb_api, workflows, table, clock):
    approval_id, _, _ = register(ddb_api, workflows, timeoutSeconds=2)
    clock.advance(3)
    assert ddb_api.get(approval_id).json()["status"] == "expired", "past its expiry before the cron, too"
    stack.run_cron(ddb_url)
    stored = item(table, approval_id)
    assert stored["status"] == {"S": "expired"} and "taskToken" not in stored
    assert ddb_api.decide(approval_id).json()["error"]["code"] == "expired"
    # One `expired` at the deadline, by ringi itself, also when the cron runs again.
    stack.run_cron(ddb_url)
    expired = [e for e in events_of(stack, ddb_url, approval_id) if e["kind"] == "expired"]
    assert [(e["actor"], e["detail"]) for e in expired] == [({"type": "system"}, {"reason": "deadline"})]
    deadline = int(stored["expiresAtMs"]["N"])
    assert expired[0]["at"] == time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(deadline // 1000)) + f".{deadline % 1000:03d}Z"


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
    # The seed's item gets its events too (none of registration: ringi did not register it).
    events = ddb_api.get(approval_id).json()["events"]
    assert [e["kind"] for e in events] == ["viewed", "decided"], events
    assert events[1]["detail"] == {"verdict": "approve", "status": "approved", "confirmed": True}
    assert ddb_api.get(approval_id, as_user="bob").status_code == 404
    assert [e["kind"] for e in events_of(stack, ddb_url, approval_id)] == ["viewed", "decided"], "bob's 404 records nothing"


def rfc3339(ms: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ms // 1000)) + f".{ms % 1000:03d}Z"


def test_operators_export_by_range_cursor_and_csv(stack, ddb_url, ddb_api, workflows, table):
    t0 = int(time.time() * 1000) - 1
    for _ in range(3):
        approval_id, _, _ = register(ddb_api, workflows)
        assert ddb_api.get(approval_id).status_code == 200
        # Sealed into its chain (after each response) before the exports below are compared.
        chained_events(stack, ddb_url, approval_id, count=2)
    t1 = int(time.time() * 1000) + 1
    window = {"from": rfc3339(t0), "to": rfc3339(t1)}
    everything = export(stack, ddb_url, limit=1000, **window).json()
    assert everything["nextCursor"] is None and len(everything["items"]) >= 6
    assert all(rfc3339(t0) <= e["at"] < rfc3339(t1) for e in everything["items"])
    # Page by page (2 a page): the same events in the same order, none twice, none skipped.
    paged, cursor, pages = [], None, 0
    while True:
        page = export(stack, ddb_url, limit=2, **window, **({"cursor": cursor} if cursor else {}))
        assert page.status_code == 200, page.text
        assert len(page.json()["items"]) <= 2
        paged += page.json()["items"]
        pages += 1
        cursor = page.json()["nextCursor"]
        if cursor is None:
            break
    assert pages >= 3 and paged == everything["items"]
    # Half-open [from, to): an event exactly at `to` belongs to the next range.
    at = next(e["at"] for e in everything["items"] if e["at"] > everything["items"][0]["at"])
    before = export(stack, ddb_url, limit=1000, **{**window, "to": at}).json()["items"]
    after = export(stack, ddb_url, limit=1000, **{**window, "from": at}).json()["items"]
    assert before + after == everything["items"] and before and after[0]["at"] == at

    # CSV: the same shape as on D1, the next cursor in a header.
    csv_headers = {**operator(stack), "accept": "text/csv"}
    r = export(stack, ddb_url, headers=csv_headers, limit=1000, **window)
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/csv")
    rows = list(csv.reader(io.StringIO(r.text, newline="")))
    assert rows[0] == ["at", "approval_id", "kind", "actor_type", "actor", "actor_display", "detail",
                       "chain_n", "prev_digest", "digest"]
    # A cell a spreadsheet would run as a formula is prefixed with ' (generated IDs may start with '-').
    cell = lambda v: f"'{v}" if v[:1] in ("=", "+", "-", "@") else v  # noqa: E731
    assert [(row[0], row[1], row[2]) for row in rows[1:]] == [(e["at"], cell(e["approvalId"]), e["kind"])
                                                              for e in everything["items"]]
    first = export(stack, ddb_url, headers=csv_headers, limit=2, **window)
    second = export(stack, ddb_url, headers=csv_headers, limit=2, cursor=first.headers["ringi-next-cursor"], **window)
    assert list(csv.reader(io.StringIO(second.text, newline="")))[1][0] == everything["items"][2]["at"]

    # Not an operator: 403; bad queries name their field, as on D1.
    r = export(stack, ddb_url, headers={"authorization": f"Bearer {stack.mint('alice')}"})
    assert r.status_code == 403 and r.json()["error"]["code"] == "forbidden", r.text
    r = export(stack, ddb_url, cursor="not-a-cursor")
    assert r.status_code == 400 and r.json()["error"]["field"] == "cursor", r.text


def test_the_export_pages_across_months(stack, ddb_url, table):
    """Events of past months, as the table keeps them (written here in the documented layout): a range over
    three months reads each month's partition in order, one event a page."""
    now = int(time.time() * 1000)
    approval_id = "past" + uuid.uuid4().hex[:18]
    ats = [now - 70 * DAY_MS, now - 40 * DAY_MS, now - 40 * DAY_MS, now - 10 * DAY_MS]
    for n, at in enumerate(ats):
        seq = 1000 + n
        table.put_item(TableName=TABLE, Item={
            "approvalId": {"S": f"event#{approval_id}:test:{n}"}, "eventOf": {"S": approval_id},
            "eventMonth": {"S": time.strftime("%Y-%m", time.gmtime(at / 1000))},
            "eventSort": {"S": f"{at:013d}#{seq:016d}"}, "at": {"N": str(at)}, "seq": {"N": str(seq)},
            "kind": {"S": "viewed"}, "actor": {"S": "system"}, "detailJson": {"S": json.dumps({"n": n})},
            "expiresAt": {"N": str(at // 1000 + 90 * 86400)}})
    # Before this module's own events: only these four are in the range.
    window = {"from": rfc3339(now - 80 * DAY_MS), "to": rfc3339(now - 5 * DAY_MS)}
    seen, cursor, pages = [], None, 0
    while pages < 10:
        page = export(stack, ddb_url, limit=1, **window, **({"cursor": cursor} if cursor else {}))
        assert page.status_code == 200, page.text
        seen += page.json()["items"]
        pages += 1
        cursor = page.json()["nextCursor"]
        if cursor is None:
            break
    assert pages == 4 and [e["approvalId"] for e in seen] == [approval_id] * 4
    assert [e["detail"]["n"] for e in seen] == [0, 1, 2, 3], seen
    assert [e["at"] for e in seen] == [rfc3339(at) for at in ats]
    narrow = export(stack, ddb_url, limit=1000, **{"from": rfc3339(now - 41 * DAY_MS), "to": rfc3339(now - 39 * DAY_MS)})
    assert [e["detail"]["n"] for e in narrow.json()["items"] if e["approvalId"] == approval_id] == [1, 2]


def test_events_outlive_the_approvals_item(stack, ddb_url, ddb_api, workflows, table):
    approval_id, _, _ = register(ddb_api, workflows)
    assert ddb_api.decide(approval_id).json()["status"] == "approved"
    # Once both are sealed into the chain (right after each response): the comparison below is of settled events.
    before = chained_events(stack, ddb_url, approval_id, count=2)
    assert [e["kind"] for e in before] == ["registered", "decided"]
    # The approval's item goes (its TTL, or an operator), its index entries and token item with it.
    for k in [i["approvalId"]["S"] for i in table.scan(TableName=TABLE)["Items"]
              if i["approvalId"]["S"] == approval_id or i["approvalId"]["S"].startswith(f"{approval_id}#")]:
        table.delete_item(TableName=TABLE, Key={"approvalId": {"S": k}})
    assert ddb_api.get(approval_id).status_code == 404
    assert events_of(stack, ddb_url, approval_id) == before
    assert len(event_items(table, approval_id)) == 2



def test_an_id_chosen_again_after_its_item_is_gone_is_decided_with_a_timeline_of_its_own(
        stack, ddb_url, ddb_api, workflows, table):
    """The events of an approval outlive its item: a registration that chooses the same ID afterwards records its
    own first view and its own decision (no event key of the first one refuses them), and shows none of the first
    one's events; the export keeps both."""
    chosen = "wf-" + secrets.token_urlsafe(16)
    first, arn, _ = register(ddb_api, workflows, approvalId=chosen)
    assert ddb_api.get(first).status_code == 200
    assert ddb_api.decide(first).json()["status"] == "approved"
    assert workflows.wait_done(arn)["status"] == "SUCCEEDED"
    for k in [i["approvalId"]["S"] for i in table.scan(TableName=TABLE)["Items"]
              if i["approvalId"]["S"] == chosen or i["approvalId"]["S"].startswith(f"{chosen}#")]:
        table.delete_item(TableName=TABLE, Key={"approvalId": {"S": k}})
    again, arn, _ = register(ddb_api, workflows, approvalId=chosen)
    assert again == chosen
    assert ddb_api.get(again).status_code == 200
    events = ddb_api.get(again).json()["events"]
    assert [e["kind"] for e in events if e["kind"] != "mailed"] == ["registered", "viewed"], events
    decided = ddb_api.decide(again)
    assert decided.status_code == 200 and decided.json()["status"] == "approved", decided.text
    assert workflows.wait_done(arn)["status"] == "SUCCEEDED"
    kinds = [e["kind"] for e in events_of(stack, ddb_url, chosen)]
    assert kinds.count("viewed") == 2 and kinds.count("decided") == 2 and kinds.count("registered") == 2, kinds


class LossyDynamoDb:
    """A proxy in front of moto's DynamoDB that loses the answer of chosen writes: the write is made, the
    worker is told 500, as when a connection drops after DynamoDB committed (the worker then retries). It
    talks to moto with http.client: its traffic is the worker's, not a test's response."""

    def __init__(self, upstream: str):
        self.upstream = urllib.parse.urlsplit(upstream)
        self.lose, self.lost, self.lock = [], [], threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers["content-length"]))
                conn = http.client.HTTPConnection(proxy.upstream.hostname, proxy.upstream.port, timeout=30)
                # The Host header the worker signed is kept (moto checks the signature).
                conn.putrequest("POST", "/", skip_host=True, skip_accept_encoding=True)
                for k, v in self.headers.items():
                    if k.lower() != "connection":
                        conn.putheader(k, v)
                conn.endheaders(body)
                answer = conn.getresponse()
                status, out = answer.status, answer.read()
                conn.close()
                text = body.decode()
                with proxy.lock:
                    marker = next((m for m in proxy.lose if m in text), None)
                    if marker:
                        proxy.lose.remove(marker)
                        proxy.lost.append((marker, status))
                if marker:
                    status, out = 500, b'{"__type":"InternalServerError"}'
                self.send_response(status)
                self.send_header("content-type", "application/x-amz-json-1.0")
                self.send_header("content-length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"


def test_a_retried_write_records_its_event_once(stack, ddb_url, workflows, table):
    """The answers of a registration, a mail record, a first view and a decision are lost once each (each
    write was made): the worker retries each, and each event is on record once — and sealed into the approval's
    hash chain right after the response, even the last one, whose retry found it made (no cron run here)."""
    proxy = LossyDynamoDb(stack.moto_url)
    try:
        lossy = Api(stack, stack.extra_worker("dynamodb-lossy", {**stack.dynamodb_vars(TABLE),
                                                                  "DYNAMODB_ENDPOINT": proxy.url}))
        # The registration's retry finds its own approval: answered as a redelivery, recorded once.
        proxy.lose = ['{"S":"registered"}']
        _, token = workflows.start_paused()
        r = lossy.register(token)
        assert r.status_code == 200, r.text
        assert proxy.lost == [('{"S":"registered"}', 200)], "the lost answer was of a write that was made"
        assert [e["kind"] for e in chained_events(stack, ddb_url, r.json()["id"], count=1)] == ["registered"]

        markers = ['{"S":"mailed"}', '{"S":"viewed"}', '{"S":"decided"}']
        proxy.lose, proxy.lost = list(markers), []
        arn, token = workflows.start_paused()
        r = lossy.register(token, approvers=[ALICE])
        assert r.status_code == 201, r.text
        approval_id = r.json()["id"]
        wait_for_kind(stack, ddb_url, approval_id, "mailed")
        assert lossy.get(approval_id, email="alice@example.com").status_code == 200
        d = lossy.decide(approval_id, email="alice@example.com")
        assert d.status_code == 200 and d.json()["status"] == "approved", d.text
        assert workflows.wait_done(arn)["status"] == "SUCCEEDED"
        assert proxy.lost == [(m, 200) for m in markers], proxy.lost
        events = chained_events(stack, ddb_url, approval_id, count=4)
        assert [e["kind"] for e in events] == ["registered", "mailed", "viewed", "decided"]
        assert sorted(e["chain"]["n"] for e in events) == [1, 2, 3, 4], events
        assert len(event_items(table, approval_id)) == 4
        assert int(item(table, approval_id)["mailAttempts"]["N"]) == 2, "the mail record's update ran twice"
    finally:
        proxy.server.shutdown()


def test_the_outcome_on_expiry_answers_the_task_once(stack, ddb_url, ddb_api, workflows, table):
    """`onExpiry`: after the approvers' deadline the cron answers the paused task itself, exactly once (two runs at
    the same moment race for ringi's claim), and records it as decided by the system."""
    arn, token = workflows.start_paused()
    r = ddb_api.register(token, onExpiry="approve", timeoutSeconds=3600)
    assert r.status_code == 201, r.text
    approval_id = r.json()["id"]
    stored = item(table, approval_id)
    assert int(stored["taskExpiresAtMs"]["N"]) > int(stored["expiresAtMs"]["N"]), "the approvers' deadline comes first"
    assert int(stored["expiresAt"]["N"]) * 1000 >= int(stored["taskExpiresAtMs"]["N"]), "kept until the task's"
    stack.run_cron(ddb_url)
    assert item(table, approval_id)["status"] == {"S": "pending"} and workflows.status(arn) == "RUNNING"
    # Into the lead, as an operator would shift the deadlines: the approvers' just passed, the task's is 2 min away.
    now = int(time.time() * 1000)
    table.update_item(TableName=TABLE, Key={"approvalId": {"S": approval_id}},
                      UpdateExpression="SET expiresAtMs = :mine, taskExpiresAtMs = :task",
                      ExpressionAttributeValues={":mine": {"N": str(now - 1000)}, ":task": {"N": str(now + 120_000)}})
    assert ddb_api.decide(approval_id).json()["error"]["code"] == "expired", "no person decides after their deadline"
    with ThreadPoolExecutor(2) as pool:
        list(pool.map(lambda _: stack.run_cron(ddb_url), range(2)))
    done = workflows.wait_done(arn)
    assert done["status"] == "SUCCEEDED"
    assert [e["type"] for e in workflows.history(arn)].count("TaskSucceeded") == 1
    out = json.loads(done["output"])["approval"]
    assert (out["decision"], out["onExpiry"], out["approvalId"]) == ("expired", "approve", approval_id)
    stored = item(table, approval_id)
    assert stored["status"] == {"S": "approved"} and stored["decidedOnExpiry"] == {"BOOL": True}
    assert "taskToken" not in stored
    shown = ddb_api.get(approval_id).json()
    assert shown["decidedOnExpiry"] is True and shown["status"] == "approved"
    decided = [e for e in events_of(stack, ddb_url, approval_id) if e["kind"] == "decided"]
    assert [(e["actor"], e["detail"]) for e in decided] == [({"type": "system"}, {"verdict": "approve", "onExpiry": True})]
