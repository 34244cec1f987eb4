"""Delegation, out-of-office routing and operator reassignment against workerd + moto executing real state machines:
a delegate decides a paused execution for the approver who handed the slot on, chains are bounded and never loop,
new approvals of someone out of office go to their stand-in at registration (in the registration's own write),
and operators replace approvers with a reason. The API tests on both storage backends (`backend`: D1, then
DynamoDB), the pages on D1. Mail is read from the local SES (moto); events from the operators' audit export."""
from __future__ import annotations

import json
import time
from datetime import datetime, timedelta, timezone

import pytest
import requests

from support.api import Api, round_trips

OPERATORS = "ringi-operators"


@pytest.fixture(scope="module")
def worker(stack, backend):
    """A worker of the module's backend with ADMIN_GROUP set and the latency switch on (no delay sent: its
    answers carry their round-trip counts): on D1 its own database, on DynamoDB the one table."""
    url = backend.extra_worker("delegation", {"ADMIN_GROUP": OPERATORS, "INJECT_LATENCY": "header"})
    return url, Api(stack, url)


@pytest.fixture(scope="module")
def since():
    """The export's range starts here: the events of this module's tests (the DynamoDB table holds others')."""
    return (datetime.now(timezone.utc) - timedelta(minutes=1)).strftime("%Y-%m-%dT%H:%M:%SZ")


@pytest.fixture
def make(workflows, worker):
    """A real paused execution registered with the delegation worker → (approvalId, executionArn, response)."""
    _, api = worker

    def make_(approvers, **fields):
        arn, token = workflows.start_paused(300)
        r = api.register(token, approvers=approvers, **fields)
        assert r.status_code == 201, r.text
        return r.json()["id"], arn, r
    return make_


def who(user: str) -> dict:
    """Claims of a demo-like user: sub = user name, verified email user@example.com."""
    return {"email": f"{user}@example.com"}


def call(stack, worker, method: str, path: str, user: str, body=None, **claims):
    url, _ = worker
    token = stack.mint(user, **{**who(user), **claims})
    return requests.request(method, f"{url}{path}", json=body, headers={"authorization": f"Bearer {token}"},
                            timeout=60)


def delegate(stack, worker, approval_id, user, to, note=None, **claims):
    body = {"to": to, **({"note": note} if note else {})}
    return call(stack, worker, "POST", f"/api/v1/approvals/{approval_id}/delegation", user, body, **claims)


def decide(stack, worker, approval_id, user, decision="approve", **claims):
    return call(stack, worker, "POST", f"/api/v1/approvals/{approval_id}/decision", user, {"decision": decision},
                **claims)


def view(stack, worker, approval_id, user, **claims):
    return call(stack, worker, "GET", f"/api/v1/approvals/{approval_id}", user, **claims)


def inbox(stack, worker, user, status="pending") -> dict:
    r = call(stack, worker, "GET", f"/api/v1/approvals?status={status}", user)
    assert r.status_code == 200, r.text
    return {i["id"]: i for i in r.json()["items"]}


def mails_to(stack, address: str, containing: str, timeout: float = 15) -> list[str]:
    """The mails to `address` on the local mailbox page (what the local SES accepted) whose text contains
    `containing`, once there is one (mail goes after the response)."""
    deadline = time.monotonic() + timeout
    while True:
        page = requests.get(f"{stack.mailbox_url}/", timeout=30).text
        found = [a for a in page.split("<article")[1:] if f"<dd>{address}</dd>" in a and containing in a]
        if found or time.monotonic() > deadline:
            return found
        time.sleep(0.3)


@pytest.fixture
def events(stack, worker, since):
    """events(approval_id, kind): the approval's events of one kind, oldest first, as the operators' export has
    them on either backend: `actor` in its stored form (`user:alice`, `system`), `actor_display`, `detail`."""
    url, _ = worker

    def read(approval_id: str, kind: str) -> list[dict]:
        token = stack.mint("auditor", groups=[OPERATORS])
        r = requests.get(f"{url}/api/v1/audit", params={"from": since, "limit": 1000},
                         headers={"authorization": f"Bearer {token}"}, timeout=30)
        assert r.status_code == 200, r.text
        found = [e for e in r.json()["items"] if e["approvalId"] == approval_id and e["kind"] == kind]
        key = lambda a: a["type"] if a["type"] == "system" else f"{a['type']}:{a.get('sub') or a.get('id')}"  # noqa: E731
        return [{"actor": key(e["actor"]), "actor_display": e["actor"].get("display"), "detail": e["detail"]}
                for e in found]
    return read


def later(days: float) -> str:
    return (datetime.now(timezone.utc) + timedelta(days=days)).strftime("%Y-%m-%dT%H:%M:%SZ")


# ---------------------------------------------------------------------------------------------- delegation

def test_the_delegate_decides_the_paused_execution_for_the_delegator(stack, worker, workflows, make, events):
    approval_id, arn, _ = make([{"sub": "alice"}])
    # Its own note on each backend: the mailbox holds the other run's mail too.
    note = f"On leave this week — please decide 承認 ({approval_id[-6:]})"
    r = delegate(stack, worker, approval_id, "alice", {"email": "carol@example.com"}, note)
    assert r.status_code == 200, r.text
    assert r.json() == {"slot": {"sub": "alice"}, "to": {"email": "carol@example.com"}, "by": "alice@example.com",
                        "note": note, "depth": 1, "routed": False}
    # The delegate is mailed, with the note and the short link.
    mail = mails_to(stack, "carol@example.com", note)
    assert mail, "no hand-over mail to the delegate"
    assert f"/a/{approval_id}" in mail[0] and "delegated this approval to you" in mail[0]
    # The delegator sees it, marked as delegated, and can no longer decide; the delegate can, for alice.
    mine = view(stack, worker, approval_id, "alice").json()
    assert mine["mySeat"] == {"holds": False, "onBehalfOf": None, "delegatedTo": {"email": "carol@example.com"}}
    assert [d["to"] for d in mine["delegations"]] == [{"email": "carol@example.com"}]
    assert inbox(stack, worker, "alice")[approval_id]["delegatedTo"] == {"email": "carol@example.com"}
    theirs = view(stack, worker, approval_id, "carol").json()
    assert theirs["mySeat"] == {"holds": True, "onBehalfOf": {"sub": "alice"}, "delegatedTo": None}
    assert "delegatedTo" not in inbox(stack, worker, "carol")[approval_id]
    r = decide(stack, worker, approval_id, "alice")
    assert (r.status_code, r.json()["error"]["code"]) == (409, "delegated"), r.text
    assert workflows.status(arn) == "RUNNING"
    # The delegate's decision resumes the execution, naming the delegate and on whose behalf.
    r = decide(stack, worker, approval_id, "carol")
    assert r.status_code == 200 and r.json()["status"] == "approved", r.text
    out = json.loads(workflows.wait_done(arn)["output"])["approval"]
    assert out["approvedBy"]["sub"] == "carol" and out["approvedBy"]["email"] == "carol@example.com"
    assert out["onBehalfOf"] == {"sub": "alice"}
    # In the event log, with who and the note; both inboxes list it as decided.
    [ev] = events(approval_id, "delegated")
    assert ev["actor"] == "user:alice" and ev["actor_display"] == "alice@example.com"
    assert ev["detail"]["from"] == {"sub": "alice"} and ev["detail"]["to"] == {"email": "carol@example.com"}
    assert ev["detail"]["note"] == note
    assert approval_id in inbox(stack, worker, "carol", "decided") and approval_id in inbox(stack, worker, "alice",
                                                                                              "decided")


def test_a_delegate_takes_the_slot_and_the_quorum_still_counts_listed_principals(stack, worker, workflows, make):
    approval_id, arn, _ = make([{"sub": "alice"}, {"sub": "bob"}], quorum="all")
    assert delegate(stack, worker, approval_id, "alice", {"sub": "carol"}).status_code == 200
    r = decide(stack, worker, approval_id, "carol")
    assert r.status_code == 200 and r.json()["status"] == "pending", r.text
    assert r.json()["progress"] == {"approvals": 1, "required": 2}
    # One person counts once: bob cannot take alice's slot too, nor hand his to carol, who holds one.
    r = delegate(stack, worker, approval_id, "bob", {"sub": "carol"})
    assert (r.status_code, r.json()["error"]["code"]) == (409, "delegate_is_approver"), r.text
    r = decide(stack, worker, approval_id, "bob")
    assert r.status_code == 200 and r.json()["status"] == "approved", r.text
    out = json.loads(workflows.wait_done(arn)["output"])["approval"]
    assert out["approvedBy"]["sub"] == "bob" and [a["sub"] for a in out["approvals"]] == ["carol"]


def test_chains_are_bounded_and_never_loop(stack, worker, make, events):
    approval_id, _, _ = make([{"sub": "d1"}])
    for frm, to in [("d1", "d2"), ("d2", "d3"), ("d3", "d4")]:
        r = delegate(stack, worker, approval_id, frm, {"sub": to})
        assert r.status_code == 200 and r.json()["depth"] == int(to[1:]) - 1, r.text
    r = delegate(stack, worker, approval_id, "d4", {"sub": "d5"})
    assert (r.status_code, r.json()["error"]["code"]) == (409, "delegation_too_deep"), r.text
    for back in ("d1", "d2", "d4"):
        r = delegate(stack, worker, approval_id, "d4", {"sub": back})
        assert (r.status_code, r.json()["error"]["code"]) == (409, "delegation_loop"), (back, r.text)
    r = delegate(stack, worker, approval_id, "d4", {"email": "d4@example.com"})
    assert r.json()["error"]["code"] == "delegation_loop", "one's own verified email is oneself"
    r = delegate(stack, worker, approval_id, "d2", {"sub": "x"})
    assert (r.status_code, r.json()["error"]["code"]) == (409, "delegated"), r.text
    # Not an approver: the same 404 as an unknown approval; a bad body only after that check.
    assert delegate(stack, worker, approval_id, "mallory", {"sub": "mallory2"}).status_code == 404
    assert delegate(stack, worker, "abcdefghijklmnopqrstuv", "d4", {"sub": "x"}).status_code == 404
    r = call(stack, worker, "POST", f"/api/v1/approvals/{approval_id}/delegation", "d4", {"to": {"email": "nope"}})
    assert (r.status_code, r.json()["error"]["field"]) == (400, "to.email"), r.text
    assert [e["detail"]["depth"] for e in events(approval_id, "delegated")] == [1, 2, 3]


def test_only_pending_approvals_are_delegated(stack, worker, make):
    approval_id, _, _ = make([{"sub": "alice"}])
    assert decide(stack, worker, approval_id, "alice").status_code == 200
    r = delegate(stack, worker, approval_id, "alice", {"sub": "carol"})
    assert (r.status_code, r.json()["error"]["code"]) == (409, "already_decided"), r.text


# ---------------------------------------------------------------------------------------------- out of office

def test_out_of_office_routes_new_approvals_at_registration(backend, stack, worker, workflows, make, events):
    path = "/api/v1/me/out-of-office"
    assert call(stack, worker, "GET", path, "dave").json() == {"outOfOffice": None}
    body = {"delegate": {"email": "erin@example.com"}, "until": later(3), "note": "back on Monday"}
    r = call(stack, worker, "PUT", path, "dave", body)
    assert r.status_code == 200, r.text
    set_ = r.json()["outOfOffice"]
    assert set_["active"] is True and set_["delegate"] == {"email": "erin@example.com"}
    assert call(stack, worker, "GET", path, "dave").json()["outOfOffice"] == set_
    bad = call(stack, worker, "PUT", path, "dave", {"delegate": {"sub": "dave"}, "until": later(1)})
    assert (bad.status_code, bad.json()["error"]["field"]) == (400, "delegate")

    # By sub and by verified email: both new approvals go to erin, within the registration's one D1 round trip
    # (on DynamoDB: the listed people's absences in one BatchGetItem, then the registration's one transaction).
    by_sub, arn, r = make([{"sub": "dave"}, {"sub": "frank"}], quorum="all")
    assert round_trips(r) == ({"d1": 1, "sfn": 0, "ses": 0} if backend.name == "d1"
                              else {"d1": 0, "sfn": 0, "ses": 0, "ddb": 2})
    by_email, _, _ = make([{"email": "dave@example.com"}])
    for approval_id, listed in ((by_sub, {"sub": "dave"}), (by_email, {"email": "dave@example.com"})):
        seat = view(stack, worker, approval_id, "erin").json()["mySeat"]
        assert seat == {"holds": True, "onBehalfOf": listed, "delegatedTo": None}, approval_id
        assert inbox(stack, worker, "dave")[approval_id]["delegatedTo"] == {"email": "erin@example.com"}
        [ev] = events(approval_id, "routed")
        assert ev["actor"] == "system" and ev["detail"] == {"from": listed, "to": {"email": "erin@example.com"}}
    assert mails_to(stack, "erin@example.com", "is out of office"), "the stand-in is mailed"
    r = decide(stack, worker, by_sub, "dave")
    assert (r.status_code, r.json()["error"]["code"]) == (409, "delegated")
    assert decide(stack, worker, by_sub, "erin").json()["status"] == "pending"
    assert decide(stack, worker, by_sub, "frank").json()["status"] == "approved"
    assert json.loads(workflows.wait_done(arn)["output"])["approval"]["approvals"][0]["sub"] == "erin"

    # Back in the office: new approvals stay with dave.
    assert call(stack, worker, "DELETE", path, "dave").json() == {"outOfOffice": None}
    back, _, _ = make([{"sub": "dave"}])
    assert view(stack, worker, back, "dave").json()["mySeat"]["holds"] is True
    assert view(stack, worker, back, "erin").status_code == 404
    assert events(back, "routed") == []


def test_routing_skips_a_stand_in_who_is_already_an_approver(stack, worker, make, events):
    body = {"delegate": {"sub": "grace"}, "until": later(1)}
    assert call(stack, worker, "PUT", "/api/v1/me/out-of-office", "heidi", body).status_code == 200
    approval_id, _, _ = make([{"sub": "heidi"}, {"sub": "grace"}], quorum="all")
    assert view(stack, worker, approval_id, "heidi").json()["mySeat"]["holds"] is True
    assert events(approval_id, "routed") == []
    call(stack, worker, "DELETE", "/api/v1/me/out-of-office", "heidi")


def test_routing_never_hands_a_request_to_its_requester(stack, worker, make, events):
    body = {"delegate": {"sub": "judy"}, "until": later(1)}
    assert call(stack, worker, "PUT", "/api/v1/me/out-of-office", "ken", body).status_code == 200
    approval_id, _, _ = make([{"sub": "ken"}, {"sub": "leo"}], requestedBy=[{"sub": "judy"}])
    assert view(stack, worker, approval_id, "ken").json()["mySeat"]["holds"] is True
    assert events(approval_id, "routed") == []
    # With self-approval allowed, the same stand-in is routed to.
    routed, _, _ = make([{"sub": "ken"}, {"sub": "leo"}], requestedBy=[{"sub": "judy"}], allowSelfApproval=True)
    assert view(stack, worker, routed, "ken").json()["mySeat"]["delegatedTo"] == {"sub": "judy"}
    assert len(events(routed, "routed")) == 1
    call(stack, worker, "DELETE", "/api/v1/me/out-of-office", "ken")


def test_a_hand_over_mails_only_addresses_the_operator_allows(stack, worker, make, events):
    """Delegates, stand-ins and principals an operator adds are mailed from the organisation's sender: an
    {email} outside MAIL_ALLOWED_DOMAINS (example.com here) that is not one of the approval's own approvers is
    refused, naming the field; a {sub} is never mailed and always fine."""
    outsider = "outsider@elsewhere.test"
    approval_id, _, _ = make([{"sub": "mia"}, {"email": outsider}])
    r = delegate(stack, worker, approval_id, "mia", {"email": "friend@elsewhere.test"}, "<a href=x>please</a>")
    assert (r.status_code, r.json()["error"]["field"]) == (400, "to.email"), r.text
    assert events(approval_id, "delegated") == []
    bad = {"delegate": {"email": "friend@elsewhere.test"}, "until": later(1)}
    r = call(stack, worker, "PUT", "/api/v1/me/out-of-office", "mia", bad)
    assert (r.status_code, r.json()["error"]["field"]) == (400, "delegate.email"), r.text
    assert call(stack, worker, "GET", "/api/v1/me/out-of-office", "mia").json() == {"outOfOffice": None}
    path = f"/api/v1/approvals/{approval_id}/principals"
    added = {"approvers": [{"sub": "mia"}, {"email": outsider}, {"email": "new@elsewhere.test"}], "reason": "x"}
    r = call(stack, worker, "PUT", path, "olivia", added, groups=[OPERATORS])
    assert (r.status_code, r.json()["error"]["field"]) == (400, "approvers[2].email"), r.text
    # The approval's own outside approver stays listed; a {sub} may be added and delegated to.
    kept = {"approvers": [{"sub": "mia"}, {"email": outsider}, {"sub": "nina"}], "reason": "more eyes"}
    assert call(stack, worker, "PUT", path, "olivia", kept, groups=[OPERATORS]).status_code == 200
    assert delegate(stack, worker, approval_id, "mia", {"sub": "oscar"}).status_code == 200


# ---------------------------------------------------------------------------------------------- reassignment

def test_operators_reassign_with_a_reason_and_others_get_403(stack, worker, workflows, make, events):
    approval_id, arn, _ = make([{"sub": "alice"}, {"sub": "bob"}], quorum="all")
    path = f"/api/v1/approvals/{approval_id}/principals"
    body = {"approvers": [{"sub": "bob"}, {"email": "ivan@example.com"}], "reason": "alice moved to another team"}
    for user in ("alice", "mallory"):  # an approver or not: 403, whatever the ID
        r = call(stack, worker, "PUT", path, user, body)
        assert (r.status_code, r.json()["error"]["code"]) == (403, "forbidden"), r.text
    r = call(stack, worker, "PUT", path, "olivia", {"approvers": body["approvers"]}, groups=[OPERATORS])
    assert (r.status_code, r.json()["error"]["field"]) == (400, "reason"), r.text
    unknown = call(stack, worker, "PUT", "/api/v1/approvals/abcdefghijklmnopqrstuv/principals", "olivia", body,
                   groups=[OPERATORS])
    assert unknown.status_code == 404
    r = call(stack, worker, "PUT", path, "olivia", body, groups=[OPERATORS])
    assert r.status_code == 200, r.text
    assert r.json()["approvers"] == body["approvers"] and r.json()["progress"] == {"approvals": 0, "required": 2}
    [ev] = events(approval_id, "reassigned")
    assert ev["actor"] == "user:olivia" and ev["actor_display"] == "olivia@example.com"
    assert ev["detail"]["reason"] == body["reason"]
    assert ev["detail"]["removed"] == [{"sub": "alice"}] and ev["detail"]["added"] == [{"email": "ivan@example.com"}]
    assert mails_to(stack, "ivan@example.com", body["reason"]), "the new approver is mailed, with the reason"
    assert view(stack, worker, approval_id, "alice").status_code == 404, "alice is no approver any more"
    assert approval_id not in inbox(stack, worker, "alice"), "nor in her inbox"
    assert decide(stack, worker, approval_id, "bob").json()["status"] == "pending"
    assert decide(stack, worker, approval_id, "ivan").json()["status"] == "approved"
    assert workflows.wait_done(arn)["status"] == "SUCCEEDED"
    # Decided: nothing to reassign any more.
    r = call(stack, worker, "PUT", path, "olivia", body, groups=[OPERATORS])
    assert (r.status_code, r.json()["error"]["code"]) == (409, "already_decided"), r.text


def test_a_satisfied_slot_cannot_be_removed(stack, worker, make):
    approval_id, _, _ = make([{"sub": "alice"}, {"sub": "bob"}], quorum="all")
    assert decide(stack, worker, approval_id, "alice").json()["status"] == "pending"
    body = {"approvers": [{"sub": "bob"}], "reason": "shrink"}
    r = call(stack, worker, "PUT", f"/api/v1/approvals/{approval_id}/principals", "olivia", body, groups=[OPERATORS])
    assert (r.status_code, r.json()["error"]["field"]) == (400, "approvers"), r.text


# ---------------------------------------------------------------------------------------------- round trips

# Each backend's budget: D1 checks and records the delegate's vote in SQL in one round trip; DynamoDB reads the
# item, then writes the vote under its guards (and re-reads the votes to count).
BUDGETS = {
    "d1": {"view": {"d1": 1, "sfn": 0, "ses": 0}, "inbox": {"d1": 1, "sfn": 0, "ses": 0},
           "vote": {"d1": 1, "sfn": 0, "ses": 0}, "decide": {"d1": 2, "sfn": 1, "ses": 0}},
    "dynamodb": {"view": {"d1": 0, "sfn": 0, "ses": 0, "ddb": 3}, "inbox": {"d1": 0, "sfn": 0, "ses": 0, "ddb": 3},
                 "vote": {"d1": 0, "sfn": 0, "ses": 0, "ddb": 3}, "decide": {"d1": 0, "sfn": 1, "ses": 0, "ddb": 3}},
}


def test_round_trip_budget_holds_with_delegated_slots(backend, stack, worker, make):
    budget = BUDGETS[backend.name]
    approval_id, _, _ = make([{"sub": "alice"}, {"sub": "bob"}], quorum="all")
    assert delegate(stack, worker, approval_id, "alice", {"sub": "carol"}).status_code == 200
    assert round_trips(view(stack, worker, approval_id, "carol")) == budget["view"]
    r = call(stack, worker, "GET", "/api/v1/approvals?status=pending", "alice")
    assert round_trips(r) == budget["inbox"]
    r = decide(stack, worker, approval_id, "carol")
    assert r.json()["status"] == "pending"
    assert round_trips(r) == budget["vote"], "the delegate's vote is checked and recorded"
    r = decide(stack, worker, approval_id, "bob")
    assert r.json()["status"] == "approved"
    assert round_trips(r) == budget["decide"]


# ---------------------------------------------------------------------------------------------- the SPA

def test_delegate_dialog_and_settings_page_on_a_phone(stack, api, workflows, browser):
    """alice delegates from the approval page (375×812) and sets her out-of-office on the settings page; both
    states pass axe-core. Screenshots: tests/artifacts/delegation-*.png."""
    from playwright.sync_api import expect
    from support import ARTIFACTS
    from support.pages import MOBILE, Tab, axe_check, sub

    _, token = workflows.start_paused(300)
    r = api.register(token, approvers=[{"sub": sub("alice")}], title="Rotate the payment keys")
    assert r.status_code == 201, r.text
    approval_id = r.json()["id"]
    with Tab(browser, viewport=MOBILE, bypass_csp=True) as t:
        page = t.open_signed_in(stack, f"/a/{approval_id}")
        approval = t.approval
        expect(approval.by("decision-form")).to_be_visible()
        approval.by("delegate-open").click()
        dialog = approval.by("delegate-dialog")
        expect(dialog).to_be_visible()
        # Nothing typed: said next to the field, nothing sent.
        approval.by("delegate-confirm").click()
        expect(approval.by("delegate-error")).to_have_text("Say who should decide.")
        approval.by("delegate-to").fill("bob@example.com")
        approval.by("delegate-note").fill("I am on leave, please decide by Friday.")
        axe_check(page, "delegate dialog")
        approval.screenshot(ARTIFACTS / "delegation-dialog-mobile.png", full_page=False)
        approval.by("delegate-confirm").click()
        expect(dialog).not_to_be_visible()
        expect(approval.by("delegated-notice")).to_contain_text("You delegated this approval to bob@example.com")
        expect(approval.by("delegation-item")).to_contain_text("I am on leave")
        expect(approval.by("decision-form")).to_have_count(0)
        axe_check(page, "approval, delegated")
        approval.screenshot(ARTIFACTS / "delegation-approval-delegated-mobile.png")
        assert not t.csp_problems(), t.problems

        # The inbox marks it; the settings page is linked from the header.
        page.goto(f"{stack.base_url}/")
        item = t.inbox.item(approval_id)
        expect(item.get_by_test_id("inbox-delegated")).to_have_text("Delegated to bob@example.com")
        page.get_by_test_id("settings-link").click()
        page.wait_for_url(f"{stack.base_url}/settings")
        expect(page.get_by_test_id("ooo-current")).to_have_attribute("data-active", "none")
        until = (datetime.now() + timedelta(days=5)).strftime("%Y-%m-%d")
        page.get_by_test_id("ooo-delegate").fill("carol@example.com")
        page.get_by_test_id("ooo-until").fill(until)
        page.get_by_test_id("ooo-note").fill("Back next week")
        page.get_by_test_id("ooo-save").click()
        expect(page.get_by_test_id("ooo-saved")).to_be_visible()
        expect(page.get_by_test_id("ooo-current")).to_have_attribute("data-active", "true")
        expect(page.get_by_test_id("ooo-current")).to_contain_text("carol@example.com")
        axe_check(page, "settings, out of office")
        t.inbox.screenshot(ARTIFACTS / "delegation-settings-mobile.png")
        # Japanese too.
        t.inbox.switch_language()
        expect(page.get_by_test_id("ooo-current")).to_contain_text("carol@example.com さんに送られます")
        t.inbox.switch_language()
        page.get_by_test_id("ooo-clear").click()
        expect(page.get_by_test_id("ooo-current")).to_have_attribute("data-active", "none")
        assert not t.csp_problems(), t.problems


def test_out_of_office_hint_on_an_approval_one_already_has(stack, api, workflows, browser):
    from playwright.sync_api import expect
    from support.pages import MOBILE, Tab, axe_check, sub

    _, token = workflows.start_paused(300)
    r = api.register(token, approvers=[{"sub": sub("bob")}], title="Approve the budget")
    assert r.status_code == 201, r.text
    approval_id = r.json()["id"]
    # Away from now on: the approval bob already has stays his, and its page offers to delegate it.
    body = {"delegate": {"email": "dave@example.com"}, "until": later(2)}
    r = requests.put(f"{stack.base_url}/api/v1/me/out-of-office", json=body,
                     headers={"authorization": f"Bearer {stack.mint(sub('bob'))}"}, timeout=30)
    assert r.status_code == 200, r.text
    try:
        with Tab(browser, viewport=MOBILE, bypass_csp=True) as t:
            page = t.open_signed_in(stack, f"/a/{approval_id}", user="bob")
            hint = t.approval.by("ooo-hint")
            expect(hint).to_contain_text("You are out of office until")
            # Beside the plain "Delegate…", the hint's button names whom it fills in.
            expect(hint.get_by_test_id("ooo-delegate")).to_have_text("Delegate to dave@example.com…")
            axe_check(page, "approval, out-of-office hint")
            hint.get_by_test_id("ooo-delegate").click()
            expect(t.approval.by("delegate-to")).to_have_value("dave@example.com")
            t.approval.by("delegate-confirm").click()
            expect(t.approval.by("delegated-notice")).to_contain_text("dave@example.com")
            expect(hint).to_have_count(0)
    finally:
        requests.delete(f"{stack.base_url}/api/v1/me/out-of-office",
                        headers={"authorization": f"Bearer {stack.mint(sub('bob'))}"}, timeout=30)
