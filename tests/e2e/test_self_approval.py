"""Separation of duty: an approval registered with `requestedBy` (people, by `sub` or email) shows itself to a
requester who is also an approver, read-only and with the reason, but never lets them decide (403
`self_approval`, refused in the SQL of the decision's first round trip too), hand it on, or have it routed; they
do not count toward the quorum; a caller whose email is not verified counts as any requester named by email
(fails closed), and a configuration whose tokens never carry a verified email refuses such requesters at
registration; operators neither assign an approval to themselves nor to a requester. Real paused executions in
moto; the API tests on both storage backends (`backend`: D1, then DynamoDB), the page on D1."""
from __future__ import annotations

import json
import secrets
from datetime import datetime, timedelta, timezone

import pytest
from playwright.sync_api import expect

from support import ARTIFACTS
from support.api import Api, id_token_claims
from support.backends import api  # noqa: F401  (fixture: the module's backend's)

OPERATORS = "sod-operators"
from support.pages import DESKTOP, Tab, axe_check, sub


def field(r) -> str:
    assert r.status_code == 400, r.text
    return r.json()["error"]["field"]


def inbox(backend, user, **claims):
    return {i["id"]: i for i in backend.inbox(user, **claims)["items"]}


@pytest.fixture(scope="module")
def verified(backend, stack):
    """The module's backend on a worker that takes Cognito ID tokens (TOKEN_USE=id): its callers' emails are
    verified, so requesters may be named by email there. Operators: OPERATORS."""
    url = backend.extra_worker("sod-idtokens", {"TOKEN_USE": "id", "ADMIN_GROUP": OPERATORS})
    return Api(stack, url, claims=id_token_claims(stack))


@pytest.fixture(scope="module")
def ops(backend):
    """The module's backend on a worker with operators (ADMIN_GROUP) and the default access tokens."""
    return Api(backend.stack, backend.extra_worker("sod-ops", {"ADMIN_GROUP": OPERATORS}))


def test_registration_refuses_a_quorum_the_requesters_would_block(api):
    tok = lambda: "tok-" + secrets.token_hex(6)  # noqa: E731
    # The only approver asked for it.
    assert field(api.register(tok(), approvers=[{"sub": "alice"}], requestedBy=[{"sub": "alice"}])) == "requestedBy"
    # "all": every listed approver must be satisfiable by someone else; an email approver equal to a requester's is not.
    r = api.register(tok(), approvers=[{"email": "pat@example.com"}, {"group": "finance"}], quorum="all",
                     requestedBy=[{"email": "PAT@example.com"}])
    assert field(r) == "requestedBy" and "approvers[0]" in r.json()["error"]["message"], r.text
    # "n": n eligible approvers (or a group among them).
    assert field(api.register(tok(), approvers=[{"sub": "alice"}, {"sub": "bob"}], quorum=2,
                              requestedBy=[{"sub": "alice"}])) == "requestedBy"
    assert api.register(tok(), approvers=[{"sub": "alice"}, {"group": "finance"}], quorum=2,
                        requestedBy=[{"sub": "alice"}]).status_code == 201
    # A group still has other members: eligible under "all".
    assert api.register(tok(), approvers=[{"group": "finance"}, {"sub": "bob"}], quorum="all",
                        requestedBy=[{"sub": "alice"}]).status_code == 201
    # Cognito access tokens (TOKEN_USE=access) carry no verified email: a requester named by email could never be
    # told apart from an approver, so the registration is refused rather than every approver later.
    assert field(api.register(tok(), approvers=[{"group": "finance"}],
                              requestedBy=[{"sub": "x"}, {"email": "alice@example.com"}])) == "requestedBy[1].email"
    assert api.register(tok(), approvers=[{"group": "finance"}], requestedBy=[{"email": "alice@example.com"}],
                        allowSelfApproval=True).status_code == 201
    # A requester is a person; the flags are typed.
    assert field(api.register(tok(), requestedBy=[{"group": "finance"}])) == "requestedBy[0]"
    assert field(api.register(tok(), requestedBy=[{"email": "nope"}])) == "requestedBy[0].email"
    assert field(api.register(tok(), allowSelfApproval="yes")) == "allowSelfApproval"
    assert field(api.register(tok(), onExpiry="escalate")) == "onExpiry"
    # allowSelfApproval lifts the rule.
    assert api.register(tok(), approvers=[{"sub": "alice"}], requestedBy=[{"sub": "alice"}],
                        allowSelfApproval=True).status_code == 201


def test_a_requester_sees_it_read_only_and_another_approver_decides(backend, verified, workflows):
    api = verified
    arn, token = workflows.start_paused()
    group = "fin-" + secrets.token_hex(3)
    who = f"req-{secrets.token_hex(3)}@example.com"
    r = api.register(token, approvers=[{"group": group}], requestedBy=[{"email": who.upper()}])
    assert r.status_code == 201, r.text
    approval_id = r.json()["id"]
    requester = {"as_user": "req-sub", "email": who, "groups": [group]}
    view = api.get(approval_id, **requester)
    assert view.status_code == 200, view.text
    assert view.json()["cannotDecide"] == "self_approval" and view.json()["requestedBy"] == [{"email": who}]
    assert view.json()["canDecide"] is False  # what the app goes by
    # Listed through the group, still: their inbox shows it, marked.
    listed = api.call("GET", "/api/v1/approvals?status=pending", "req-sub", email=who, groups=[group]).json()
    assert {i["id"]: i for i in listed["items"]}[approval_id]["cannotDecide"] == "self_approval"
    for verdict in ("approve", "reject"):
        refused = api.decide(approval_id, verdict, **requester)
        assert refused.status_code == 403 and refused.json()["error"]["code"] == "self_approval", refused.text
    # Nothing taken, nothing recorded; the workflow still waits.
    assert backend.stored(approval_id, "status", "claim_id", "attempt_id", "votes", worker="sod-idtokens") == {
        "status": "pending", "claim_id": None, "attempt_id": None, "votes": 0}
    assert workflows.status(arn) == "RUNNING"
    # Without a verified email, a group member may be the requester: nobody can tell, so they are refused too.
    unverified = {"as_user": "colleague", "groups": [group]}
    assert api.get(approval_id, **unverified).json()["cannotDecide"] == "self_approval"
    for refused in (api.decide(approval_id, "approve", **unverified),
                    api.decide(approval_id, "approve", **unverified, email=who, email_verified=False)):
        assert refused.status_code == 403 and refused.json()["error"]["code"] == "self_approval", refused.text
    assert backend.stored(approval_id, "status", "votes", worker="sod-idtokens") == {"status": "pending", "votes": 0}
    # A colleague with a verified email of their own decides.
    verified_colleague = {**unverified, "email": "colleague@example.com"}
    seen = api.get(approval_id, **verified_colleague).json()
    assert seen["cannotDecide"] is None and seen["canDecide"] is True
    done = api.decide(approval_id, "approve", **verified_colleague)
    assert done.status_code == 200 and done.json()["status"] == "approved", done.text
    assert api.get(approval_id, **verified_colleague).json()["canDecide"] is False  # decided
    out = json.loads(workflows.wait_done(arn)["output"])["approval"]
    assert out["decision"] == "approved" and out["approvedBy"]["sub"] == "colleague"


def test_requesters_do_not_count_toward_the_quorum(api, workflows):
    """`all` over a group and a person: the requester in the group cannot fill the group's slot (a colleague
    can), and a requester named by `sub` is refused whatever principal they would vote through."""
    arn, token = workflows.start_paused()
    eng = "eng-" + secrets.token_hex(3)
    approval_id = api.register(token, approvers=[{"group": eng}, {"sub": "bob"}], quorum="all",
                               requestedBy=[{"sub": "eve"}]).json()["id"]
    r = api.decide(approval_id, "approve", as_user="eve", groups=[eng])
    assert r.status_code == 403 and r.json()["error"]["code"] == "self_approval", r.text
    first = api.decide(approval_id, "approve", as_user="eng-2", groups=[eng])
    assert first.json()["status"] == "pending" and first.json()["progress"] == {"approvals": 1, "required": 2}
    last = api.decide(approval_id, "approve", as_user="bob")
    assert last.status_code == 200 and last.json()["status"] == "approved", last.text
    out = json.loads(workflows.wait_done(arn)["output"])["approval"]
    assert out["approvedBy"]["sub"] == "bob" and [a["sub"] for a in out["approvals"]] == ["eng-2"]


def test_an_email_approver_who_asked_is_refused_and_allow_self_approval_lets_them(verified, workflows):
    api = verified
    arn, token = workflows.start_paused()
    approval_id = api.register(token, approvers=[{"email": "pat@example.com"}, {"sub": "bob"}],
                               requestedBy=[{"email": "pat@example.com"}]).json()["id"]
    r = api.decide(approval_id, "reject", as_user="pat-sub", email="pat@example.com")
    assert r.status_code == 403 and r.json()["error"]["code"] == "self_approval", r.text
    assert api.decide(approval_id, "reject", as_user="bob", email="bob@example.com").json()["status"] == "rejected"
    assert json.loads(workflows.wait_done(arn)["output"])["rejection"]["Error"] == "Rejected"

    arn, token = workflows.start_paused()
    allowed = api.register(token, approvers=[{"email": "pat@example.com"}], requestedBy=[{"email": "pat@example.com"}],
                           allowSelfApproval=True).json()["id"]
    assert api.get(allowed, as_user="pat-sub", email="pat@example.com").json()["cannotDecide"] is None
    assert api.decide(allowed, as_user="pat-sub", email="pat@example.com").json()["status"] == "approved"
    assert workflows.wait_done(arn)["status"] == "SUCCEEDED"


def test_the_mail_names_the_requester(stack, verified):
    """Without a `context.requestedBy`, the mail's "Requested by" names the registered requesters."""
    who = f"sod-{secrets.token_hex(4)}@example.com"
    verified.register("tok-" + secrets.token_hex(6), approvers=[{"email": who}, {"group": "finance"}],
                 requestedBy=[{"email": "alice@example.com"}])
    # The mail goes out after the registration's response.
    mails = [m for m in stack.wait_mail(lambda ms: any(who in m["destinations"]["ToAddresses"] for m in ms))
             if who in m["destinations"]["ToAddresses"]]
    assert mails, "no request mail"
    assert "<p>Requested by: alice@example.com</p>" in mails[0]["body"], mails[0]["body"][:600]


def later(days: float) -> str:
    return (datetime.now(timezone.utc) + timedelta(days=days)).strftime("%Y-%m-%dT%H:%M:%SZ")


def delegate(api, approval_id, user, to, **claims):
    return api.call("POST", f"/api/v1/approvals/{approval_id}/delegation", user, {"to": to}, **claims)


def test_a_requester_cannot_hand_their_request_to_someone_of_their_choosing(backend, api, workflows):
    """A requester who is a member of an approver group neither delegates the group's seat (403 self_approval) nor
    gets it decided by a friend; a group seat is not one member's to give away (403 group_seat); nothing moves."""
    arn, token = workflows.start_paused()
    eng, fin = "eng-" + secrets.token_hex(3), "fin-" + secrets.token_hex(3)
    approval_id = api.register(token, approvers=[{"group": eng}, {"group": fin}], quorum="all",
                               requestedBy=[{"sub": "rita"}]).json()["id"]
    r = delegate(api, approval_id, "rita", {"sub": "pal"}, groups=[eng])
    assert (r.status_code, r.json()["error"]["code"]) == (403, "self_approval"), r.text
    r = delegate(api, approval_id, "eve", {"sub": "pal"}, groups=[eng])
    assert (r.status_code, r.json()["error"]["code"]) == (403, "group_seat"), r.text
    assert api.get(approval_id, as_user="pal").status_code == 404, "pal got no seat"
    refused = api.decide(approval_id, "approve", as_user="pal")
    assert refused.status_code == 404, refused.text
    # The group's members still decide it: eng, then fin.
    assert api.decide(approval_id, as_user="eve", groups=[eng]).json()["status"] == "pending"
    assert api.decide(approval_id, as_user="fay", groups=[fin]).json()["status"] == "approved"
    assert workflows.wait_done(arn)["status"] == "SUCCEEDED"


def test_out_of_office_never_routes_a_requesters_own_seat(backend, api, workflows):
    """An absent approver who asked for the approval keeps their seat (routing would let them choose who decides);
    with self-approval allowed, the same absence routes it."""
    rita = "rita-" + secrets.token_hex(3)
    set_ = api.call("PUT", "/api/v1/me/out-of-office", rita, {"delegate": {"sub": "pal"}, "until": later(1)})
    assert set_.status_code == 200, set_.text
    try:
        _, token = workflows.start_paused()
        mine = api.register(token, approvers=[{"sub": rita}, {"sub": "bob"}], requestedBy=[{"sub": rita}]).json()["id"]
        assert api.get(mine, as_user=rita).json()["mySeat"] == {"holds": True, "onBehalfOf": None, "delegatedTo": None}
        assert api.get(mine, as_user="pal").status_code == 404
        _, token = workflows.start_paused()
        routed = api.register(token, approvers=[{"sub": rita}, {"sub": "bob"}], requestedBy=[{"sub": rita}],
                              allowSelfApproval=True).json()["id"]
        assert api.get(routed, as_user=rita).json()["mySeat"]["delegatedTo"] == {"sub": "pal"}
    finally:
        api.call("DELETE", "/api/v1/me/out-of-office", rita)


def test_operators_neither_take_the_decision_nor_give_it_to_a_requester(backend, ops, workflows):
    arn, token = workflows.start_paused()
    approval_id = ops.register(token, approvers=[{"sub": "alice"}, {"sub": "bob"}],
                               requestedBy=[{"sub": "rita"}]).json()["id"]
    op = {"as_user": "op-1", "groups": [OPERATORS], "email": "op-1@example.com"}

    def reassign(approvers):
        return ops.call("PUT", f"/api/v1/approvals/{approval_id}/principals", body={"approvers": approvers,
                                                                                   "reason": "team change"}, **op)
    for approvers, at in (([{"sub": "alice"}, {"sub": "op-1"}], "approvers[1]"),
                          ([{"email": "OP-1@example.com"}], "approvers[0]"),
                          ([{"sub": "rita"}, {"sub": "bob"}], "approvers[0]")):
        r = reassign(approvers)
        assert (r.status_code, r.json()["error"]["field"]) == (400, at), r.text
    assert ops.get(approval_id, as_user="alice").status_code == 200, "nothing changed"
    done = reassign([{"sub": "bob"}, {"sub": "carol"}])
    assert done.status_code == 200, done.text
    assert ops.get(approval_id, as_user="alice").status_code == 404
    assert ops.decide(approval_id, as_user="carol").json()["status"] == "approved"
    assert workflows.wait_done(arn)["status"] == "SUCCEEDED"


def test_the_page_is_read_only_for_the_requester(stack, workflows, browser):
    """375×812: the reason instead of the form, the requester named, axe-core clean; Japanese too; the inbox marks
    the row. (D1 only: the SPA is the same on both backends, and signs in on the session's worker.)"""
    api = Api(stack)
    arn, token = workflows.start_paused()
    approval_id = api.register(token, approvers=[{"group": "finance"}], requestedBy=[{"sub": sub("alice")}],
                               title="Refund 4,200 EUR to ACME", summary="Asked by alice; finance decides.").json()["id"]
    with Tab(browser, bypass_csp=True) as t:
        page = t.open_signed_in(stack, f"/a/{approval_id}")
        approval = t.approval
        expect(approval.by("self-approval-notice")).to_contain_text("You requested this approval")
        expect(approval.status).to_have_attribute("data-status", "pending")
        assert approval.by("decision-form").count() == 0
        assert approval.enabled_decision_buttons.count() == 0
        expect(approval.by("requester")).to_contain_text(sub("alice"))
        axe_check(page, "approval, read-only for its requester")
        approval.screenshot(ARTIFACTS / "spa-self-approval-mobile.png")
        approval.switch_language()
        expect(approval.by("self-approval-notice")).to_contain_text("職務分掌")
        approval.screenshot(ARTIFACTS / "spa-self-approval-ja-mobile.png")
        approval.switch_language()
        page.goto(f"{stack.base_url}/")
        mark = t.inbox.item(approval_id).get_by_test_id("self-approval-mark")
        expect(mark).to_contain_text("Your own request")
        axe_check(page, "inbox with a marked own request")
        t.inbox.screenshot(ARTIFACTS / "spa-self-approval-inbox-mobile.png", full_page=False)
    with Tab(browser, viewport=DESKTOP) as t:
        t.open_signed_in(stack, f"/a/{approval_id}")
        expect(t.approval.by("self-approval-notice")).to_be_visible()
        assert t.approval.by("decision-form").count() == 0
        t.approval.screenshot(ARTIFACTS / "spa-self-approval-desktop.png")
    assert workflows.status(arn) == "RUNNING"
