"""The decision before the wasm, in Chromium against the real stack: an emailed link opened with a session in the
tab gets app/boot.js's decision form under the prefetched approval (its feedback fields, the comment, Approve /
Reject with their confirmation, the same POST as the app's), so a phone on a slow network decides without waiting
for the wasm — and still can when the wasm never arrives. When the wasm does arrive the app takes over: what was
typed (and where the caret was) goes on in the app's form, and a decision already sent shows as made."""
from __future__ import annotations

import json

from playwright.sync_api import expect

from support import ARTIFACTS
from support.pages import DECISION_TIMEOUT, Tab, sub
from test_first_load import register, with_session
from test_spa import EXPECTED_FEEDBACK, FORM

# A phone network slow enough that the wasm takes seconds while the HTML, boot.js and the approval take a moment.
SLOW = {"offline": False, "latency": 0, "downloadThroughput": 40_000, "uploadThroughput": 40_000}
FAST = {"offline": False, "latency": 0, "downloadThroughput": -1, "uploadThroughput": -1}


def throttle(tab: Tab, conditions: dict):
    cdp = tab.ctx.new_cdp_session(tab.page)
    cdp.send("Network.enable")
    cdp.send("Network.emulateNetworkConditions", conditions)
    return cdp


def output(workflows, arn: str) -> dict:
    done = workflows.wait_done(arn)
    assert done["status"] == "SUCCEEDED", done
    return json.loads(done["output"])


def test_the_boot_form_decides_without_the_wasm(stack, workflows, api, browser):
    arn, token = workflows.start_paused(300)
    r = api.register(token, approvers=[{"sub": sub("alice")}], title="Ship the settlement batch", form=FORM,
                     context={"executionArn": arn, "stateName": "RequestApproval"})
    assert r.status_code == 201, r.text
    approval_id = r.json()["id"]
    posts = []
    with Tab(browser) as tab:
        with_session(tab, stack)
        tab.page.route("**/*.wasm", lambda route: route.abort())
        tab.page.on("request", lambda q: posts.append(q.url) if q.method == "POST" else None)
        page = tab.page
        page.goto(f"{stack.base_url}/a/{approval_id}")
        form = page.get_by_test_id("boot-form")
        expect(form).to_be_visible(timeout=30_000)
        # The app never starts, and says so; the form stays.
        expect(page.locator("#boot-status")).to_have_text("The app could not start. Please reload the page.",
                                                          timeout=30_000)
        expect(form.get_by_role("heading", level=2)).to_have_text("Your decision")
        for field in FORM:
            expect(page.get_by_test_id(f"boot-field-{field['name']}")).to_contain_text(field["label"])
        expect(page.get_by_test_id("boot-field-ticket")).to_contain_text("required")
        expect(page.get_by_test_id("boot-field-ticket")).to_contain_text("The change-management ticket")
        # The app's controls: three options as radios, six as a select.
        assert page.locator("[data-testid=boot-field-risk] input[type=radio]").count() == 3
        assert page.locator("#boot-field-region option").count() == 7
        assert page.locator("#boot-field-ticket").get_attribute("maxlength") == "20"
        assert page.locator("#boot-comment").get_attribute("maxlength") == "4000"

        # Required fields empty: the browser's check stops it before the confirmation, nothing is sent.
        page.get_by_test_id("boot-approve").click()
        expect(page.get_by_test_id("boot-confirm-dialog")).not_to_be_visible()
        # A number out of its bounds likewise.
        page.locator("#boot-field-ticket").fill("CHG-1234")
        page.locator("#boot-field-risk-1").check()
        page.locator("#boot-field-rollback").fill("500")
        page.get_by_test_id("boot-approve").click()
        expect(page.get_by_test_id("boot-confirm-dialog")).not_to_be_visible()
        assert not [u for u in posts if u.endswith("/decision")], posts

        # Blanks pass the browser's `required` but not the worker's rule: its message lands next to the field.
        page.locator("#boot-field-ticket").fill("   ")
        page.locator("#boot-field-rollback").fill("15")
        page.get_by_test_id("boot-approve").click()
        dialog = page.get_by_test_id("boot-confirm-dialog")
        expect(dialog).to_be_visible()
        expect(dialog).to_contain_text("Approve this request?")
        expect(dialog).to_contain_text("Ship the settlement batch")
        expect(page.get_by_test_id("boot-confirm-cancel")).to_be_focused()
        page.get_by_test_id("boot-confirm-decision").click()
        expect(page.get_by_test_id("boot-error")).to_have_text("Please correct the marked fields.",
                                                               timeout=DECISION_TIMEOUT)
        expect(page.locator("#boot-field-ticket-error")).not_to_be_empty()
        expect(page.locator("#boot-field-ticket")).to_have_attribute("aria-invalid", "true")
        expect(page.locator("#boot-field-ticket")).to_be_focused()
        assert api.get(approval_id, as_user=sub("alice")).json()["status"] == "pending", "a refused decision decides nothing"

        # Corrected: typing clears the mark; the decision goes to the workflow with every answer typed.
        page.locator("#boot-field-ticket").fill("CHG-1234")
        expect(page.locator("#boot-field-ticket-error")).to_be_empty()
        page.locator("#boot-field-region").select_option("ap-northeast-1")
        page.locator("#boot-field-notes").fill(EXPECTED_FEEDBACK["notes"])
        page.locator("#boot-field-tested").check()
        page.locator("#boot-comment").fill("Looks good, ship it")
        # Cancel decides nothing.
        page.get_by_test_id("boot-approve").click()
        page.get_by_test_id("boot-confirm-cancel").click()
        expect(dialog).not_to_be_visible()
        page.get_by_test_id("boot-approve").click()
        page.get_by_test_id("boot-confirm-decision").click()
        result = page.get_by_test_id("boot-result")
        expect(result).to_have_attribute("data-result", "approved", timeout=DECISION_TIMEOUT)
        expect(result).to_have_text("Approved. The workflow continues.")
        expect(page.get_by_test_id("boot-approve")).to_have_count(0)
        page.screenshot(path=ARTIFACTS / "boot-form-decided-mobile.png", full_page=True)
        out = output(workflows, arn)["approval"]
        assert out["decision"] == "approved" and out["feedback"] == EXPECTED_FEEDBACK, out
        assert out["comment"] == "Looks good, ship it"
        assert not tab.csp_problems(), tab.problems


def test_a_rejection_in_japanese_before_the_wasm(stack, workflows, api, browser):
    approval_id = register(workflows, api, "Rotate the key")
    with Tab(browser, locale="ja-JP") as tab:
        with_session(tab, stack)
        tab.page.route("**/*.wasm", lambda route: route.abort())
        page = tab.page
        page.goto(f"{stack.base_url}/a/{approval_id}")
        expect(page.get_by_test_id("boot-reject")).to_have_text("✕ 却下する", timeout=30_000)
        page.locator("#boot-comment").fill("鍵の期限はまだ先です")
        page.get_by_test_id("boot-reject").click()
        expect(page.get_by_test_id("boot-confirm-dialog")).to_contain_text("この依頼を却下しますか？")
        page.get_by_test_id("boot-confirm-decision").click()
        expect(page.get_by_test_id("boot-result")).to_have_text("却下しました。ワークフローに通知されました。",
                                                                timeout=DECISION_TIMEOUT)
        view = api.get(approval_id, as_user=sub("alice")).json()
        assert view["status"] == "rejected" and view["decisions"][0]["comment"] == "鍵の期限はまだ先です"


def test_the_app_takes_over_what_was_typed(stack, workflows, api, browser):
    arn, token = workflows.start_paused(300)
    r = api.register(token, approvers=[{"sub": sub("alice")}], title="Handed over", form=FORM,
                     context={"executionArn": arn, "stateName": "RequestApproval"})
    approval_id = r.json()["id"]
    with Tab(browser) as tab:
        with_session(tab, stack)
        cdp = throttle(tab, SLOW)
        page = tab.page
        page.goto(f"{stack.base_url}/a/{approval_id}")
        expect(page.get_by_test_id("boot-form")).to_be_visible(timeout=30_000)
        assert page.evaluate("document.querySelector('.app') === null"), "typed before the app has started"
        page.locator("#boot-field-ticket").fill("CHG-1234")
        page.locator("#boot-field-risk-2").check()
        page.locator("#boot-field-region").select_option("eu-west-1")
        page.locator("#boot-field-tested").check()
        page.locator("#boot-comment").fill("typed before the wasm")
        assert page.evaluate("document.querySelector('.app') === null"), "the wasm came before the typing ended"
        cdp.send("Network.emulateNetworkConditions", FAST)
        # The app's own form, with the answers and the caret where they were; nothing to announce.
        expect(tab.approval.title).to_have_text("Handed over", timeout=90_000)
        expect(page.get_by_test_id("boot-form")).to_have_count(0)
        expect(tab.approval.field("ticket")).to_have_value("CHG-1234")
        expect(tab.approval.field("risk-2")).to_be_checked()
        expect(tab.approval.field("region")).to_have_value("eu-west-1")
        expect(tab.approval.field("tested")).to_be_checked()
        expect(tab.approval.comment).to_have_value("typed before the wasm")
        expect(tab.approval.comment).to_be_focused()
        expect(page.get_by_test_id("draft-restored")).to_have_count(0)
        assert page.evaluate(f"sessionStorage.getItem('ringi.draft.{approval_id}')") is None, "the draft is taken"
        tab.approval.field("rollback").fill("15")
        tab.approval.decide("approve")
        tab.approval.expect_result("approved")
        out = output(workflows, arn)["approval"]
        assert out["feedback"] == {"ticket": "CHG-1234", "risk": "high", "region": "eu-west-1", "rollback": 15,
                                   "tested": True}, out
        assert out["comment"] == "typed before the wasm"
        assert not tab.problems, tab.problems


def test_a_decision_sent_before_the_wasm_shows_as_made_in_the_app(stack, workflows, api, browser):
    arn, token = workflows.start_paused(300)
    approval_id = api.register(token, approvers=[{"sub": sub("alice")}], title="Decided early",
                               context={"executionArn": arn, "stateName": "RequestApproval"}).json()["id"]
    with Tab(browser) as tab:
        with_session(tab, stack)
        cdp = throttle(tab, SLOW)
        page = tab.page
        page.goto(f"{stack.base_url}/a/{approval_id}")
        page.get_by_test_id("boot-approve").click(timeout=30_000)
        page.get_by_test_id("boot-confirm-decision").click()
        expect(page.get_by_test_id("boot-result")).to_have_attribute("data-result", "approved",
                                                                     timeout=DECISION_TIMEOUT)
        assert page.evaluate("document.querySelector('.app') === null"), "decided before the app started"
        cdp.send("Network.emulateNetworkConditions", FAST)
        # The app loads the approval afresh (not the prefetched pending one): decided, no form to decide again.
        expect(tab.approval.title).to_have_text("Decided early", timeout=90_000)
        expect(page.get_by_test_id("my-decision")).to_be_visible()
        expect(page.get_by_test_id("decision-form")).to_have_count(0)
        expect(tab.approval.approve_button).to_have_count(0)
        assert output(workflows, arn)["approval"]["decision"] == "approved"
        assert not tab.problems, tab.problems


def test_no_boot_form_where_the_app_would_show_none(stack, workflows, api, browser):
    """Decided already, or the caller has voted: the preview only (the app says why there is no form)."""
    arn, token = workflows.start_paused(300)
    approval_id = api.register(token, approvers=[{"sub": sub("alice")}, {"sub": sub("bob")}], quorum="all",
                               title="Alice voted", context={"executionArn": arn}).json()["id"]
    assert api.decide(approval_id, as_user=sub("alice")).status_code == 200
    with Tab(browser) as tab:
        with_session(tab, stack)
        tab.page.route("**/*.wasm", lambda route: route.abort())
        tab.page.goto(f"{stack.base_url}/a/{approval_id}")
        expect(tab.page.get_by_test_id("approval-preview")).to_be_visible(timeout=30_000)
        expect(tab.page.locator("#boot-status")).to_have_text("The app could not start. Please reload the page.",
                                                              timeout=30_000)
        expect(tab.page.get_by_test_id("boot-form")).to_have_count(0)
