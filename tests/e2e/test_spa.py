"""Issue 5: the approver SPA in Chromium against the real stack (workerd + moto executing state machines + the
Cognito-shaped Hosted UI stand-in): sign-in with code + PKCE from a short link, the inbox, the approval page
(form, confirmation, outcome, errors), expiry, not-yours, re-authentication keeping the form, languages,
accessibility (axe-core) and that no token ever reaches the URL, the page or localStorage."""
from __future__ import annotations

import hashlib
import json
import re
import time
import uuid

import pytest
from playwright.sync_api import expect, sync_playwright

from conftest import ARTIFACTS, ROOT

CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]
USERS = {u["username"]: u for u in json.loads((ROOT / "scripts/oidc/users.json").read_text())}
PASSWORD = "Passw0rd!"
MOBILE = {"width": 375, "height": 812}
DESKTOP = {"width": 1280, "height": 800}
AXE = ROOT / "node_modules/axe-core/axe.min.js"
# A compact JWS: three base64url segments (the first starts with "eyJ", a JSON object).
JWT_RE = re.compile(r"eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}")

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


def sub(user: str) -> str:
    return USERS[user]["sub"]


# ------------------------------------------------------------------ helpers

@pytest.fixture(scope="module")
def browser():
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
        yield b
        b.close()


class Tab:
    """One browser context (its own cookies, sessionStorage) with a page, recording console errors, CSP
    reports and every URL the page visited."""

    def __init__(self, browser, viewport=MOBILE, locale="en-US", scheme="light", bypass_csp=False):
        # bypass_csp: only where axe-core is injected (add_script_tag inlines it, which the strict CSP refuses).
        self.ctx = browser.new_context(viewport=viewport, locale=locale, color_scheme=scheme,
                                       device_scale_factor=2 if viewport == MOBILE else 1, bypass_csp=bypass_csp)
        self.page = self.ctx.new_page()
        self.problems: list[str] = []
        self.urls: list[str] = []
        # Every document request, redirects included (the authorize and callback URLs are redirects).
        self.navigations: list[str] = []
        self.page.on("console", lambda m: self.problems.append(m.text) if m.type == "error" else None)
        self.page.on("pageerror", lambda e: self.problems.append(str(e)))
        self.page.on("framenavigated", lambda f: self.urls.append(f.url) if f == self.page.main_frame else None)
        self.page.on("request", lambda r: self.navigations.append(r.url) if r.is_navigation_request() else None)

    def close(self):
        self.ctx.close()

    def csp_problems(self):
        return [p for p in self.problems if "Content Security Policy" in p or "Refused to" in p]


@pytest.fixture
def tab(browser):
    t = Tab(browser)
    yield t
    t.close()


def sign_in_at_idp(page, stack, user="alice"):
    """Fills the Hosted UI stand-in's form (the browser was sent there by the SPA)."""
    page.wait_for_url(f"{stack.idp_url}/**", timeout=30_000)
    page.fill("input[name=username]", user)
    page.fill("input[name=password]", PASSWORD)
    page.click("input[name=signInSubmitButton]")


def open_signed_in(tab: Tab, stack, path: str, user="alice"):
    """Opens `path` signed out, signs in at the IdP, waits until the SPA is back on `path`."""
    page = tab.page
    page.goto(f"{stack.base_url}{path}")
    sign_in_at_idp(page, stack, user)
    page.wait_for_url(f"{stack.base_url}{path}", timeout=30_000)
    return page


def register(workflows, api, approvers=None, timeout=300, **fields):
    """A real paused execution registered with ringi: (approvalId, executionArn, taskToken)."""
    arn, token = workflows.start_paused(timeout)
    body = {"summary": SUMMARY, "details": DETAILS,
            "context": {"executionArn": arn, "stateName": "RequestApproval", "requestedBy": "ci@example.com"},
            **fields}
    r = api.register(token, approvers=approvers or [{"sub": sub("alice")}], **body)
    assert r.status_code == 201, r.text
    return r.json()["id"], arn, token


def fill_form(page, ticket="CHG-1234", risk="medium", rollback="15"):
    page.fill("#field-ticket", ticket)
    page.check(f"#field-risk-{['low', 'medium', 'high'].index(risk)}")
    page.select_option("#field-region", "ap-northeast-1")
    page.fill("#field-rollback", rollback)
    page.fill("#field-notes", "Watch the settlement dashboard.\nPage me if p99 > 2s.")
    page.check("#field-tested")
    page.fill("#comment", "Looks good, ship it")


EXPECTED_FEEDBACK = {"ticket": "CHG-1234", "risk": "medium", "region": "ap-northeast-1", "rollback": 15,
                     "notes": "Watch the settlement dashboard.\nPage me if p99 > 2s.", "tested": True}


def assert_no_secrets(tab: Tab, task_tokens=()):
    """No task token and no JWT in the page, any URL it visited, or localStorage; no code/state in the address
    bar after the callback. sessionStorage may hold the access token: that is the design."""
    page = tab.page
    content = page.content()
    local = page.evaluate("JSON.stringify(Object.assign({}, window.localStorage))")
    for token in task_tokens:
        assert token not in content and token not in local
        assert not [u for u in tab.urls + tab.navigations if token in u]
    assert not JWT_RE.search(content), "a JWT is in the page"
    assert not JWT_RE.search(local), "a JWT is in localStorage"
    assert not [u for u in tab.urls + tab.navigations if JWT_RE.search(u)], tab.navigations
    callbacks = [i for i, u in enumerate(tab.urls) if "/auth/callback" in u]
    assert callbacks, tab.urls
    after = [u for u in tab.urls[callbacks[-1] + 1:] if u.startswith(page.url.split("/a/")[0].split("/?")[0])]
    assert not [u for u in after if "code=" in u or "state=" in u], after
    assert "code=" not in page.url and "state=" not in page.url, page.url
    assert page.evaluate("window.sessionStorage.getItem('ringi.session') !== null")


def axe_check(page, name: str):
    page.add_script_tag(path=str(AXE))
    result = page.evaluate("""async () => {
        const r = await axe.run(document, {resultTypes: ['violations']});
        return r.violations.map(v => ({id: v.id, impact: v.impact, help: v.help,
                                       nodes: v.nodes.map(n => n.target.join(' ')).slice(0, 5)}));
    }""")
    bad = [v for v in result if v["impact"] in ("serious", "critical")]
    assert not bad, f"{name}: {json.dumps(bad, indent=1)}"
    return result


# ------------------------------------------------------------------ tests

def test_short_link_signed_out_goes_through_the_hosted_ui_and_approves(stack, workflows, api, tab):
    approval_id, arn, task_token = register(workflows, api, form=FORM,
                                            title="Deploy payments-api v2.41.0 to production")
    page = tab.page
    page.goto(f"{stack.base_url}/a/{approval_id}")
    # Signed out: straight to the Hosted UI (code flow with PKCE S256, random state; no ID in its URL).
    page.wait_for_url(f"{stack.idp_url}/**", timeout=30_000)
    authorize = next(u for u in tab.navigations if "/oauth2/authorize" in u)
    assert "code_challenge_method=S256" in authorize and "code_challenge=" in authorize
    assert re.search(r"[?&]state=[A-Za-z0-9_-]{16,}", authorize)
    assert approval_id not in authorize
    page.wait_for_selector("input[name=username]")
    page.screenshot(path=str(ARTIFACTS / "spa-login.png"))
    sign_in_at_idp(page, stack, "alice")

    # Back on the approval the link pointed at, code/state gone from the address bar.
    page.wait_for_url(f"{stack.base_url}/a/{approval_id}", timeout=30_000)
    expect(page.get_by_test_id("approval-title")).to_have_text("Deploy payments-api v2.41.0 to production")
    assert "code=" not in page.url and "state=" not in page.url
    expect(page.get_by_test_id("user-name")).to_have_text("alice")
    expect(page.get_by_test_id("status")).to_have_attribute("data-status", "pending")
    # Who registered it, as authenticated (the API key's label), next to what the registrant claims.
    key_label = "api-key:" + hashlib.sha256(stack.api_key.encode()).hexdigest()[:8]
    expect(page.get_by_test_id("registered-by")).to_have_text(key_label)
    # The summary is text: markup in it is shown, never interpreted.
    summary = page.get_by_test_id("summary")
    expect(summary).to_contain_text("<b>not bold</b> <img src=x>")
    assert summary.locator("b, img").count() == 0
    # Details: readable fields, nested data collapsible.
    details = page.get_by_test_id("details")
    expect(details).to_contain_text("payments-api")
    expect(details.locator("details")).to_have_count(3)
    expect(details).to_contain_text("0042_ledger_index.sql")
    # Opening the page decided nothing.
    assert workflows.status(arn) == "RUNNING"

    # Required fields are checked before anything is sent; the messages sit next to the fields.
    page.get_by_test_id("approve").click()
    expect(page.get_by_test_id("decision-error")).to_have_attribute("data-code", "fields")
    expect(page.locator("#field-ticket-error")).to_have_text("This field is required.")
    expect(page.locator("#field-risk-error")).to_have_text("This field is required.")
    expect(page.locator("#field-ticket")).to_have_attribute("aria-invalid", "true")
    expect(page.get_by_test_id("confirm-dialog")).not_to_be_visible()
    # Range of a number field.
    fill_form(page, rollback="500")
    page.get_by_test_id("approve").click()
    expect(page.locator("#field-rollback-error")).to_have_text("Enter a number between 0 and 120.")
    page.fill("#field-rollback", "15")
    assert workflows.status(arn) == "RUNNING"
    page.screenshot(path=str(ARTIFACTS / "spa-approval-mobile.png"), full_page=True)

    # Approve → confirmation dialog → confirm.
    page.get_by_test_id("approve").click()
    dialog = page.get_by_test_id("confirm-dialog")
    expect(dialog).to_be_visible()
    expect(dialog).to_contain_text("Approve this request?")
    page.screenshot(path=str(ARTIFACTS / "spa-confirm-mobile.png"))
    assert workflows.status(arn) == "RUNNING"
    page.get_by_test_id("confirm-decision").click()
    result = page.get_by_test_id("decision-result")
    expect(result).to_have_attribute("data-result", "approved", timeout=30_000)
    expect(result).to_contain_text("Approved")

    done = workflows.wait_done(arn)
    assert done["status"] == "SUCCEEDED"
    out = json.loads(done["output"])
    assert out["approval"]["decision"] == "approved"
    assert out["approval"]["feedback"] == EXPECTED_FEEDBACK
    assert out["approval"]["comment"] == "Looks good, ship it"
    assert out["approval"]["approvedBy"]["sub"] == sub("alice")

    # The page reloads the view: approved, the caller's own decision and the history.
    expect(page.get_by_test_id("status")).to_have_attribute("data-status", "approved", timeout=10_000)
    expect(page.get_by_test_id("audit-entry")).to_have_count(1)
    expect(page.get_by_test_id("audit-entry")).to_contain_text("Looks good, ship it")
    expect(page.get_by_test_id("audit-entry")).to_contain_text("Change ticket")  # the form's labels
    expect(page.get_by_test_id("approve")).to_have_count(0)
    page.screenshot(path=str(ARTIFACTS / "spa-approved-mobile.png"), full_page=True)
    # Coming back later: the caller's own decision and the history, no buttons.
    page.reload()
    expect(page.get_by_test_id("my-decision")).to_contain_text("You approved this request")
    expect(page.get_by_test_id("audit-entry")).to_have_count(1)
    expect(page.get_by_test_id("approve")).to_have_count(0)

    assert_no_secrets(tab, [task_token])
    assert not tab.csp_problems(), tab.problems
    assert page.locator("[style]").count() == 0, "no inline styles (CSP style-src 'self')"
    # Reloading the callback URL later (history, bookmark) is harmless: back to the inbox.
    page.goto(f"{stack.base_url}/auth/callback")
    page.wait_for_url(f"{stack.base_url}/")
    expect(page.get_by_test_id("inbox-page")).to_be_visible()


def test_reject_with_confirmation_takes_the_rejected_branch(stack, workflows, api, tab):
    approval_id, arn, task_token = register(workflows, api, title="Rotate the ledger DB credentials")
    page = open_signed_in(tab, stack, f"/a/{approval_id}")
    page.fill("#comment", "Not during the freeze")
    # Cancel first: nothing happens.
    page.get_by_test_id("reject").click()
    expect(page.get_by_test_id("confirm-dialog")).to_contain_text("Reject this request?")
    page.get_by_test_id("confirm-cancel").click()
    expect(page.get_by_test_id("confirm-dialog")).not_to_be_visible()
    # Escape closes it too.
    page.get_by_test_id("reject").click()
    expect(page.get_by_test_id("confirm-dialog")).to_be_visible()
    page.keyboard.press("Escape")
    expect(page.get_by_test_id("confirm-dialog")).not_to_be_visible()
    time.sleep(0.5)
    assert workflows.status(arn) == "RUNNING"

    page.get_by_test_id("reject").click()
    page.get_by_test_id("confirm-decision").click()
    expect(page.get_by_test_id("decision-result")).to_have_attribute("data-result", "rejected", timeout=30_000)
    done = workflows.wait_done(arn)
    assert done["status"] == "SUCCEEDED"
    out = json.loads(done["output"])
    assert out["rejection"]["Error"] == "Rejected"
    cause = json.loads(out["rejection"]["Cause"])
    assert cause["decision"] == "rejected" and cause["comment"] == "Not during the freeze"
    expect(page.get_by_test_id("status")).to_have_attribute("data-status", "rejected", timeout=10_000)
    page.reload()
    expect(page.get_by_test_id("my-decision")).to_contain_text("You rejected this request")
    assert_no_secrets(tab, [task_token])


def test_expired_approval_shows_expired_and_cannot_be_decided(stack, workflows, api, tab):
    approval_id, arn, _ = register(workflows, api, timeout=3, timeoutSeconds=2, title="Short-lived request")
    time.sleep(3)
    page = open_signed_in(tab, stack, f"/a/{approval_id}")
    expect(page.get_by_test_id("status")).to_have_attribute("data-status", "expired")
    expect(page.get_by_test_id("status")).to_have_text("Expired")
    expect(page.get_by_test_id("expired-notice")).to_contain_text("expired")
    assert page.locator("[data-testid=approve]:enabled, [data-testid=reject]:enabled").count() == 0
    assert page.get_by_test_id("decision-form").count() == 0
    page.screenshot(path=str(ARTIFACTS / "spa-expired-mobile.png"), full_page=True)


def test_decided_unconfirmed_shows_the_verdict_and_cannot_be_decided(stack, workflows, api, browser):
    """A callback that may have been delivered, then the task closed: the verdict, marked unconfirmed, with who
    sent it (set up in D1 as the worker stores it: status + confirmed = 0 + the attempt record)."""
    from test_decision import d1

    approval_id, _, _ = register(workflows, api, title="Unconfirmed decision")
    now = int(time.time() * 1000)
    d1(stack, f"UPDATE approvals SET status = 'rejected', decision = 'rejected', confirmed = 0, task_token = NULL, "
              f"decided_at = {now}, attempt_id = 'c1', attempt_verdict = 'reject', attempt_sub = 'bob-sub', "
              f"attempt_by = 'bob@example.com', attempt_at = {now} WHERE id = '{approval_id}'; "
              f"UPDATE approval_principals SET open = 0, sort_at = {now} WHERE approval_id = '{approval_id}'")
    t = Tab(browser, locale="en-US")
    try:
        page = open_signed_in(t, stack, f"/a/{approval_id}")
        status = page.get_by_test_id("status")
        expect(status).to_have_attribute("data-status", "decided_unconfirmed")
        expect(status).to_have_attribute("data-verdict", "reject")
        expect(status).to_have_text("Rejected, unconfirmed")
        expect(page.get_by_test_id("unconfirmed-notice")).to_contain_text("bob@example.com")
        expect(page.get_by_test_id("unconfirmed-notice")).to_contain_text("did not confirm")
        assert page.locator("[data-testid=approve]:enabled, [data-testid=reject]:enabled").count() == 0
        assert page.get_by_test_id("decision-form").count() == 0
        page.screenshot(path=str(ARTIFACTS / "spa-unconfirmed-mobile.png"), full_page=True)
        page.get_by_test_id("language-switch").click()
        expect(status).to_have_text("却下（未確認）")
        expect(page.get_by_test_id("unconfirmed-notice")).to_contain_text("確認がありませんでした")
        page.get_by_test_id("language-switch").click()
        # The inbox's decided tab shows it the same way.
        page.goto(f"{stack.base_url}/?tab=decided")
        item = page.locator(f"[data-testid=inbox-item][data-id='{approval_id}']")
        expect(item.get_by_test_id("status")).to_have_text("Rejected, unconfirmed")
        expect(item.get_by_test_id("status")).to_have_attribute("data-verdict", "reject")
    finally:
        t.close()


def test_someone_elses_link_is_not_found(stack, workflows, api, tab):
    approval_id, arn, _ = register(workflows, api, approvers=[{"sub": sub("bob")}], title="Bob only")
    page = open_signed_in(tab, stack, f"/a/{approval_id}", user="alice")
    expect(page.get_by_test_id("approval-not-found")).to_be_visible()
    expect(page.get_by_test_id("approval-not-found")).to_contain_text("not addressed to you")
    assert "Bob only" not in page.content()
    # Unknown IDs look the same.
    page.goto(f"{stack.base_url}/a/{uuid.uuid4().hex[:20]}")
    expect(page.get_by_test_id("approval-not-found")).to_be_visible()


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
        t = Tab(browser, viewport=viewport, bypass_csp=True)
        try:
            page = t.page
            page.goto(f"{stack.base_url}/")
            # Signed out at the root: a landing card and an explicit sign-in.
            expect(page.get_by_test_id("welcome")).to_be_visible()
            if name == "mobile":
                page.screenshot(path=str(ARTIFACTS / "spa-welcome-mobile.png"))
            page.get_by_test_id("sign-in").click()
            sign_in_at_idp(page, stack, "carol")
            page.wait_for_url(f"{stack.base_url}/", timeout=30_000)
            items = page.get_by_test_id("inbox-item")
            mine = items.filter(has_text=title).filter(has_not_text="Quorum").filter(has_not_text="Decided")
            expect(mine).to_have_count(1)
            expect(mine).to_contain_text("Expires in")
            expect(mine.locator(".urgency--urgent")).to_have_count(1)  # 30 minutes left: urgent styling
            expect(mine).to_contain_text("ci@example.com")
            expect(mine).to_contain_text("0 of 1 approval")
            quorum = items.filter(has_text=f"Quorum {title}")
            expect(quorum).to_contain_text("0 of 2 approvals")
            expect(items.filter(has_text=f"Decided {title}")).to_have_count(0)
            expect(page.get_by_test_id("inbox-count")).to_contain_text("pending request")
            page.screenshot(path=str(ARTIFACTS / f"spa-inbox-{name}.png"), full_page=True)
            axe_check(page, f"inbox {name}")
            assert_no_secrets(t, [task_token])

            # Refresh keeps the list.
            page.get_by_test_id("refresh").click()
            expect(mine).to_have_count(1)
            # The decided tab.
            page.get_by_test_id("tab-decided").click()
            page.wait_for_url(f"{stack.base_url}/?tab=decided")
            decided = page.get_by_test_id("inbox-item").filter(has_text=f"Decided {title}")
            expect(decided).to_have_count(1)
            expect(decided.get_by_test_id("status")).to_have_text("Rejected")
            if name == "desktop":
                page.screenshot(path=str(ARTIFACTS / "spa-inbox-decided-desktop.png"), full_page=True)
            # Back to pending and open the request from the list.
            page.get_by_test_id("tab-pending").click()
            page.get_by_test_id("inbox-item").filter(has_text=title).filter(
                has_not_text="Quorum").get_by_role("link").click()
            page.wait_for_url(f"{stack.base_url}/a/{approval_id}")
            expect(page.get_by_test_id("approval-title")).to_have_text(title)
            if name == "desktop":
                page.screenshot(path=str(ARTIFACTS / "spa-approval-desktop.png"), full_page=True)
        finally:
            t.close()


def test_inbox_load_more(stack, api, tab):
    """More than one page (25): "Load more" fetches the next one with the cursor."""
    tag = uuid.uuid4().hex[:6]
    for i in range(27):
        r = api.register(f"token-{tag}-{i}", approvers=[{"sub": sub("dave")}], title=f"Bulk {tag} {i:02d}",
                         timeoutSeconds=3600 + i * 60)
        assert r.status_code == 201, r.text
    page = tab.page
    page.goto(f"{stack.base_url}/")
    page.get_by_test_id("sign-in").click()
    sign_in_at_idp(page, stack, "dave")
    page.wait_for_url(f"{stack.base_url}/")
    items = page.get_by_test_id("inbox-item")
    expect(items).to_have_count(25)
    expect(page.get_by_test_id("inbox-count")).to_contain_text("more available")
    page.get_by_test_id("load-more").click()
    expect(page.get_by_test_id("inbox-item").filter(has_text=f"Bulk {tag}")).to_have_count(27)
    ids = page.eval_on_selector_all("[data-testid=inbox-item]", "els => els.map(e => e.dataset.id)")
    assert len(ids) == len(set(ids)), "no item twice"


def test_accessibility_of_inbox_and_approval_pages(stack, workflows, api, browser):
    approval_id, _, _ = register(workflows, api, form=FORM, title="Accessibility check")
    for scheme in ("light", "dark"):
        t = Tab(browser, scheme=scheme, bypass_csp=True)
        try:
            page = open_signed_in(t, stack, f"/a/{approval_id}")
            expect(page.get_by_test_id("decision-form")).to_be_visible()
            axe_check(page, f"approval ({scheme})")
            # With validation errors shown too.
            page.get_by_test_id("approve").click()
            expect(page.locator("#field-ticket-error")).not_to_be_empty()
            axe_check(page, f"approval with errors ({scheme})")
            if scheme == "dark":
                page.screenshot(path=str(ARTIFACTS / "spa-approval-dark-mobile.png"), full_page=True)
            page.goto(f"{stack.base_url}/")
            expect(page.get_by_test_id("inbox-list")).to_be_visible()
            axe_check(page, f"inbox ({scheme})")
            if scheme == "dark":
                page.screenshot(path=str(ARTIFACTS / "spa-inbox-dark-mobile.png"), full_page=True)
        finally:
            t.close()


def test_keyboard_only_decision(stack, workflows, api, tab):
    """Tab order reaches the form and the buttons; Enter/Space work; the dialog takes focus."""
    approval_id, arn, _ = register(workflows, api, title="Keyboard decision")
    page = open_signed_in(tab, stack, f"/a/{approval_id}")
    page.locator("#comment").focus()
    page.keyboard.type("via keyboard")
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.dataset.testid") == "approve"
    page.keyboard.press("Enter")
    expect(page.get_by_test_id("confirm-dialog")).to_be_visible()
    assert page.evaluate("document.activeElement.dataset.testid") == "confirm-cancel"
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.dataset.testid") == "confirm-decision"
    page.keyboard.press("Space")
    expect(page.get_by_test_id("decision-result")).to_have_attribute("data-result", "approved", timeout=30_000)
    assert workflows.wait_done(arn)["status"] == "SUCCEEDED"


def test_401_signs_in_again_and_comes_back_with_the_form_filled(stack, workflows, api, tab):
    approval_id, arn, _ = register(workflows, api, form=FORM, title="Re-authentication keeps the draft")
    page = open_signed_in(tab, stack, f"/a/{approval_id}")
    fill_form(page)
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
    page.get_by_test_id("approve").click()
    page.get_by_test_id("confirm-decision").click()
    # Silent round trip through the Hosted UI (its session is still valid): back on the same page.
    page.wait_for_url(f"{stack.base_url}/a/{approval_id}", timeout=30_000)
    expect(page.get_by_test_id("draft-restored")).to_be_visible(timeout=30_000)
    assert any("/oauth2/authorize" in u for u in tab.navigations[-8:]), tab.navigations
    assert refused
    assert workflows.status(arn) == "RUNNING", "nothing is decided by coming back"
    # The form is intact; a new token was issued.
    expect(page.locator("#field-ticket")).to_have_value("CHG-1234")
    expect(page.locator("#field-risk-1")).to_be_checked()
    expect(page.locator("#field-region")).to_have_value("ap-northeast-1")
    expect(page.locator("#field-rollback")).to_have_value("15")
    expect(page.locator("#field-tested")).to_be_checked()
    expect(page.locator("#comment")).to_have_value("Looks good, ship it")
    assert page.evaluate("JSON.parse(sessionStorage.getItem('ringi.session')).bearer") != first_token
    assert page.evaluate("sessionStorage.getItem('ringi.draft." + approval_id + "')") is None
    page.get_by_test_id("approve").click()
    page.get_by_test_id("confirm-decision").click()
    expect(page.get_by_test_id("decision-result")).to_have_attribute("data-result", "approved", timeout=30_000)
    out = json.loads(workflows.wait_done(arn)["output"])
    assert out["approval"]["feedback"] == EXPECTED_FEEDBACK


def test_network_failure_keeps_the_form_and_retry_succeeds(stack, workflows, api, tab):
    approval_id, arn, _ = register(workflows, api, form=FORM, title="Retry after 503")
    page = open_signed_in(tab, stack, f"/a/{approval_id}")
    fill_form(page)
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
    page.get_by_test_id("approve").click()
    page.get_by_test_id("confirm-decision").click()
    err = page.get_by_test_id("decision-error")
    expect(err).to_have_attribute("data-code", "unavailable")
    expect(err).to_contain_text("Nothing was decided")
    expect(page.locator("#field-ticket")).to_have_value("CHG-1234")
    page.screenshot(path=str(ARTIFACTS / "spa-retry-mobile.png"), full_page=True)
    page.get_by_test_id("retry").click()
    expect(err).to_have_attribute("data-code", "unavailable")  # the network is down this time
    assert workflows.status(arn) == "RUNNING"
    page.get_by_test_id("retry").click()
    expect(page.get_by_test_id("decision-result")).to_have_attribute("data-result", "approved", timeout=30_000)
    assert json.loads(workflows.wait_done(arn)["output"])["approval"]["feedback"] == EXPECTED_FEEDBACK


def test_server_field_errors_show_next_to_the_field(stack, workflows, api, tab):
    approval_id, arn, _ = register(workflows, api, form=FORM, title="Field error from the server")
    page = open_signed_in(tab, stack, f"/a/{approval_id}")
    fill_form(page)
    page.route("**/api/v1/approvals/*/decision", lambda route: route.fulfill(
        status=400, content_type="application/json",
        body=json.dumps({"error": {"code": "invalid_request", "message": "must be one of the options",
                                   "field": "feedback.region"}})))
    page.get_by_test_id("approve").click()
    page.get_by_test_id("confirm-decision").click()
    expect(page.locator("#field-region-error")).to_contain_text("must be one of the options")
    expect(page.locator("#field-region")).to_have_attribute("aria-invalid", "true")
    # Focus moves after the message renders: wait for it rather than reading it once.
    expect(page.locator("#field-region")).to_be_focused()
    assert workflows.status(arn) == "RUNNING"


def test_conflict_after_someone_else_decided_explains_and_reloads(stack, workflows, api, tab):
    approval_id, arn, _ = register(workflows, api, approvers=[{"group": "finance"}], title="Race with carol")
    page = open_signed_in(tab, stack, f"/a/{approval_id}")
    expect(page.get_by_test_id("decision-form")).to_be_visible()
    # carol (also in finance) decides first.
    assert api.decide(approval_id, "approve", as_user=sub("carol"), groups=["finance"]).status_code == 200
    page.get_by_test_id("reject").click()
    page.get_by_test_id("confirm-decision").click()
    err = page.get_by_test_id("decision-error")
    expect(err).to_have_attribute("data-code", "already_decided")
    expect(err).to_contain_text("Someone else decided")
    expect(page.get_by_test_id("status")).to_have_attribute("data-status", "approved", timeout=10_000)
    expect(page.get_by_test_id("history")).to_contain_text("approved")
    assert workflows.wait_done(arn)["status"] == "SUCCEEDED"


def test_an_approval_for_a_satisfied_principal_is_explained(stack, workflows, api, tab):
    """`all` over finance and bob: once carol approved for finance, alice (also finance) is told that her
    group has approved and bob has to decide; nothing is recorded for her."""
    approval_id, arn, _ = register(workflows, api, approvers=[{"group": "finance"}, {"sub": sub("bob")}],
                                   quorum="all", title="Finance and bob")
    assert api.decide(approval_id, as_user=sub("carol"), groups=["finance"]).json()["status"] == "pending"
    page = open_signed_in(tab, stack, f"/a/{approval_id}")
    page.get_by_test_id("approve").click()
    page.get_by_test_id("confirm-decision").click()
    err = page.get_by_test_id("decision-error")
    expect(err).to_have_attribute("data-code", "already_satisfied")
    expect(err).to_contain_text("Another listed approver has to decide")
    assert workflows.status(arn) == "RUNNING"
    assert len(api.get(approval_id, as_user=sub("bob")).json()["decisions"]) == 1, "only carol's approval"


def test_quorum_progress_after_my_approval(stack, workflows, api, tab):
    approval_id, arn, _ = register(workflows, api, approvers=[{"sub": sub("alice")}, {"sub": sub("carol")}],
                                   quorum="all", title="Two approvers needed")
    page = open_signed_in(tab, stack, f"/a/{approval_id}")
    page.get_by_test_id("approve").click()
    page.get_by_test_id("confirm-decision").click()
    result = page.get_by_test_id("decision-result")
    expect(result).to_have_attribute("data-result", "pending", timeout=30_000)
    expect(result).to_contain_text("1 of 2 approvals")
    expect(page.get_by_test_id("approve")).to_have_count(0)
    assert workflows.status(arn) == "RUNNING"
    page.reload()
    expect(page.get_by_test_id("status")).to_have_attribute("data-status", "pending")
    expect(page.get_by_test_id("my-decision")).to_contain_text("Waiting for other approvers: 1 of 2")
    expect(page.get_by_test_id("approve")).to_have_count(0)
    # carol completes the quorum; the execution resumes.
    assert api.decide(approval_id, "approve", as_user=sub("carol")).status_code == 200
    assert workflows.wait_done(arn)["status"] == "SUCCEEDED"


def test_japanese_language_switch_is_remembered(stack, workflows, api, browser):
    approval_id, _, _ = register(workflows, api, form=FORM, title="言語の切り替え")
    t = Tab(browser, locale="en-US")
    try:
        page = open_signed_in(t, stack, f"/a/{approval_id}")
        expect(page.get_by_test_id("approve")).to_contain_text("Approve")
        page.get_by_test_id("language-switch").click()
        expect(page.get_by_test_id("approve")).to_contain_text("承認する")
        assert page.evaluate("document.documentElement.lang") == "ja"
        assert page.evaluate("localStorage.getItem('ringi.locale')") == "ja"
        page.screenshot(path=str(ARTIFACTS / "spa-approval-ja-mobile.png"), full_page=True)
        page.reload()
        expect(page.get_by_test_id("approve")).to_contain_text("承認する")
        page.get_by_test_id("language-switch").click()
        expect(page.get_by_test_id("approve")).to_contain_text("Approve")
    finally:
        t.close()
    # A Japanese browser starts in Japanese.
    t = Tab(browser, locale="ja-JP")
    try:
        t.page.goto(f"{stack.base_url}/")
        expect(t.page.get_by_test_id("sign-in")).to_have_text("サインイン")
    finally:
        t.close()


def test_sign_out_clears_the_session_and_ends_the_hosted_ui_session(stack, workflows, api, tab):
    approval_id, _, _ = register(workflows, api, title="Sign-out check")
    page = open_signed_in(tab, stack, f"/a/{approval_id}")
    page.get_by_test_id("sign-out").click()
    page.wait_for_url(f"{stack.base_url}/", timeout=30_000)
    expect(page.get_by_test_id("signed-out")).to_be_visible()
    assert page.evaluate("sessionStorage.getItem('ringi.session')") is None
    assert any(u.startswith(f"{stack.idp_url}/logout?client_id=") for u in tab.navigations), tab.navigations
    # The Hosted UI session is gone too: the next sign-in asks for the password again.
    page.get_by_test_id("sign-in").click()
    page.wait_for_url(f"{stack.idp_url}/**")
    expect(page.locator("input[name=password]")).to_be_visible()


def test_a_stale_or_foreign_callback_is_refused(stack, tab):
    page = tab.page
    page.goto(f"{stack.base_url}/auth/callback?code=abc&state=forged")
    expect(page.get_by_test_id("sign-in-error")).to_be_visible()
    assert "code=" not in page.url and "state=" not in page.url
    assert page.evaluate("sessionStorage.getItem('ringi.session')") is None


def _jwt_claims(bearer: str) -> dict:
    import base64
    payload = bearer.split(" ", 1)[1].split(".")[1]
    return json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))


@pytest.mark.parametrize("token_use", ["access", "id"])
def test_the_spa_sends_the_token_the_worker_takes(stack, workflows, browser, token_use):
    """`TOKEN_USE` (in /config.json) picks the bearer: with `id`, a stock Cognito pool's ID token carries the
    verified email, so an `{email}` approver can decide (an access token has no email)."""
    from conftest import Api
    if token_use == "access":
        base, approvers = stack.base_url, [{"sub": sub("alice")}]
    else:
        base = stack.extra_worker("idtokens", {"TOKEN_USE": "id"}, signs_in=True)
        approvers = [{"email": USERS["alice"]["email"]}]
    arn, task_token = workflows.start_paused()
    r = Api(stack, base).register(task_token, approvers=approvers)
    assert r.status_code == 201, r.text
    approval_id = r.json()["id"]
    t = Tab(browser)
    try:
        bearers = []
        t.page.on("request", lambda q: bearers.append(q.headers["authorization"])
                  if "/api/v1/" in q.url and "authorization" in q.headers else None)
        page = t.page
        page.goto(f"{base}/a/{approval_id}")
        sign_in_at_idp(page, stack, "alice")
        page.wait_for_url(f"{base}/a/{approval_id}", timeout=30_000)
        expect(page.get_by_test_id("approval-title")).to_have_text("Deploy v2 to production")
        expect(page.get_by_test_id("user-name")).to_have_text("alice")
        claims = _jwt_claims(bearers[-1])
        assert claims["token_use"] == token_use
        if token_use == "id":
            assert claims["aud"] == stack.client_id and claims["email"] == USERS["alice"]["email"]
        page.get_by_test_id("approve").click()
        page.get_by_test_id("confirm-decision").click()
        expect(page.get_by_test_id("decision-result")).to_have_attribute("data-result", "approved", timeout=30_000)
        assert workflows.wait_done(arn)["status"] == "SUCCEEDED"
        assert {_jwt_claims(b)["token_use"] for b in bearers} == {token_use}
        assert_no_secrets(t, [task_token])
    finally:
        t.close()
