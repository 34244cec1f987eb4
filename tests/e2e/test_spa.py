"""The approver SPA in Chromium against the real stack (workerd + moto executing state machines + the
Cognito-shaped Hosted UI stand-in): sign-in with code + PKCE from a short link, the inbox, the approval page
(form, confirmation, outcome, errors), expiry, not-yours, re-authentication keeping the form, languages,
accessibility (axe-core) and that no token ever reaches the URL, the page or localStorage."""
from __future__ import annotations

import base64
import hashlib
import json
import re
import time
import uuid

import pytest
from playwright.sync_api import expect

from support import ARTIFACTS
from support.api import Api, d1
from support.pages import (DESKTOP, MOBILE, SIGN_IN_MODULE, USERS, ApprovalPage, HostedUi, Tab, assert_no_secrets,
                           axe_check, sub)

FORM = [
    {"name": "ticket", "label": "Change ticket", "type": "text", "required": True, "maxLength": 20,
     "help": "The change-management ticket, e.g. CHG-1234."},
    {"name": "risk", "label": "Risk", "type": "choice", "options": ["low", "medium", "high"], "required": True},
    {"name": "region", "label": "Region", "type": "choice",
     "options": ["us-east-1", "us-west-2", "eu-west-1", "eu-central-1", "ap-northeast-1", "ap-southeast-2"]},
    {"name": "rollback", "label": "Rollback time (minutes)", "type": "number", "min": 0, "max": 120},
    {"name": "notes", "label": "Notes for the deployer", "type": "textarea", "maxLength": 500},
    {"name": "tested", "label": "Tested in staging", "type": "boolean"},
]
SUMMARY = ("Rolls out the new settlement batch job and adds an index to the ledger table.\n"
           "Rollback: redeploy the previous version; the index can stay. <b>not bold</b> <img src=x>")
DETAILS = {"service": "payments-api", "version": "v2.41.0", "environment": "production",
           "change": {"files": 42, "migrations": ["0042_ledger_index.sql", "0043_batch.sql"],
                      "owner": {"team": "payments", "oncall": "dave@example.com"}},
           "canary": True, "window": None}
# What ApprovalPage.fill_form() enters, as the workflow receives it.
EXPECTED_FEEDBACK = {"ticket": "CHG-1234", "risk": "medium", "region": "ap-northeast-1", "rollback": 15,
                     "notes": "Watch the settlement dashboard.\nPage me if p99 > 2s.", "tested": True}


def register(workflows, api, approvers=None, timeout=300, **fields):
    """A real paused execution registered with ringi: (approvalId, executionArn, taskToken)."""
    arn, token = workflows.start_paused(timeout)
    body = {"summary": SUMMARY, "details": DETAILS,
            "context": {"executionArn": arn, "stateName": "RequestApproval", "requestedBy": "ci@example.com"},
            **fields}
    r = api.register(token, approvers=approvers or [{"sub": sub("alice")}], **body)
    assert r.status_code == 201, r.text
    return r.json()["id"], arn, token


def jwt_claims(bearer: str) -> dict:
    payload = bearer.split(" ", 1)[1].split(".")[1]
    return json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))


# ------------------------------------------------------------------ scenarios

def test_short_link_signed_out_goes_through_the_hosted_ui_and_approves(stack, workflows, api, tab):
    approval_id, arn, task_token = register(workflows, api, form=FORM,
                                            title="Deploy payments-api v2.41.0 to production")
    page, approval = tab.page, tab.approval
    page.goto(f"{stack.base_url}/a/{approval_id}")
    # Signed out: straight to the Hosted UI (code flow with PKCE S256, random state; no ID in its URL).
    hosted_ui = HostedUi(page, stack).wait()
    authorize = next(u for u in tab.navigations if "/oauth2/authorize" in u)
    assert "code_challenge_method=S256" in authorize and "code_challenge=" in authorize
    assert re.search(r"[?&]state=[A-Za-z0-9_-]{16,}", authorize)
    assert approval_id not in authorize
    page.wait_for_selector("input[name=username]")
    page.screenshot(path=str(ARTIFACTS / "spa-login.png"))
    hosted_ui.sign_in("alice")

    # Back on the approval the link pointed at, code/state gone from the address bar.
    page.wait_for_url(f"{stack.base_url}/a/{approval_id}", timeout=30_000)
    expect(approval.title).to_have_text("Deploy payments-api v2.41.0 to production")
    assert "code=" not in page.url and "state=" not in page.url
    expect(approval.by("user-name")).to_have_text("alice")
    expect(approval.status).to_have_attribute("data-status", "pending")
    # Who registered it, as authenticated (the API key's label), next to what the registrant claims.
    key_label = "api-key:" + hashlib.sha256(stack.api_key.encode()).hexdigest()[:8]
    expect(approval.by("registered-by")).to_have_text(key_label)
    # The summary is text: markup in it is shown, never interpreted.
    summary = approval.by("summary")
    expect(summary).to_contain_text("<b>not bold</b> <img src=x>")
    assert summary.locator("b, img").count() == 0
    # Details: readable fields, nested data collapsible.
    details = approval.by("details")
    expect(details).to_contain_text("payments-api")
    expect(details.locator("details")).to_have_count(3)
    expect(details).to_contain_text("0042_ledger_index.sql")
    # Opening the page decided nothing.
    assert workflows.status(arn) == "RUNNING"

    # Required fields are checked before anything is sent; the messages sit next to the fields.
    approval.approve()
    expect(approval.error).to_have_attribute("data-code", "fields")
    expect(approval.field_error("ticket")).to_have_text("This field is required.")
    expect(approval.field_error("risk")).to_have_text("This field is required.")
    expect(approval.field("ticket")).to_have_attribute("aria-invalid", "true")
    expect(approval.dialog).not_to_be_visible()
    # Range of a number field.
    approval.fill_form(rollback="500")
    approval.approve()
    expect(approval.field_error("rollback")).to_have_text("Enter a number between 0 and 120.")
    approval.field("rollback").fill("15")
    assert workflows.status(arn) == "RUNNING"
    approval.screenshot(ARTIFACTS / "spa-approval-mobile.png")

    # Approve → confirmation dialog → confirm.
    approval.approve()
    expect(approval.dialog).to_be_visible()
    expect(approval.dialog).to_contain_text("Approve this request?")
    approval.screenshot(ARTIFACTS / "spa-confirm-mobile.png", full_page=False)
    assert workflows.status(arn) == "RUNNING"
    approval.confirm()
    expect(approval.expect_result("approved")).to_contain_text("Approved")

    done = workflows.wait_done(arn)
    assert done["status"] == "SUCCEEDED"
    out = json.loads(done["output"])
    assert out["approval"]["decision"] == "approved"
    assert out["approval"]["feedback"] == EXPECTED_FEEDBACK
    assert out["approval"]["comment"] == "Looks good, ship it"
    assert out["approval"]["approvedBy"]["sub"] == sub("alice")

    # The page reloads the view: approved, the caller's own decision and the history.
    expect(approval.status).to_have_attribute("data-status", "approved", timeout=10_000)
    expect(approval.audit_entries).to_have_count(1)
    expect(approval.audit_entries).to_contain_text("Looks good, ship it")
    expect(approval.audit_entries).to_contain_text("Change ticket")  # the form's labels
    expect(approval.approve_button).to_have_count(0)
    approval.screenshot(ARTIFACTS / "spa-approved-mobile.png")
    # Coming back later: the caller's own decision and the history, no buttons.
    page.reload()
    expect(approval.by("my-decision")).to_contain_text("You approved this request")
    expect(approval.audit_entries).to_have_count(1)
    expect(approval.approve_button).to_have_count(0)

    assert_no_secrets(tab, [task_token])
    assert not tab.csp_problems(), tab.problems
    assert page.locator("[style]").count() == 0, "no inline styles (CSP style-src 'self')"
    # Reloading the callback URL later (history, bookmark) is harmless: back to the inbox.
    page.goto(f"{stack.base_url}/auth/callback")
    page.wait_for_url(f"{stack.base_url}/")
    expect(tab.inbox.by("inbox-page")).to_be_visible()


def test_a_short_link_opened_signed_out_leaves_for_the_hosted_ui_without_the_wasm(stack, workflows, api, browser):
    approval_id, _, _ = register(workflows, api, title="Sign-in before the app")
    with Tab(browser, locale="ja-JP") as t:
        page = t.page
        wasm, authorize = [], []
        # boot.js alone starts the sign-in: no wasm can load. The authorize request is answered 204 once (the
        # browser stays on the page), so that the record it left in this tab can be read.
        page.route("**/*.wasm", lambda route: (wasm.append(route.request.url), route.abort()))
        page.route(f"{stack.idp_url}/oauth2/authorize*", lambda route: (authorize.append(route.request.url),
                                                                          route.fulfill(status=204)))
        page.goto(f"{stack.base_url}/a/{approval_id}", wait_until="commit")
        deadline = time.monotonic() + 15
        while not authorize and time.monotonic() < deadline:
            page.wait_for_timeout(50)
        assert authorize, "boot.js did not leave for the Hosted UI"
        url = authorize[0]
        query = dict(p.split("=", 1) for p in url.split("?", 1)[1].split("&"))
        assert query["response_type"] == "code" and query["code_challenge_method"] == "S256", url
        assert re.fullmatch(r"[A-Za-z0-9_-]{43}", query["code_challenge"]), url
        assert re.fullmatch(r"[A-Za-z0-9_-]{22}", query["state"]), url
        assert query["scope"] == "openid+email+profile" and query["lang"] == "ja", url
        assert approval_id not in url
        # The record the app's callback consumes: this tab's state, the verifier behind the challenge.
        pending = json.loads(page.evaluate("sessionStorage.getItem('ringi.auth.pending')"))
        assert pending["state"] == query["state"] and pending["returnTo"] == f"/a/{approval_id}"
        challenge = base64.urlsafe_b64encode(hashlib.sha256(pending["verifier"].encode()).digest()).rstrip(b"=")
        assert challenge.decode() == query["code_challenge"]
        # Before leaving, boot.js asked for what the callback page runs first (the sign-in's module and its part),
        # not for the app.
        assert not [url for url in wasm if "/ringi-app-" in url], wasm
        assert [url for url in wasm if SIGN_IN_MODULE.search(url)], wasm
        # The app (wasm allowed again) completes that sign-in with the oauth2 crate and lands on the link. The
        # module never came before leaving, so the callback page asks for it first and for the app only then.
        page.unroute("**/*.wasm")
        page.unroute(f"{stack.idp_url}/oauth2/authorize*")
        asked = []
        page.on("request", lambda r: asked.append(r.url) if r.url.endswith("_bg.wasm") else None)
        page.goto(url)
        HostedUi(page, stack).wait().sign_in("alice")
        page.wait_for_url(f"{stack.base_url}/a/{approval_id}", timeout=30_000)
        expect(t.approval.title).to_have_text("Sign-in before the app")
        order = [("app" if "/ringi-app-" in u else "sign-in") for u in asked
                 if "/ringi-app-" in u or SIGN_IN_MODULE.search(u)]
        assert order == ["sign-in", "app"], asked


def test_the_emailed_link_in_a_new_tab_with_a_live_idp_session_opens_without_the_sign_in_form(stack, workflows, api, tab):
    """The phone's usual first open: signed in at the IdP earlier (another tab), no session in this tab. The new tab
    goes through the Hosted UI, which answers at once with a code — no form —, and lands on the approval, decidable.
    The first tab's own session is untouched."""
    first_id, _, _ = register(workflows, api, title="Deploy payments-api v2.41.0 to production")
    tab.open_signed_in(stack, f"/a/{first_id}")
    expect(tab.approval.title).to_have_text("Deploy payments-api v2.41.0 to production")
    approval_id, arn, task_token = register(workflows, api, title="Rotate the ledger DB credentials")

    page = tab.ctx.new_page()
    documents = []
    page.on("request", lambda r: documents.append(r.url) if r.is_navigation_request() else None)
    page.goto(f"{stack.base_url}/a/{approval_id}")
    page.wait_for_url(f"{stack.base_url}/a/{approval_id}", timeout=30_000)
    second = ApprovalPage(page)
    expect(second.title).to_have_text("Rotate the ledger DB credentials", timeout=30_000)
    at_idp = [u.split("?")[0] for u in documents if u.startswith(stack.idp_url)]
    assert at_idp == [f"{stack.idp_url}/oauth2/authorize"], f"the IdP answered with a code at once: {documents}"
    second.decide("approve")
    second.expect_result("approved")
    assert workflows.wait_done(arn)["status"] == "SUCCEEDED"
    # The first tab still has its session: its approval is still shown, signed in.
    tab.page.reload()
    expect(tab.approval.title).to_have_text("Deploy payments-api v2.41.0 to production")
    page.close()


def test_reject_with_confirmation_takes_the_rejected_branch(stack, workflows, api, tab):
    approval_id, arn, task_token = register(workflows, api, title="Rotate the ledger DB credentials")
    page = tab.open_signed_in(stack, f"/a/{approval_id}")
    approval = tab.approval
    approval.comment.fill("Not during the freeze")
    # Cancel first: nothing happens.
    approval.reject()
    expect(approval.dialog).to_contain_text("Reject this request?")
    approval.cancel()
    expect(approval.dialog).not_to_be_visible()
    # Escape closes it too.
    approval.reject()
    expect(approval.dialog).to_be_visible()
    page.keyboard.press("Escape")
    expect(approval.dialog).not_to_be_visible()
    time.sleep(0.5)
    assert workflows.status(arn) == "RUNNING"

    approval.decide("reject")
    approval.expect_result("rejected")
    done = workflows.wait_done(arn)
    assert done["status"] == "SUCCEEDED"
    out = json.loads(done["output"])
    assert out["rejection"]["Error"] == "Rejected"
    cause = json.loads(out["rejection"]["Cause"])
    assert cause["decision"] == "rejected" and cause["comment"] == "Not during the freeze"
    expect(approval.status).to_have_attribute("data-status", "rejected", timeout=10_000)
    page.reload()
    expect(approval.by("my-decision")).to_contain_text("You rejected this request")
    assert_no_secrets(tab, [task_token])


def test_expired_approval_shows_expired_and_cannot_be_decided(stack, workflows, api, tab, clock):
    approval_id, arn, _ = register(workflows, api, timeout=3, timeoutSeconds=2, title="Short-lived request")
    # The browser's requests are on the real clock: the cron, 3 s ahead, stores the expiry the page shows.
    clock.advance(3)
    stack.run_cron()
    tab.open_signed_in(stack, f"/a/{approval_id}")
    approval = tab.approval
    expect(approval.status).to_have_attribute("data-status", "expired")
    expect(approval.status).to_have_text("Expired")
    expect(approval.by("expired-notice")).to_contain_text("expired")
    assert approval.enabled_decision_buttons.count() == 0
    assert approval.by("decision-form").count() == 0
    approval.screenshot(ARTIFACTS / "spa-expired-mobile.png")


def test_decided_unconfirmed_shows_the_verdict_and_cannot_be_decided(stack, workflows, api, browser):
    """A callback that may have been delivered, then the task closed: the verdict, marked unconfirmed, with who
    sent it (set up in D1 as the worker stores it: status + confirmed = 0 + the attempt record)."""
    approval_id, _, _ = register(workflows, api, title="Unconfirmed decision")
    now = int(time.time() * 1000)
    d1(stack, f"UPDATE approvals SET status = 'rejected', decision = 'rejected', confirmed = 0, task_token = NULL, "
              f"decided_at = {now}, attempt_id = 'c1', attempt_verdict = 'reject', attempt_sub = 'bob-sub', "
              f"attempt_by = 'bob@example.com', attempt_at = {now} WHERE id = '{approval_id}'; "
              f"UPDATE approval_principals SET open = 0, sort_at = {now} WHERE approval_id = '{approval_id}'")
    with Tab(browser, locale="en-US") as t:
        page = t.open_signed_in(stack, f"/a/{approval_id}")
        approval = t.approval
        status = approval.status
        expect(status).to_have_attribute("data-status", "decided_unconfirmed")
        expect(status).to_have_attribute("data-verdict", "reject")
        expect(status).to_have_text("Rejected, unconfirmed")
        expect(approval.by("unconfirmed-notice")).to_contain_text("bob@example.com")
        expect(approval.by("unconfirmed-notice")).to_contain_text("did not confirm")
        assert approval.enabled_decision_buttons.count() == 0
        assert approval.by("decision-form").count() == 0
        approval.screenshot(ARTIFACTS / "spa-unconfirmed-mobile.png")
        approval.switch_language()
        expect(status).to_have_text("却下（未確認）")
        expect(approval.by("unconfirmed-notice")).to_contain_text("確認がありませんでした")
        approval.switch_language()
        # The inbox's decided tab shows it the same way.
        page.goto(f"{stack.base_url}/?tab=decided")
        item = t.inbox.item(approval_id)
        expect(item.get_by_test_id("status")).to_have_text("Rejected, unconfirmed")
        expect(item.get_by_test_id("status")).to_have_attribute("data-verdict", "reject")


def test_someone_elses_link_is_not_found(stack, workflows, api, tab):
    approval_id, arn, _ = register(workflows, api, approvers=[{"sub": sub("bob")}], title="Bob only")
    page = tab.open_signed_in(stack, f"/a/{approval_id}", user="alice")
    not_found = tab.approval.by("approval-not-found")
    expect(not_found).to_be_visible()
    expect(not_found).to_contain_text("not addressed to you")
    assert "Bob only" not in page.content()
    # Unknown IDs look the same.
    page.goto(f"{stack.base_url}/a/{uuid.uuid4().hex[:20]}")
    expect(not_found).to_be_visible()


def test_inbox_lists_pending_and_decided(stack, workflows, api, browser):
    title = f"Inbox check {uuid.uuid4().hex[:6]}"
    approval_id, arn, task_token = register(workflows, api, approvers=[{"sub": sub("carol")}], title=title,
                                            timeoutSeconds=1800)
    other_id, other_arn, _ = register(workflows, api, approvers=[{"sub": sub("carol")}, {"sub": sub("dave")}],
                                      quorum="all", title=f"Quorum {title}")
    decided_id, decided_arn, _ = register(workflows, api, approvers=[{"sub": sub("carol")}],
                                          title=f"Decided {title}")
    assert api.decide(decided_id, "reject", as_user=sub("carol")).status_code == 200

    for viewport, name in ((MOBILE, "mobile"), (DESKTOP, "desktop")):
        with Tab(browser, viewport=viewport, bypass_csp=True) as t:
            page, inbox = t.page, t.inbox
            page.goto(f"{stack.base_url}/")
            # Signed out at the root: a landing card and an explicit sign-in.
            expect(inbox.by("welcome")).to_be_visible()
            if name == "mobile":
                inbox.screenshot(ARTIFACTS / "spa-welcome-mobile.png", full_page=False)
            inbox.sign_in(stack, "carol")
            mine = inbox.items.filter(has_text=title).filter(has_not_text="Quorum").filter(has_not_text="Decided")
            expect(mine).to_have_count(1)
            expect(mine).to_contain_text("Expires in")
            expect(mine.locator(".urgency--urgent")).to_have_count(1)  # 30 minutes left: urgent styling
            expect(mine).to_contain_text("ci@example.com")
            expect(mine).to_contain_text("0 of 1 approval")
            quorum = inbox.items.filter(has_text=f"Quorum {title}")
            expect(quorum).to_contain_text("0 of 2 approvals")
            expect(inbox.items.filter(has_text=f"Decided {title}")).to_have_count(0)
            expect(inbox.count).to_contain_text("pending request")
            inbox.screenshot(ARTIFACTS / f"spa-inbox-{name}.png")
            axe_check(page, f"inbox {name}")
            assert_no_secrets(t, [task_token])

            # Refresh keeps the list.
            inbox.refresh()
            expect(mine).to_have_count(1)
            # The decided tab.
            inbox.show_decided(stack)
            decided = inbox.items.filter(has_text=f"Decided {title}")
            expect(decided).to_have_count(1)
            expect(decided.get_by_test_id("status")).to_have_text("Rejected")
            if name == "desktop":
                inbox.screenshot(ARTIFACTS / "spa-inbox-decided-desktop.png")
            # Back to pending and open the request from the list.
            inbox.show_pending()
            inbox.items.filter(has_text=title).filter(has_not_text="Quorum").get_by_role("link").click()
            page.wait_for_url(f"{stack.base_url}/a/{approval_id}")
            expect(t.approval.title).to_have_text(title)
            if name == "desktop":
                t.approval.screenshot(ARTIFACTS / "spa-approval-desktop.png")


def test_inbox_load_more(stack, api, tab):
    """More than one page (25): "Load more" fetches the next one with the cursor."""
    tag = uuid.uuid4().hex[:6]
    for i in range(27):
        r = api.register(f"token-{tag}-{i}", approvers=[{"sub": sub("dave")}], title=f"Bulk {tag} {i:02d}",
                         timeoutSeconds=3600 + i * 60)
        assert r.status_code == 201, r.text
    inbox = tab.inbox
    tab.page.goto(f"{stack.base_url}/")
    inbox.sign_in(stack, "dave")
    expect(inbox.items).to_have_count(25)
    expect(inbox.count).to_contain_text("more available")
    inbox.load_more()
    expect(inbox.items.filter(has_text=f"Bulk {tag}")).to_have_count(27)
    ids = inbox.item_ids()
    assert len(ids) == len(set(ids)), "no item twice"


def test_accessibility_of_inbox_and_approval_pages(stack, workflows, api, browser):
    approval_id, _, _ = register(workflows, api, form=FORM, title="Accessibility check")
    for scheme in ("light", "dark"):
        with Tab(browser, scheme=scheme, bypass_csp=True) as t:
            page = t.open_signed_in(stack, f"/a/{approval_id}")
            approval = t.approval
            expect(approval.by("decision-form")).to_be_visible()
            axe_check(page, f"approval ({scheme})")
            # With validation errors shown too.
            approval.approve()
            expect(approval.field_error("ticket")).not_to_be_empty()
            axe_check(page, f"approval with errors ({scheme})")
            if scheme == "dark":
                approval.screenshot(ARTIFACTS / "spa-approval-dark-mobile.png")
            page.goto(f"{stack.base_url}/")
            expect(t.inbox.by("inbox-list")).to_be_visible()
            axe_check(page, f"inbox ({scheme})")
            if scheme == "dark":
                t.inbox.screenshot(ARTIFACTS / "spa-inbox-dark-mobile.png")


def test_keyboard_only_decision(stack, workflows, api, tab):
    """Tab order reaches the form and the buttons; Enter/Space work; the dialog takes focus."""
    approval_id, arn, _ = register(workflows, api, title="Keyboard decision")
    page = tab.open_signed_in(stack, f"/a/{approval_id}")
    approval = tab.approval
    approval.comment.focus()
    page.keyboard.type("via keyboard")
    page.keyboard.press("Tab")
    assert approval.focused_test_id() == "approve"
    page.keyboard.press("Enter")
    expect(approval.dialog).to_be_visible()
    assert approval.focused_test_id() == "confirm-cancel"
    page.keyboard.press("Tab")
    assert approval.focused_test_id() == "confirm-decision"
    page.keyboard.press("Space")
    approval.expect_result("approved")
    assert workflows.wait_done(arn)["status"] == "SUCCEEDED"


def test_401_signs_in_again_and_comes_back_with_the_form_filled(stack, workflows, api, tab):
    approval_id, arn, _ = register(workflows, api, form=FORM, title="Re-authentication keeps the draft")
    page = tab.open_signed_in(stack, f"/a/{approval_id}")
    approval = tab.approval
    approval.fill_form()
    first_token = page.evaluate("JSON.parse(sessionStorage.getItem('ringi.session')).bearer")
    assert first_token
    refused = []

    def once_401(route):
        if not refused:
            refused.append(route.request.url)
            route.fulfill(status=401, content_type="application/json",
                          body=json.dumps({"error": {"code": "unauthorized", "message": "authentication required"}}))
        else:
            route.continue_()

    page.route("**/api/v1/approvals/*/decision", once_401)
    approval.decide("approve")
    # Silent round trip through the Hosted UI (its session is still valid): back on the same page.
    page.wait_for_url(f"{stack.base_url}/a/{approval_id}", timeout=30_000)
    expect(approval.by("draft-restored")).to_be_visible(timeout=30_000)
    assert any("/oauth2/authorize" in u for u in tab.navigations[-8:]), tab.navigations
    assert refused
    assert workflows.status(arn) == "RUNNING", "nothing is decided by coming back"
    # The form is intact; a new token was issued.
    expect(approval.field("ticket")).to_have_value("CHG-1234")
    expect(approval.field("risk-1")).to_be_checked()
    expect(approval.field("region")).to_have_value("ap-northeast-1")
    expect(approval.field("rollback")).to_have_value("15")
    expect(approval.field("tested")).to_be_checked()
    expect(approval.comment).to_have_value("Looks good, ship it")
    assert page.evaluate("JSON.parse(sessionStorage.getItem('ringi.session')).bearer") != first_token
    assert page.evaluate("sessionStorage.getItem('ringi.draft." + approval_id + "')") is None
    approval.decide("approve")
    approval.expect_result("approved")
    out = json.loads(workflows.wait_done(arn)["output"])
    assert out["approval"]["feedback"] == EXPECTED_FEEDBACK


def test_network_failure_keeps_the_form_and_retry_succeeds(stack, workflows, api, tab):
    approval_id, arn, _ = register(workflows, api, form=FORM, title="Retry after 503")
    page = tab.open_signed_in(stack, f"/a/{approval_id}")
    approval = tab.approval
    approval.fill_form()
    calls = []

    def flaky(route):
        calls.append(1)
        if len(calls) == 1:
            route.fulfill(status=503, content_type="application/json", body=json.dumps(
                {"error": {"code": "sfn_unavailable", "message": "Step Functions is unavailable"}}))
        elif len(calls) == 2:
            route.abort("internetdisconnected")
        else:
            route.continue_()

    page.route("**/api/v1/approvals/*/decision", flaky)
    approval.decide("approve")
    expect(approval.error).to_have_attribute("data-code", "unavailable")
    expect(approval.error).to_contain_text("Nothing was decided")
    expect(approval.field("ticket")).to_have_value("CHG-1234")
    approval.screenshot(ARTIFACTS / "spa-retry-mobile.png")
    approval.retry()
    expect(approval.error).to_have_attribute("data-code", "unavailable")  # the network is down this time
    assert workflows.status(arn) == "RUNNING"
    approval.retry()
    approval.expect_result("approved")
    assert json.loads(workflows.wait_done(arn)["output"])["approval"]["feedback"] == EXPECTED_FEEDBACK


def test_server_field_errors_show_next_to_the_field(stack, workflows, api, tab):
    approval_id, arn, _ = register(workflows, api, form=FORM, title="Field error from the server")
    page = tab.open_signed_in(stack, f"/a/{approval_id}")
    approval = tab.approval
    approval.fill_form()
    page.route("**/api/v1/approvals/*/decision", lambda route: route.fulfill(
        status=400, content_type="application/json",
        body=json.dumps({"error": {"code": "invalid_request", "message": "must be one of the options",
                                   "field": "feedback.region"}})))
    approval.decide("approve")
    expect(approval.field_error("region")).to_contain_text("must be one of the options")
    expect(approval.field("region")).to_have_attribute("aria-invalid", "true")
    # Focus moves after the message renders: wait for it rather than reading it once.
    expect(approval.field("region")).to_be_focused()
    assert workflows.status(arn) == "RUNNING"


def test_conflict_after_someone_else_decided_explains_and_reloads(stack, workflows, api, tab):
    approval_id, arn, _ = register(workflows, api, approvers=[{"group": "finance"}], title="Race with carol")
    tab.open_signed_in(stack, f"/a/{approval_id}")
    approval = tab.approval
    expect(approval.by("decision-form")).to_be_visible()
    # carol (also in finance) decides first.
    assert api.decide(approval_id, "approve", as_user=sub("carol"), groups=["finance"]).status_code == 200
    approval.decide("reject")
    expect(approval.error).to_have_attribute("data-code", "already_decided")
    expect(approval.error).to_contain_text("Someone else decided")
    expect(approval.status).to_have_attribute("data-status", "approved", timeout=10_000)
    expect(approval.by("history")).to_contain_text("approved")
    assert workflows.wait_done(arn)["status"] == "SUCCEEDED"


def test_an_approval_for_a_satisfied_principal_is_explained(stack, workflows, api, tab):
    """`all` over finance and bob: once carol approved for finance, alice (also finance) is told that her
    group has approved and bob has to decide; nothing is recorded for her."""
    approval_id, arn, _ = register(workflows, api, approvers=[{"group": "finance"}, {"sub": sub("bob")}],
                                   quorum="all", title="Finance and bob")
    assert api.decide(approval_id, as_user=sub("carol"), groups=["finance"]).json()["status"] == "pending"
    tab.open_signed_in(stack, f"/a/{approval_id}")
    approval = tab.approval
    approval.decide("approve")
    expect(approval.error).to_have_attribute("data-code", "already_satisfied")
    expect(approval.error).to_contain_text("Another listed approver has to decide")
    assert workflows.status(arn) == "RUNNING"
    assert len(api.get(approval_id, as_user=sub("bob")).json()["decisions"]) == 1, "only carol's approval"


def test_quorum_progress_after_my_approval(stack, workflows, api, tab):
    approval_id, arn, _ = register(workflows, api, approvers=[{"sub": sub("alice")}, {"sub": sub("carol")}],
                                   quorum="all", title="Two approvers needed")
    page = tab.open_signed_in(stack, f"/a/{approval_id}")
    approval = tab.approval
    approval.decide("approve")
    expect(approval.expect_result("pending")).to_contain_text("1 of 2 approvals")
    expect(approval.approve_button).to_have_count(0)
    assert workflows.status(arn) == "RUNNING"
    page.reload()
    expect(approval.status).to_have_attribute("data-status", "pending")
    expect(approval.by("my-decision")).to_contain_text("Waiting for other approvers: 1 of 2")
    expect(approval.approve_button).to_have_count(0)
    # carol completes the quorum; the execution resumes.
    assert api.decide(approval_id, "approve", as_user=sub("carol")).status_code == 200
    assert workflows.wait_done(arn)["status"] == "SUCCEEDED"


def test_japanese_language_switch_is_remembered(stack, workflows, api, browser):
    approval_id, _, _ = register(workflows, api, form=FORM, title="言語の切り替え")
    with Tab(browser, locale="en-US") as t:
        page = t.open_signed_in(stack, f"/a/{approval_id}")
        approval = t.approval
        expect(approval.approve_button).to_contain_text("Approve")
        approval.switch_language()
        expect(approval.approve_button).to_contain_text("承認する")
        assert page.evaluate("document.documentElement.lang") == "ja"
        assert page.evaluate("localStorage.getItem('ringi.locale')") == "ja"
        approval.screenshot(ARTIFACTS / "spa-approval-ja-mobile.png")
        page.reload()
        expect(approval.approve_button).to_contain_text("承認する")
        approval.switch_language()
        expect(approval.approve_button).to_contain_text("Approve")
    # A Japanese browser starts in Japanese.
    with Tab(browser, locale="ja-JP") as t:
        t.page.goto(f"{stack.base_url}/")
        expect(t.inbox.by("sign-in")).to_have_text("サインイン")


def test_sign_out_clears_the_session_and_ends_the_hosted_ui_session(stack, workflows, api, tab):
    approval_id, _, _ = register(workflows, api, title="Sign-out check")
    page = tab.open_signed_in(stack, f"/a/{approval_id}")
    inbox = tab.inbox
    inbox.by("sign-out").click()
    page.wait_for_url(f"{stack.base_url}/", timeout=30_000)
    expect(inbox.by("signed-out")).to_be_visible()
    assert page.evaluate("sessionStorage.getItem('ringi.session')") is None
    assert any(u.startswith(f"{stack.idp_url}/logout?client_id=") for u in tab.navigations), tab.navigations
    # The Hosted UI session is gone too: the next sign-in asks for the password again.
    inbox.by("sign-in").click()
    page.wait_for_url(f"{stack.idp_url}/**")
    expect(HostedUi(page, stack).password).to_be_visible()


def test_a_stale_or_foreign_callback_is_refused(stack, tab):
    page = tab.page
    page.goto(f"{stack.base_url}/auth/callback?code=abc&state=forged")
    expect(tab.inbox.by("sign-in-error")).to_be_visible()
    assert "code=" not in page.url and "state=" not in page.url
    assert page.evaluate("sessionStorage.getItem('ringi.session')") is None


@pytest.mark.parametrize("token_use", ["access", "id"])
def test_the_spa_sends_the_token_the_worker_takes(stack, workflows, browser, token_use):
    """`TOKEN_USE` (in /config.json) picks the bearer: with `id`, a stock Cognito pool's ID token carries the
    verified email, so an `{email}` approver can decide (an access token has no email)."""
    if token_use == "access":
        base, approvers = stack.base_url, [{"sub": sub("alice")}]
    else:
        base = stack.extra_worker("idtokens", {"TOKEN_USE": "id"}, signs_in=True)
        approvers = [{"email": USERS["alice"]["email"]}]
    arn, task_token = workflows.start_paused()
    r = Api(stack, base).register(task_token, approvers=approvers)
    assert r.status_code == 201, r.text
    approval_id = r.json()["id"]
    with Tab(browser) as t:
        bearers = []
        t.page.on("request", lambda q: bearers.append(q.headers["authorization"])
                  if "/api/v1/" in q.url and "authorization" in q.headers else None)
        t.open_signed_in(stack, f"/a/{approval_id}", base_url=base)
        approval = t.approval
        expect(approval.title).to_have_text("Deploy v2 to production")
        expect(approval.by("user-name")).to_have_text("alice")
        claims = jwt_claims(bearers[-1])
        assert claims["token_use"] == token_use
        if token_use == "id":
            assert claims["aud"] == stack.client_id and claims["email"] == USERS["alice"]["email"]
        approval.decide("approve")
        approval.expect_result("approved")
        assert workflows.wait_done(arn)["status"] == "SUCCEEDED"
        assert {jwt_claims(b)["token_use"] for b in bearers} == {token_use}
        assert_no_secrets(t, [task_token])
