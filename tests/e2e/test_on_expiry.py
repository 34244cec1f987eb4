"""A chosen outcome when nobody decides (`onExpiry`): approvers have one deadline, shown and enforced, that ends
ON_EXPIRY_LEAD_SECONDS before the task's; after it the cron answers the paused task itself — `SendTaskFailure`
`ringi.Expired` or `SendTaskSuccess` `{"decision": "expired"}` — exactly once (two cron runs at the same time race
for the same claim), records it as decided by the system, and a failed callback is retried by the next run. Real
paused executions in moto; the deadlines are moved the way an operator would shift them in storage. The outcome, its
exactly-once and the one deadline on both backends; the page, a failed callback and D1's faults on D1."""
from __future__ import annotations

import json
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest
from playwright.sync_api import expect

from support import ARTIFACTS
from support.api import Api, _definition, d1
from support.faultproxy import FaultProxy
from support.pages import Tab, axe_check, sub

CATCHES = "catches-ringi-expired"


@pytest.fixture(scope="module")
def machine(workflows):
    """The e2e approval workflow plus a `Catch ["ringi.Expired"]` → `AutoRejected` (the documented recipe)."""
    d = json.loads(_definition(300))
    d["States"]["RequestApproval"]["Catch"].insert(
        0, {"ErrorEquals": ["ringi.Expired"], "ResultPath": "$.expired", "Next": "AutoRejected"})
    d["States"]["AutoRejected"] = {"Type": "Pass", "End": True}
    workflows.machines[CATCHES] = workflows.sfn.create_state_machine(
        name=f"ringi-e2e-expiry-{uuid.uuid4().hex[:6]}", definition=json.dumps(d),
        roleArn="arn:aws:iam::123456789012:role/ringi-e2e")["stateMachineArn"]
    return CATCHES


def entered(workflows, arn) -> list[str]:
    return [e["stateEnteredEventDetails"]["name"] for e in workflows.history(arn) if "stateEnteredEventDetails" in e]


def callbacks(workflows, arn) -> list[str]:
    return [e["type"] for e in workflows.history(arn) if e["type"] in ("TaskSucceeded", "TaskFailed")]


def into_the_lead(stack, approval_id, seconds=120, persist=None):
    """The approvers' deadline has just passed; the task's is `seconds` from now."""
    now = int(time.time() * 1000)
    d1(stack, f"UPDATE approvals SET expires_at = {now - 1000}, task_expires_at = {now + seconds * 1000} "
              f"WHERE id = '{approval_id}'", persist=persist)


def state(backend, approval_id) -> dict:
    """`row`'s columns, on either backend."""
    r = backend.stored(approval_id, "status", "confirmed", "decided_on_expiry", "task_token", "attempt_id")
    return {"status": r["status"], "confirmed": r["confirmed"], "decided_on_expiry": r["decided_on_expiry"] or 0,
            "closed": int(r["task_token"] is None), "attempt_id": r["attempt_id"]}


def row(stack, approval_id, persist=None) -> dict:
    return d1(stack, f"SELECT status, confirmed, decided_on_expiry, task_token IS NULL AS closed, attempt_id "
                     f"FROM approvals WHERE id = '{approval_id}'", persist=persist)[0]


def system_events(stack, approval_id, persist=None) -> list:
    rows = d1(stack, f"SELECT kind, actor, detail_json FROM approval_events WHERE approval_id = '{approval_id}' "
                     "AND actor = 'system' ORDER BY seq", persist=persist)
    return [(r["kind"], json.loads(r["detail_json"])) for r in rows]


def test_reject_on_expiry_fails_the_task_with_ringi_expired_exactly_once(backend, workflows, machine):
    api = backend.api
    arn, token = workflows.start_paused(machine)
    approval_id = api.register(token, onExpiry="reject", timeoutSeconds=3600).json()["id"]
    assert api.get(approval_id).json()["onExpiry"] == "reject"
    backend.run_cron()
    assert state(backend, approval_id)["status"] == "pending", "not inside the lead yet"
    assert workflows.status(arn) == "RUNNING"
    backend.into_the_lead(approval_id)
    # Two cron runs at the same moment: one claim, one callback.
    with ThreadPoolExecutor(2) as pool:
        list(pool.map(lambda _: backend.run_cron(), range(2)))
    done = workflows.wait_done(arn)
    assert done["status"] == "SUCCEEDED" and "AutoRejected" in entered(workflows, arn), entered(workflows, arn)
    assert callbacks(workflows, arn) == ["TaskFailed"]
    out = json.loads(done["output"])["expired"]
    assert out["Error"] == "ringi.Expired"
    cause = json.loads(out["Cause"])
    assert (cause["decision"], cause["onExpiry"], cause["approvalId"]) == ("expired", "reject", approval_id)
    assert state(backend, approval_id) == {"status": "rejected", "confirmed": 1, "decided_on_expiry": 1, "closed": 1,
                                           "attempt_id": None}
    assert backend.events(approval_id, "decided") == [
        {"actor": "system", "detail": {"verdict": "reject", "onExpiry": True}}]
    view = api.get(approval_id).json()
    assert (view["status"], view["verdict"], view["decidedOnExpiry"]) == ("rejected", "reject", True)
    assert view["decisions"] == [], "no person decided"
    late = api.decide(approval_id, "approve")
    assert late.status_code == 409 and late.json()["error"]["code"] == "already_decided", late.text
    backend.run_cron()
    assert callbacks(workflows, arn) == ["TaskFailed"], "a later run sends nothing"


def test_approve_on_expiry_resumes_the_workflow_with_decision_expired(backend, workflows):
    api = backend.api
    arn, token = workflows.start_paused()
    approval_id = api.register(token, onExpiry="approve", timeoutSeconds=3600).json()["id"]
    backend.into_the_lead(approval_id)
    backend.run_cron()
    done = workflows.wait_done(arn)
    assert done["status"] == "SUCCEEDED" and "Approved" in entered(workflows, arn)
    assert callbacks(workflows, arn) == ["TaskSucceeded"]
    out = json.loads(done["output"])["approval"]
    assert (out["decision"], out["onExpiry"], out["approvalId"]) == ("expired", "approve", approval_id)
    assert state(backend, approval_id)["status"] == "approved" and state(backend, approval_id)["decided_on_expiry"] == 1
    decided = api.get(approval_id).json()
    assert decided["decidedOnExpiry"] is True and decided["status"] == "approved"


def test_one_deadline_a_person_decides_before_it_and_ringi_after_it(backend, workflows):
    """`none` (the default) is Step Functions' own timeout and one deadline. With an outcome on expiry, the deadline
    approvers are shown (and the registration answers) ends the lead (600 s) before the task's; a person decides
    before it and is refused after it, when ringi's outcome is due."""
    api = backend.api
    arn_none, token = workflows.start_paused()
    r = api.register(token, timeoutSeconds=3600)
    left = r.json()["id"]
    assert abs(int(time.time()) + 3600 - iso_seconds(r.json()["expiresAt"])) < 60
    arn_decided, token = workflows.start_paused()
    r = api.register(token, onExpiry="reject", timeoutSeconds=3600)
    decided = r.json()["id"]
    shown = api.get(decided).json()["expiresAt"]
    assert shown == r.json()["expiresAt"] and abs(int(time.time()) + 3000 - iso_seconds(shown)) < 60, shown
    assert api.decide(decided, "approve").json()["status"] == "approved"
    arn_late, token = workflows.start_paused()
    late = api.register(token, onExpiry="reject", timeoutSeconds=3600).json()["id"]
    backend.into_the_lead(late)
    refused = api.decide(late, "approve")
    assert (refused.status_code, refused.json()["error"]["code"]) == (409, "expired"), refused.text
    backend.run_cron()
    assert state(backend, left)["status"] == "pending" and workflows.status(arn_none) == "RUNNING"
    assert workflows.wait_done(arn_decided)["status"] == "SUCCEEDED"
    assert callbacks(workflows, arn_decided) == ["TaskSucceeded"]
    assert state(backend, decided)["decided_on_expiry"] == 0
    assert workflows.wait_done(arn_late)["status"] == "FAILED" and callbacks(workflows, arn_late) == ["TaskFailed"]
    assert state(backend, late)["decided_on_expiry"] == 1


def iso_seconds(at: str) -> int:
    from datetime import datetime
    return int(datetime.fromisoformat(at.replace("Z", "+00:00")).timestamp())


@pytest.fixture(scope="module")
def sfn_proxy(stack):
    proxy = FaultProxy(stack.ports.moto).start()
    yield proxy
    proxy.stop()


def test_a_failed_callback_is_retried_by_the_next_run(stack, workflows, sfn_proxy):
    url = stack.extra_worker("expiryproxy", {"SFN_ENDPOINT": f"http://127.0.0.1:{sfn_proxy.port}"})
    api, persist = Api(stack, url), stack.state / "worker-expiryproxy-d1"
    arn, token = workflows.start_paused()
    approval_id = api.register(token, onExpiry="reject", timeoutSeconds=3600).json()["id"]
    into_the_lead(stack, approval_id, persist=persist)
    sfn_proxy.mode = "500"
    stack.run_cron(url)
    # Released for the next run; the 5xx tries may have got through, so their attempt stays on record.
    after_fault = row(stack, approval_id, persist)
    assert (after_fault["status"], after_fault["decided_on_expiry"]) == ("pending", 0), after_fault
    assert after_fault["attempt_id"] is not None
    assert workflows.status(arn) == "RUNNING" and sfn_proxy.forwarded[token] == 0
    sfn_proxy.mode = "ok"
    stack.run_cron(url)
    assert workflows.wait_done(arn)["status"] == "FAILED", "no Catch for ringi.Expired in this workflow"
    assert callbacks(workflows, arn) == ["TaskFailed"] and sfn_proxy.forwarded[token] == 1
    assert row(stack, approval_id, persist) == {"status": "rejected", "confirmed": 1, "decided_on_expiry": 1,
                                                "closed": 1, "attempt_id": None}
    failed = [e for e in workflows.history(arn) if e["type"] == "ExecutionFailed"]
    assert failed and failed[0]["executionFailedEventDetails"]["error"] == "ringi.Expired", failed


def test_the_page_and_the_inbox_say_it_was_decided_automatically(stack, api, workflows, browser):
    """375×812: the pending page says what happens on expiry; once the cron decided, the page and the decided
    inbox say "decided automatically on expiry"; axe-core clean."""
    arn, token = workflows.start_paused()
    approval_id = api.register(token, approvers=[{"sub": sub("alice")}], onExpiry="reject", timeoutSeconds=3600,
                               title="Rotate the signing key", summary="Rejected on expiry unless approved.").json()["id"]
    with Tab(browser, bypass_csp=True) as t:
        page = t.open_signed_in(stack, f"/a/{approval_id}")
        approval = t.approval
        expect(approval.by("on-expiry-notice")).to_contain_text("ringi rejects it automatically")
        axe_check(page, "pending approval with an outcome on expiry")
        approval.screenshot(ARTIFACTS / "spa-on-expiry-pending-mobile.png")
        into_the_lead(stack, approval_id)
        stack.run_cron()
        assert workflows.wait_done(arn)["status"] == "FAILED"
        page.reload()
        expect(approval.status).to_have_attribute("data-status", "rejected")
        expect(approval.by("auto-decided-notice")).to_contain_text("rejected this request automatically on expiry")
        assert approval.by("decision-form").count() == 0 and approval.by("decided-notice").count() == 0
        axe_check(page, "approval decided on expiry")
        approval.screenshot(ARTIFACTS / "spa-auto-decided-mobile.png")
        approval.switch_language()
        expect(approval.by("auto-decided-notice")).to_contain_text("自動的に却下しました")
        approval.switch_language()
        page.goto(f"{stack.base_url}/?tab=decided")
        item = t.inbox.item(approval_id)
        expect(item.get_by_test_id("auto-decided")).to_have_text("Decided automatically on expiry")
        expect(item.get_by_test_id("status")).to_have_text("Rejected")
        axe_check(page, "decided inbox with an automatic decision")
        t.inbox.screenshot(ARTIFACTS / "spa-auto-decided-inbox-mobile.png", full_page=False)


def test_storage_faults_in_the_outcome_on_expiry(stack, workflows, clock):
    """D1 failing inside the step (calls of a run with one due approval: 1–8 the other steps, 9 on_expiry_due,
    10 the claim, 11 and 12 the final write and its second go). A claim whose answer was lost is released and
    the next run delivers once; a callback Step Functions took but ringi could not record stays claimed, and
    the run after the lease learns that the task is closed: ringi's verdict, decided on expiry, unconfirmed."""
    url = stack.extra_worker("expiryfaults", {"D1_FAULTS": "header"})
    api, persist = Api(stack, url), stack.state / "worker-expiryfaults-d1"

    arn, token = workflows.start_paused()
    lost_claim = api.register(token, onExpiry="approve", timeoutSeconds=3600).json()["id"]
    into_the_lead(stack, lost_claim, persist=persist)
    stack.run_cron(url, d1_fault="call=10,after")
    assert row(stack, lost_claim, persist)["status"] == "pending" and workflows.status(arn) == "RUNNING"
    stack.run_cron(url)
    assert workflows.wait_done(arn)["status"] == "SUCCEEDED" and callbacks(workflows, arn) == ["TaskSucceeded"]
    assert row(stack, lost_claim, persist)["decided_on_expiry"] == 1

    arn, token = workflows.start_paused()
    unrecorded = api.register(token, onExpiry="approve", timeoutSeconds=3600).json()["id"]
    into_the_lead(stack, unrecorded, persist=persist)
    stack.run_cron(url, d1_fault="from=11")
    assert workflows.wait_done(arn)["status"] == "SUCCEEDED"
    assert row(stack, unrecorded, persist)["status"] == "claimed"
    clock.advance(stack.claim_lease_seconds + 1)  # past the claim's lease
    stack.run_cron(url)
    assert callbacks(workflows, arn) == ["TaskSucceeded"]
    after = row(stack, unrecorded, persist)
    assert (after["status"], after["confirmed"], after["decided_on_expiry"], after["closed"]) == ("approved", 0, 1, 1)
    view = api.get(unrecorded).json()
    assert (view["status"], view["verdict"], view["decidedOnExpiry"]) == ("decided_unconfirmed", "approve", True)
    assert system_events(stack, unrecorded, persist) == [
        ("decided", {"verdict": "approve", "onExpiry": True, "unconfirmed": True})]
