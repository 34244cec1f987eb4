"""Reminders at their times and escalation on a schedule, against workerd + moto (SES v2 and Step Functions
executing real paused workflows), driven by the cron trigger (`--test-scheduled`) with schedules of seconds, on
both storage backends (local D1, and DynamoDB in moto): reminders only to approvers who have not voted,
escalation principals added (mailed, in their inbox, able to decide — the quorum's bar unchanged), every mail
once however often and however concurrently the cron runs, nothing for an approval closed before its schedule;
on D1 also typed validation errors, the SPA's schedule and escalated states on a phone (axe-core clean), and the
schedule's D1 calls made to fail."""
from __future__ import annotations

import json
import secrets
import threading
import time

import requests
from playwright.sync_api import expect

from support import ARTIFACTS
from support.api import d1
from support.pages import DESKTOP, Tab, axe_check, sub


def addr(name: str) -> str:
    return f"{name}-{secrets.token_hex(4)}@example.com"


def mails_to(stack, address, prefix=""):
    return [m for m in stack.sent_mail()
            if address in m["destinations"]["ToAddresses"] and m["subject"].startswith(prefix)]


def wait_mails(stack, address, n, prefix="", timeout=15.0):
    """Mails that go out after a response (the request mail) or a cron run: until `n` are there, then a moment
    longer, so that an unexpected extra one would show up too."""
    def mine(messages):
        return [m for m in messages if address in m["destinations"]["ToAddresses"] and m["subject"].startswith(prefix)]
    stack.wait_mail(lambda messages: len(mine(messages)) >= n, timeout)
    time.sleep(0.5)
    return mine(stack.sent_mail())


def inbox(backend, user, **claims):
    return backend.inbox(user, **claims)["items"]


def until(t0: float, seconds: float):
    """Sleeps until `seconds` after `t0` (monotonic): the schedule's times are seconds after registration. Only
    for the test kept on the real clock; the others move the test clock (`clock.advance`)."""
    time.sleep(max(0.0, t0 + seconds - time.monotonic()))


def not_yet(backend, t0: float, due: float):
    """A cron run that must find nothing due: it has to end before `due` seconds after `t0`, else the
    assertions after it would test nothing (a loaded machine), so the test says so rather than fail on a mail."""
    backend.run_cron()
    elapsed = time.monotonic() - t0
    assert elapsed < due, f"the cron run ended {elapsed:.1f} s after registration, not before the schedule's {due} s"


# The schedule's times, seconds after registration, reached by moving the test clock: far enough out that the
# request mails, the view and a cron run on the real clock fit before the first even on a loaded 2-core machine.
FIRST, SECOND = 60, 120
REMINDER = "[ringi] Reminder"
ESCALATED = "[ringi] Escalated"


def test_reminders_at_their_times_go_only_to_approvers_who_have_not_voted(stack, backend, clock):
    api = backend.api
    a, b = addr("rem-a"), addr("rem-b")
    t0 = time.monotonic()
    r = api.register("tok-" + secrets.token_hex(8), approvers=[{"email": a}, {"email": b}], quorum="all",
                     timeoutSeconds=600, reminders=[f"PT{FIRST}S", {"beforeExpiry": f"PT{600 - SECOND}S"}])
    assert r.status_code == 201, r.text
    approval_id = r.json()["id"]
    assert len(wait_mails(stack, a, 1)) == 1 and len(wait_mails(stack, b, 1)) == 1
    schedule = api.get(approval_id, as_user="a-sub", email=a).json()["schedule"]
    assert [x.get("sentAt") for x in schedule["reminders"]] == [None, None] and schedule["escalation"] is None
    # Not due yet: nothing.
    not_yet(backend, t0, FIRST)
    assert mails_to(stack, a, REMINDER) == [] and mails_to(stack, b, REMINDER) == []
    # a votes (the quorum needs both): from now on only b is reminded.
    assert api.decide(approval_id, as_user="a-sub", email=a).json()["status"] == "pending"
    clock.advance(FIRST)
    backend.run_cron()
    backend.run_cron()
    [first] = wait_mails(stack, b, 1, REMINDER)
    assert approval_id in first["body"] and "still waiting for your decision" in first["body"]
    assert mails_to(stack, a, REMINDER) == [], "a voted: no reminder"
    view = api.get(approval_id, as_user="b-sub", email=b).json()["schedule"]
    assert view["reminders"][0]["sentAt"] and "sentAt" not in view["reminders"][1]
    # The one before expiry (`600 - SECOND` s before a 600 s expiry: SECOND s after registration).
    clock.advance(SECOND - FIRST)
    backend.run_cron()
    assert len(wait_mails(stack, b, 2, REMINDER)) == 2 and mails_to(stack, a, REMINDER) == []
    reminders = api.get(approval_id, as_user="b-sub", email=b).json()["schedule"]["reminders"]
    # Both sent; and no default reminder before expiry on top (its own replace it).
    assert len(reminders) == 2 and all(x.get("sentAt") for x in reminders), reminders
    backend.run_cron()
    assert len(wait_mails(stack, b, 2, REMINDER)) == 2, "each reminder once"
    # Recorded, once each, by ringi itself.
    reminded = backend.events(approval_id, "reminded")
    assert [(e["actor"], e["detail"]) for e in reminded] == [("system", {"recipients": 1})] * 2


def test_escalation_adds_principals_who_are_mailed_see_it_in_their_inbox_and_decide(stack, backend, workflows, clock):
    api = backend.api
    first, second, boss = addr("esc-1"), addr("esc-2"), addr("esc-boss")
    arn, token = workflows.start_paused(300)
    t0 = time.monotonic()
    r = api.register(token, approvers=[{"email": first}, {"email": second}], quorum="all", timeoutSeconds=290,
                     escalation={"after": f"PT{FIRST}S", "to": [{"email": boss}], "note": "No answer from the team <yet>"},
                     context={"executionArn": arn, "stateName": "RequestApproval"})
    assert r.status_code == 201, r.text
    approval_id = r.json()["id"]
    wait_mails(stack, first, 1)
    # Before its time the escalation principal is nobody here: the same 404 as for any stranger.
    assert api.get(approval_id, as_user="boss-sub", email=boss).status_code == 404
    assert inbox(backend, "boss-sub", email=boss) == []
    assert api.decide(approval_id, as_user="first-sub", email=first).json()["progress"] == {"approvals": 1, "required": 2}
    not_yet(backend, t0, FIRST)
    assert mails_to(stack, boss) == [], "not due yet"
    clock.advance(FIRST)
    backend.run_cron()
    [mail] = wait_mails(stack, boss, 1, ESCALATED)
    assert f"{backend.url}/a/{approval_id}" in mail["body"]
    assert "No answer from the team &lt;yet&gt;" in mail["body"] and token not in mail["body"]
    # Listed from now on, in the inbox, marked escalated (also for the original approvers).
    view = api.get(approval_id, as_user="boss-sub", email=boss)
    assert view.status_code == 200, view.text
    v = view.json()
    assert {"email": boss} in v["approvers"] and {"email": first} in v["approvers"]
    assert v["schedule"]["escalation"]["escalatedAt"] and v["schedule"]["escalation"]["to"] == [{"email": boss}]
    assert v["schedule"]["escalation"]["note"] == "No answer from the team <yet>"
    assert v["progress"] == {"approvals": 1, "required": 2}, "escalation does not raise the bar"
    [item] = [i for i in inbox(backend, "boss-sub", email=boss) if i["id"] == approval_id]
    assert item["escalated"] is True
    assert [i["escalated"] for i in inbox(backend, "second-sub", email=second) if i["id"] == approval_id] == [True]
    [ev] = backend.events(approval_id, "escalated")
    assert ev["actor"] == "system" and ev["detail"]["to"] == [{"email": boss}]
    # The escalation principal stands in for the one who did not answer: first + boss complete `all`.
    decided = api.decide(approval_id, as_user="boss-sub", email=boss, body={"decision": "approve", "comment": "go"})
    assert decided.status_code == 200 and decided.json()["status"] == "approved", decided.text
    out = json.loads(workflows.wait_done(arn)["output"])["approval"]
    assert out["approvedBy"]["email"] == boss and [x["email"] for x in out["approvals"]] == [first]
    backend.run_cron()
    assert len(wait_mails(stack, boss, 1, ESCALATED)) == 1, "escalated once"
    assert len(backend.events(approval_id, "escalated")) == 1


def test_repeated_and_concurrent_cron_runs_send_each_scheduled_mail_once(stack, backend):
    """On the real clock, as the expiry test in test_lifecycle.py: schedules fall due by the host's time."""
    api = backend.api
    regs = []
    t0 = time.monotonic()
    for i in range(4):
        who, boss = addr(f"conc{i}"), addr(f"concboss{i}")
        r = api.register("tok-" + secrets.token_hex(8), approvers=[{"email": who}], timeoutSeconds=600,
                         reminders=["PT2S"], escalation={"after": "PT2S", "to": [{"email": boss}]})
        assert r.status_code == 201, r.text
        regs.append((r.json()["id"], who, boss))
    until(t0, 2.5)
    errors = []

    def run():
        try:
            backend.run_cron()
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)
    threads = [threading.Thread(target=run) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    backend.run_cron()
    backend.run_cron()
    assert not errors, errors
    for approval_id, who, boss in regs:
        assert len(wait_mails(stack, who, 1, REMINDER, timeout=5)) == 1, approval_id
        # The escalation happened before the reminder went out or after: its address is reminded at most once.
        assert len(wait_mails(stack, boss, 1, ESCALATED, timeout=5)) == 1, approval_id
        assert len(mails_to(stack, boss, REMINDER)) <= 1
        assert len(backend.events(approval_id, "reminded")) == 1
        assert len(backend.events(approval_id, "escalated")) == 1
        assert backend.seats(approval_id) == 2
        assert [e["outcome"] for e in backend.schedule(approval_id)] == ["sent", "sent"]


def test_nothing_is_sent_for_an_approval_decided_before_its_schedule(stack, backend, clock):
    api = backend.api
    who, boss = addr("closed"), addr("closedboss")
    approval_id = api.register("tok-" + secrets.token_hex(8), approvers=[{"email": who}], timeoutSeconds=600,
                               reminders=["PT2S"], escalation={"after": "PT2S", "to": [{"email": boss}]}).json()["id"]
    # Decided before anything was due (the task token is made up: Step Functions says the task is closed).
    api.decide(approval_id, as_user="closed-sub", email=who)
    clock.advance(3)
    backend.run_cron()
    assert mails_to(stack, who, REMINDER) == [] and mails_to(stack, boss) == []
    assert backend.schedule(approval_id) == [{"outcome": "skipped"}, {"outcome": "skipped"}]
    assert backend.seats(approval_id) == 1


def test_schedule_validation_errors_name_the_field(api):
    def refused(**fields):
        r = api.register("tok-" + secrets.token_hex(8), timeoutSeconds=3600, **fields)
        assert r.status_code == 400, r.text
        err = r.json()["error"]
        assert err["code"] == "invalid_request"
        return err["field"], err["message"]

    field, message = refused(reminders=["PT4H"])
    assert field == "reminders[0]" and "must fall within the approval's lifetime" in message, message
    assert refused(reminders=["PT10M", "4 hours"])[0] == "reminders[1]"
    assert refused(reminders=["PT10M", {"beforeExpiry": "PT2H"}])[0] == "reminders[1]"
    assert refused(reminders=[{"beforeExpiry": "P1M"}])[0] == "reminders[0].beforeExpiry"
    assert refused(reminders=[{"before": "PT1H"}])[0] == "reminders[0]"
    assert refused(reminders=[f"PT{i}M" for i in range(1, 12)]) == ("reminders", "reminders: at most 10 reminders")
    assert refused(reminders="PT1H")[0] == "reminders"
    assert refused(escalation={"to": [{"sub": "boss"}]})[0] == "escalation.after"
    assert refused(escalation={"after": "PT2H", "to": [{"sub": "boss"}]})[0] == "escalation.after"
    assert refused(escalation={"after": "PT10M", "to": []})[0] == "escalation.to"
    assert refused(escalation={"after": "PT10M", "to": [{"sub": "boss"}, {"email": "nope"}]})[0] == "escalation.to[1].email"
    # Escalation mail goes where notify may: the approvers' own addresses or MAIL_ALLOWED_DOMAINS (example.com).
    assert refused(escalation={"after": "PT10M", "to": [{"email": "boss@elsewhere.test"}]})[0] == "escalation.to[0].email"
    assert refused(escalation={"after": "PT10M", "to": [{"sub": "boss"}], "note": "n" * 501})[0] == "escalation.note"
    assert refused(escalation={"after": "PT10M", "to": [{"sub": "boss"}], "cc": []})[0] == "escalation.cc"
    ok = api.register("tok-" + secrets.token_hex(8), timeoutSeconds=3600, reminders=[],
                      escalation={"after": "PT30M", "to": [{"sub": "boss"}], "note": None})
    assert ok.status_code == 201, ok.text


def test_the_escalated_approval_page_shows_the_schedule_on_a_phone(stack, api, workflows, browser, clock):
    """bob is the escalation principal: after the cron he is listed, sees the notice with the note, the next
    reminder and the escalation's state, in English and Japanese; the inbox marks it. axe-core clean."""
    arn, token = workflows.start_paused(300)
    r = api.register(token, approvers=[{"email": "carol@example.com"}], timeoutSeconds=290, title="Rotate the signing key",
                     reminders=["PT2S", "PT4M"], locale="en",
                     escalation={"after": "PT2S", "to": [{"sub": sub("bob")}, {"group": "security-leads"}],
                                 "note": "Carol is on leave this week."})
    assert r.status_code == 201, r.text
    approval_id = r.json()["id"]
    clock.advance(3)
    stack.run_cron()
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with Tab(browser, bypass_csp=True) as t:
        page = t.open_signed_in(stack, f"/a/{approval_id}", user="bob")
        approval = t.approval
        expect(approval.title).to_have_text("Rotate the signing key")
        notice = approval.by("escalated-notice")
        expect(notice).to_contain_text("can now decide this request too")
        expect(notice).to_contain_text("group security-leads")
        expect(approval.by("escalation-note")).to_have_text("Note: Carol is on leave this week.")
        schedule = approval.by("schedule")
        expect(schedule).to_be_visible()
        expect(approval.by("reminder")).to_have_count(2)
        expect(approval.by("reminder").first).to_have_attribute("data-state", "sent")
        expect(approval.by("reminder").nth(1)).to_have_attribute("data-state", "due")
        expect(approval.by("next-reminder")).to_contain_text("in ")
        expect(approval.by("escalation")).to_contain_text("Escalated")
        expect(approval.by("approve")).to_be_enabled()
        axe_check(page, "escalated approval (mobile)")
        approval.screenshot(ARTIFACTS / "schedule-escalated-mobile.png")
        approval.switch_language()
        expect(notice).to_contain_text("エスカレーションされました")
        expect(approval.by("escalation-note")).to_contain_text("メモ")
        expect(approval.by("schedule")).to_contain_text("次のリマインダー")
        approval.screenshot(ARTIFACTS / "schedule-escalated-mobile-ja.png")
        approval.switch_language()
        page.goto(f"{stack.base_url}/")
        item = t.inbox.item(approval_id)
        expect(item.get_by_test_id("escalated-badge")).to_have_text("Escalated")
        axe_check(page, "inbox with an escalated approval (mobile)")
        t.inbox.screenshot(ARTIFACTS / "schedule-inbox-escalated-mobile.png")
        # The same on a desktop.
        with Tab(browser, viewport=DESKTOP, bypass_csp=True) as d:
            d.open_signed_in(stack, f"/a/{approval_id}", user="bob")
            expect(d.approval.by("escalated-notice")).to_be_visible()
            expect(d.approval.by("schedule")).to_be_visible()
            axe_check(d.page, "escalated approval (desktop)")
            d.approval.screenshot(ARTIFACTS / "schedule-escalated-desktop.png")
        # bob decides the real paused execution from the page.
        page.goto(f"{stack.base_url}/a/{approval_id}")
        approval.decide("approve")
        approval.expect_result("approved")
    done = workflows.wait_done(arn)
    assert done["status"] == "SUCCEEDED"
    assert json.loads(done["output"])["approval"]["approvedBy"]["sub"] == sub("bob")


def test_d1_failures_in_the_schedule_steps_lose_nothing_and_cost_at_most_one_extra_mail(stack, api, clock):
    """The schedule's D1 calls made to fail (dev-only `D1_FAULTS`, the spec in the cron string): a failed take
    sends nothing (the next run does), a lost answer of the done mark records once and mails once, a failed
    mark mails once more after the lease (the bound), a failed escalation adds and mails on the next run."""
    from support.api import Api

    url = stack.extra_worker("schedfaults", {"D1_FAULTS": "header"})
    faulty = Api(stack, url)
    persist = stack.state / "worker-schedfaults-d1"

    def register(**fields):
        who = addr("fault")
        r = faulty.register("tok-" + secrets.token_hex(8), approvers=[{"email": who}], timeoutSeconds=600, **fields)
        assert r.status_code == 201, r.text
        return r.json()["id"], who

    def lease_runs_out(approval_id):
        # As if the 10-minute lease had passed (the clock shifted as an operator would).
        d1(stack, f"UPDATE approval_schedule SET lease_until = 0 WHERE approval_id = '{approval_id}' "
                  "AND done_at IS NULL", persist=persist)

    def reminded(approval_id):
        return len(d1(stack, f"SELECT 1 FROM approval_events WHERE approval_id = '{approval_id}' "
                             "AND kind = 'reminded'", persist=persist))

    take_id, take_who = register(reminders=["PT2S"])
    lost_id, lost_who = register(reminders=["PT2S"])
    clock.advance(3)
    stack.run_cron(url, d1_fault="what=schedule_due")
    assert mails_to(stack, take_who, REMINDER) == [] and mails_to(stack, lost_who, REMINDER) == []
    # The next run takes both; its done marks run but their answers are lost on every try.
    stack.run_cron(url, d1_fault="what=schedule_done,after")
    stack.run_cron(url)
    for approval_id, who in ((take_id, take_who), (lost_id, lost_who)):
        assert len(wait_mails(stack, who, 1, REMINDER, timeout=5)) == 1, approval_id
        assert reminded(approval_id) == 1, "recorded once, though the batch ran on every try"

    mark_id, mark_who = register(reminders=["PT2S"])
    clock.advance(3)
    stack.run_cron(url, d1_fault="what=schedule_done")  # mailed, not recorded
    assert len(wait_mails(stack, mark_who, 1, REMINDER, timeout=5)) == 1
    boss = addr("faultboss")
    esc_id, _ = register(escalation={"after": "PT2S", "to": [{"email": boss}]})
    clock.advance(3)
    stack.run_cron(url, d1_fault="what=escalate")  # nothing added, nothing mailed
    assert mails_to(stack, boss) == []
    assert d1(stack, f"SELECT escalated_at FROM approvals WHERE id = '{esc_id}'", persist=persist) == [
        {"escalated_at": None}]
    stack.run_cron(url)
    assert len(wait_mails(stack, mark_who, 1, REMINDER, timeout=3)) == 1, "the lease holds the row"
    lease_runs_out(mark_id)
    lease_runs_out(esc_id)
    stack.run_cron(url)
    stack.run_cron(url)
    assert len(wait_mails(stack, mark_who, 2, REMINDER, timeout=5)) == 2, "one extra mail: the bound"
    assert reminded(mark_id) == 1
    assert len(wait_mails(stack, boss, 1, ESCALATED, timeout=5)) == 1
    assert d1(stack, f"SELECT kind FROM approval_principals WHERE approval_id = '{esc_id}' AND value = '{boss}'",
              persist=persist) == [{"kind": "email"}]
