"""Page objects of the approver SPA and the Hosted UI stand-in, so that browser tests read as scenarios: a `Tab`
(one browser context recording what it saw), `HostedUi` (the sign-in form), `ApprovalPage` (/a/{id}) and
`InboxPage` (/). They wrap selectors and waits only: the tests keep their assertions."""
from __future__ import annotations

import json
import re

from playwright.sync_api import Locator, Page, expect

from . import ROOT

USERS = {u["username"]: u for u in json.loads((ROOT / "standins/oidc/users.json").read_text())}
PASSWORD = "Passw0rd!"
MOBILE = {"width": 375, "height": 812}
DESKTOP = {"width": 1280, "height": 800}
AXE = ROOT / "node_modules/axe-core/axe.min.js"
# A compact JWS: three base64url segments (the first starts with "eyJ", a JSON object).
JWT_RE = re.compile(r"eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}")
# The sign-in's own module (sign-in/, scripts/build/sign-in.mjs), which the callback page runs before the app.
SIGN_IN_MODULE = re.compile(r"/ringi-sign-in-[0-9a-f]{16}_bg\.wasm$")
# How long a decision may take to come back (the callback to Step Functions included).
DECISION_TIMEOUT = 30_000


def sub(user: str) -> str:
    """The `sub` of a demo user of the Hosted UI stand-in (standins/oidc/users.json)."""
    return USERS[user]["sub"]


def by_test_id(test_id: str) -> property:
    """A page object's attribute: the element(s) with `data-testid=test_id`."""
    return property(lambda self: self.page.get_by_test_id(test_id))


def clicks(test_id: str, doc: str = "") -> callable:
    """A page object's action: a click on the element with `data-testid=test_id`."""
    def click(self) -> None:
        self.page.get_by_test_id(test_id).click()
    click.__doc__ = doc or f"Clicks {test_id}."
    return click


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

    def __enter__(self) -> "Tab":
        return self

    def __exit__(self, *exc):
        self.close()

    def csp_problems(self):
        return [p for p in self.problems if "Content Security Policy" in p or "Refused to" in p]

    def open_signed_in(self, stack, path: str, user="alice", base_url: str | None = None) -> Page:
        """Opens `path` signed out, signs in at the IdP, waits until the SPA is back on `path`."""
        base = base_url or stack.base_url
        self.page.goto(f"{base}{path}")
        HostedUi(self.page, stack).sign_in(user)
        self.page.wait_for_url(f"{base}{path}", timeout=30_000)
        return self.page

    @property
    def approval(self) -> "ApprovalPage":
        return ApprovalPage(self.page)

    @property
    def inbox(self) -> "InboxPage":
        return InboxPage(self.page)


class HostedUi:
    """The Hosted UI stand-in's sign-in form (the browser is sent there by the SPA)."""

    def __init__(self, page: Page, stack):
        self.page, self.stack = page, stack

    def wait(self) -> "HostedUi":
        self.page.wait_for_url(f"{self.stack.idp_url}/**", timeout=30_000)
        return self

    @property
    def password(self) -> Locator:
        return self.page.locator("input[name=password]")

    def sign_in(self, user="alice") -> None:
        self.wait()
        self.page.fill("input[name=username]", user)
        self.page.fill("input[name=password]", PASSWORD)
        self.page.click("input[name=signInSubmitButton]")


class _View:
    def __init__(self, page: Page):
        self.page = page

    def by(self, test_id: str) -> Locator:
        return self.page.get_by_test_id(test_id)

    status = by_test_id("status")

    switch_language = clicks("language-switch")

    def screenshot(self, path, full_page=True) -> None:
        self.page.screenshot(path=str(path), full_page=full_page)


class ApprovalPage(_View):
    """/a/{id}: the request, its decision form, the confirmation dialog and the outcome."""

    title = by_test_id("approval-title")
    approve_button = by_test_id("approve")
    dialog = by_test_id("confirm-dialog")
    error = by_test_id("decision-error")
    result = by_test_id("decision-result")
    audit_entries = by_test_id("audit-entry")

    @property
    def enabled_decision_buttons(self) -> Locator:
        return self.page.locator("[data-testid=approve]:enabled, [data-testid=reject]:enabled")

    def field(self, name: str) -> Locator:
        return self.page.locator(f"#field-{name}")

    def field_error(self, name: str) -> Locator:
        return self.page.locator(f"#field-{name}-error")

    @property
    def comment(self) -> Locator:
        return self.page.locator("#comment")

    def fill_form(self, ticket="CHG-1234", risk="medium", rollback="15") -> None:
        """The form of test_spa's FORM, filled the way EXPECTED_FEEDBACK says."""
        self.field("ticket").fill(ticket)
        self.field(f"risk-{['low', 'medium', 'high'].index(risk)}").check()
        self.field("region").select_option("ap-northeast-1")
        self.field("rollback").fill(rollback)
        self.field("notes").fill("Watch the settlement dashboard.\nPage me if p99 > 2s.")
        self.field("tested").check()
        self.comment.fill("Looks good, ship it")

    approve = clicks("approve", "Clicks Approve (a valid form opens the confirmation dialog).")
    reject = clicks("reject")
    confirm = clicks("confirm-decision")
    cancel = clicks("confirm-cancel")

    def decide(self, verdict: str = "approve") -> None:
        """Approve or reject, then confirm."""
        self.by(verdict).click()
        self.confirm()

    def expect_result(self, result: str) -> Locator:
        """Waits for the outcome of a decision (`approved`, `rejected`, `pending` for a quorum vote)."""
        expect(self.result).to_have_attribute("data-result", result, timeout=DECISION_TIMEOUT)
        return self.result

    retry = clicks("retry")

    def focused_test_id(self) -> str | None:
        return self.page.evaluate("document.activeElement.dataset.testid")


class InboxPage(_View):
    """/: the signed-out welcome card, or the caller's pending / decided approvals."""

    items = by_test_id("inbox-item")

    def item(self, approval_id: str) -> Locator:
        return self.page.locator(f"[data-testid=inbox-item][data-id='{approval_id}']")

    def item_ids(self) -> list[str]:
        return self.page.eval_on_selector_all("[data-testid=inbox-item]", "els => els.map(e => e.dataset.id)")

    count = by_test_id("inbox-count")

    def sign_in(self, stack, user: str) -> None:
        """From the signed-out landing card: the explicit sign-in, back on the inbox."""
        self.by("sign-in").click()
        HostedUi(self.page, stack).sign_in(user)
        self.page.wait_for_url(f"{stack.base_url}/", timeout=30_000)

    def show_decided(self, stack) -> None:
        self.by("tab-decided").click()
        self.page.wait_for_url(f"{stack.base_url}/?tab=decided")

    show_pending = clicks("tab-pending")
    refresh = clicks("refresh")
    load_more = clicks("load-more")


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


def axe_check(page: Page, name: str):
    page.add_script_tag(path=str(AXE))
    result = page.evaluate("""async () => {
        const r = await axe.run(document, {resultTypes: ['violations']});
        return r.violations.map(v => ({id: v.id, impact: v.impact, help: v.help,
                                       nodes: v.nodes.map(n => n.target.join(' ')).slice(0, 5)}));
    }""")
    bad = [v for v in result if v["impact"] in ("serious", "critical")]
    assert not bad, f"{name}: {json.dumps(bad, indent=1)}"
    return result
