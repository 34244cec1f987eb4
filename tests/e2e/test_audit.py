"""The audit trail: every event of an approval recorded append-only with the change it records (registered,
mailed, first view per approver, voted, decided, expired, purged), shown as the approval page's timeline, exported
by operators (`GET /api/v1/audit`, JSON and CSV, cursor-paginated, bounded), and removed after
AUDIT_RETENTION_DAYS only — against real paused Step Functions executions in moto, on a worker with ADMIN_GROUP."""
from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
import time

import pytest

from support import ARTIFACTS
from support.api import Api, d1
from support.audit import OPS, chained_events, events_of, export, operator, verify_audit, wait_for_kind
from support.pages import DESKTOP, MOBILE, USERS, Tab, axe_check, sub

RETENTION_DAYS = 30
DAY_MS = 86_400_000


@pytest.fixture(scope="module")
def audited(stack):
    """A worker with operators (ADMIN_GROUP) and a short audit retention, on the port the IdP signs in to."""
    url = stack.extra_worker("audit", {"ADMIN_GROUP": OPS, "AUDIT_RETENTION_DAYS": str(RETENTION_DAYS)},
                             signs_in=True)
    return url, Api(stack, url)


def persist(stack):
    return stack.state / "worker-audit-d1"


def register(workflows, api, approvers, **fields):
    arn, token = workflows.start_paused()
    r = api.register(token, approvers=approvers, **fields)
    assert r.status_code == 201, r.text
    return r.json()["id"], arn


ALICE = {"email": "alice@example.com"}


def test_an_approvals_events_from_registration_to_decision(stack, workflows, audited):
    url, api = audited
    approval, arn = register(workflows, api, [ALICE])
    wait_for_kind(stack, url, approval, "mailed")
    # Opened twice by the approver: one `viewed`. A non-approver's GET records nothing.
    for _ in range(2):
        assert api.get(approval, "alice", email="alice@example.com").status_code == 200
    assert api.get(approval, "bob", email="bob@example.com").status_code == 404
    d = api.decide(approval, "approve", "alice", email="alice@example.com")
    assert d.status_code == 200 and d.json()["status"] == "approved", d.text
    assert workflows.wait_done(arn)["status"] == "SUCCEEDED"

    view = api.get(approval, "alice", email="alice@example.com")
    assert view.status_code == 200
    events = view.json()["events"]
    assert [e["kind"] for e in events] == ["registered", "mailed", "viewed", "decided"], events
    registered, mailed, viewed, decided = events
    assert registered["actor"]["type"] == "registrant" and registered["actor"]["id"].startswith("api-key:")
    assert registered["detail"]["approvers"] == 1
    assert mailed["actor"] == {"type": "system"}
    assert mailed["detail"] == {"mail": "request", "recipients": 1, "accepted": 1, "failed": 0}
    alice = {"type": "user", "sub": "alice", "display": "alice@example.com"}
    assert viewed["actor"] == alice and decided["actor"] == alice
    assert decided["detail"] == {"verdict": "approve", "status": "approved", "confirmed": True}
    times = [e["at"] for e in events]
    assert times == sorted(times), times
    assert all(e["approvalId"] == approval for e in events)
    # The timeline carries no token and no key.
    assert "taskToken" not in view.text and stack.api_key not in view.text


def test_an_id_chosen_again_after_a_purge_starts_a_timeline_of_its_own(stack, workflows, audited):
    """Events are keyed per registration: once the first approval is purged, a registration that chooses the same
    ID records its own first view and shows none of the old approval's events (the export keeps them)."""
    import secrets
    url, api = audited
    chosen = "wf-" + secrets.token_urlsafe(16)
    first, arn = register(workflows, api, [ALICE], approvalId=chosen)
    assert api.get(first, "alice", email="alice@example.com").status_code == 200
    assert api.decide(first, "approve", "alice", email="alice@example.com").json()["status"] == "approved"
    assert workflows.wait_done(arn)["status"] == "SUCCEEDED"
    # What the retention purge removes of a closed approval (its events stay for the audit retention).
    for table, col in (("approval_schedule", "approval_id"), ("decisions", "approval_id"),
                       ("approval_principals", "approval_id"), ("approvals", "id")):
        d1(stack, f"DELETE FROM {table} WHERE {col} = '{chosen}'", persist=persist(stack))
    again, _ = register(workflows, api, [ALICE], approvalId=chosen)
    assert again == chosen
    assert api.get(again, "alice", email="alice@example.com").status_code == 200
    events = api.get(again, "alice", email="alice@example.com").json()["events"]
    assert [e["kind"] for e in events if e["kind"] != "mailed"] == ["registered", "viewed"], events
    viewed = [e for e in events_of(stack, url, chosen) if e["kind"] == "viewed"]
    assert len(viewed) == 2, "both registrations' first views are exported"

def test_quorum_votes_rejections_and_expiry_are_recorded(stack, workflows, audited, clock):
    url, api = audited
    quorum, arn = register(workflows, api, [{"sub": "alice"}, {"sub": "carol"}], quorum="all")
    v = api.decide(quorum, "approve", "alice")
    assert v.status_code == 200 and v.json()["status"] == "pending", v.text
    d = api.decide(quorum, "approve", "carol")
    assert d.status_code == 200 and d.json()["status"] == "approved", d.text
    assert workflows.wait_done(arn)["status"] == "SUCCEEDED"
    kinds = [(e["kind"], e["actor"].get("sub")) for e in events_of(stack, url, quorum)]
    assert ("voted", "alice") in kinds and ("decided", "carol") in kinds, kinds
    assert [k for k, _ in kinds].count("voted") == 1 and [k for k, _ in kinds].count("decided") == 1, kinds

    rejected, arn = register(workflows, api, [{"sub": "alice"}])
    assert api.decide(rejected, "reject", "alice").json()["status"] == "rejected"
    assert workflows.wait_done(arn)["status"] == "SUCCEEDED"  # the Catch: ["Rejected"] branch
    decided = [e for e in events_of(stack, url, rejected) if e["kind"] == "decided"]
    assert [e["detail"]["verdict"] for e in decided] == ["reject"]

    # Expired by the cron: one `expired` event by ringi itself, also when the cron runs again.
    arn, token = workflows.start_paused()
    r = api.register(token, approvers=[{"sub": "alice"}], timeoutSeconds=1)
    assert r.status_code == 201, r.text
    expiring = r.json()["id"]
    clock.advance(2)
    stack.run_cron(url)
    stack.run_cron(url)
    expired = [e for e in events_of(stack, url, expiring) if e["kind"] == "expired"]
    assert [(e["actor"], e["detail"]) for e in expired] == [({"type": "system"}, {"reason": "deadline"})]


def test_operators_export_json_and_csv_by_cursor(stack, workflows, audited):
    url, api = audited
    for _ in range(3):
        approval, _ = register(workflows, api, [{"sub": "alice"}])
        assert api.get(approval, "alice").status_code == 200
        # Sealed into its chain (after each response) before the exports below are compared.
        chained_events(stack, url, approval, count=2)
    # One fixed range for the whole comparison (`to` defaults to the request's now: an event another test recorded
    # with the test clock ahead may only fall into it later).
    # To the millisecond: a whole second would leave out the events of the current one (a fast run's all).
    now = time.time()
    until = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now)) + f".{int(now * 1000) % 1000:03d}Z"
    everything = export(stack, url, limit=1000, to=until).json()
    assert everything["nextCursor"] is None and len(everything["items"]) >= 6
    # Page by page (2 a page): the same events in the same order, none twice, none skipped.
    paged, cursor, pages = [], None, 0
    while True:
        params = {"limit": 2, "to": until, **({"cursor": cursor} if cursor else {})}
        page = export(stack, url, **params)
        assert page.status_code == 200, page.text
        body = page.json()
        assert len(body["items"]) <= 2
        paged += body["items"]
        pages += 1
        cursor = body["nextCursor"]
        if cursor is None:
            break
    assert pages >= 3 and paged == everything["items"]

    # The range is half-open [from, to): an event exactly at `to` belongs to the next range.
    at = next(e["at"] for e in everything["items"] if e["at"] > everything["items"][0]["at"])
    before = export(stack, url, to=at, limit=1000).json()["items"]
    after = export(stack, url, **{"from": at}, to=until, limit=1000).json()["items"]
    assert before + after == everything["items"] and before and after[0]["at"] == at

    # CSV: a header row, one row per event, RFC 4180, the next cursor in a header.
    r = export(stack, url, headers={**operator(stack), "accept": "text/csv"}, limit=1000, to=until)
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/csv")
    assert r.headers["cache-control"] == "no-store"
    assert r.text.endswith("\r\n") and "ringi-next-cursor" not in r.headers
    rows = list(csv.reader(io.StringIO(r.text, newline="")))
    assert rows[0] == ["at", "approval_id", "kind", "actor_type", "actor", "actor_display", "detail",
                       "chain_n", "prev_digest", "digest"]
    # A cell a spreadsheet would run as a formula is prefixed with ' (generated IDs may start with '-').
    cell = lambda v: f"'{v}" if v[:1] in ("=", "+", "-", "@") else v  # noqa: E731
    assert [(row[0], row[1], row[2]) for row in rows[1:]] == [(e["at"], cell(e["approvalId"]), e["kind"])
                                                            for e in everything["items"]]
    first = export(stack, url, headers={**operator(stack), "accept": "text/csv"}, limit=2, to=until)
    assert len(list(csv.reader(io.StringIO(first.text, newline="")))) == 3
    nxt = first.headers["ringi-next-cursor"]
    second = export(stack, url, headers={**operator(stack), "accept": "text/csv"}, limit=2, cursor=nxt, to=until)
    assert list(csv.reader(io.StringIO(second.text, newline="")))[1][0] == everything["items"][2]["at"]


def test_csv_cells_cannot_become_formulas(stack, workflows, audited):
    url, api = audited
    evil = '=HYPERLINK("http://x.invalid","click")'
    approval, _ = register(workflows, api, [{"sub": "u-formula"}])
    assert api.get(approval, "u-formula", username=evil).status_code == 200
    r = export(stack, url, headers={**operator(stack), "accept": "text/csv"}, limit=1000)
    rows = [row for row in csv.reader(io.StringIO(r.text, newline="")) if row[1] == approval and row[2] == "viewed"]
    assert [row[5] for row in rows] == ["'" + evil], rows
    assert not [cell for row in csv.reader(io.StringIO(r.text, newline="")) for cell in row if cell and cell[0] in "=+-@"]


def test_only_operators_may_export_and_bad_queries_name_their_field(stack, audited):
    url, _ = audited
    r = export(stack, url, headers={"authorization": f"Bearer {stack.mint('alice', groups=['finance'])}"})
    assert r.status_code == 403 and r.json()["error"]["code"] == "forbidden", r.text
    r = export(stack, url, headers={})
    assert r.status_code == 401 and r.json()["error"]["code"] == "unauthorized", r.text
    # The main worker has no ADMIN_GROUP: nobody is an operator there.
    r = export(stack, stack.base_url)
    assert r.status_code == 403, r.text
    for params, field in [({"from": "yesterday"}, "from"), ({"to": "2026-13-01T00:00:00Z"}, "to"),
                          ({"from": "2026-12-02T00:00:00Z", "to": "2026-12-01T00:00:00Z"}, "to"),
                          ({"from": "2026-01-01T00:00:00Z", "to": "2026-12-01T00:00:00Z"}, "from"),
                          ({"cursor": "not-a-cursor"}, "cursor"), ({"limit": "0"}, "limit"), ({"limit": "5000"}, "limit")]:
        r = export(stack, url, **params)
        assert r.status_code == 400, (params, r.text)
        assert r.json()["error"]["field"] == field, (params, r.text)


def test_retention_removes_old_events_only_and_events_outlive_their_approval(stack, workflows, audited):
    url, api = audited
    approval, _ = register(workflows, api, [{"sub": "alice"}])
    assert api.decide(approval, "approve", "alice").json()["status"] == "approved"
    now = int(time.time() * 1000)
    # Events of another system's past, as an operator would find them in D1 (the table takes no UPDATE).
    old, recent = now - (RETENTION_DAYS + 1) * DAY_MS, now - (RETENTION_DAYS - 1) * DAY_MS
    d1(stack, "INSERT INTO approval_events (approval_id, at, kind, actor, detail_json, dedupe_key) VALUES "
              f"('old-approval', {old}, 'viewed', 'system', '{{}}', 'test:old'), "
              f"('old-approval', {recent}, 'viewed', 'system', '{{}}', 'test:recent')", persist(stack))
    # The approval itself is past its retention (RETENTION_SECONDS, 90 days by default): purged by the cron.
    d1(stack, f"UPDATE approvals SET decided_at = {now - 91 * DAY_MS} WHERE id = '{approval}'", persist(stack))
    with pytest.raises(Exception):
        d1(stack, f"UPDATE approval_events SET kind = 'expired' WHERE approval_id = '{approval}'", persist(stack))
    stack.run_cron(url)
    keys = [r["dedupe_key"] for r in d1(stack, "SELECT dedupe_key FROM approval_events WHERE approval_id = 'old-approval'",
                                        persist(stack))]
    assert keys == ["test:recent"]
    assert d1(stack, f"SELECT id FROM approvals WHERE id = '{approval}'", persist(stack)) == []
    kinds = [r["kind"] for r in d1(stack, f"SELECT kind FROM approval_events WHERE approval_id = '{approval}' ORDER BY seq",
                                   persist(stack))]
    assert kinds == ["registered", "decided", "purged"], kinds
    stack.run_cron(url)
    assert [r["kind"] for r in d1(stack, f"SELECT kind FROM approval_events WHERE approval_id = '{approval}'",
                                  persist(stack))].count("purged") == 1


def test_timeline_and_audit_page_in_the_browser(stack, workflows, audited, browser):
    url, api = audited
    approval, _ = register(workflows, api, [{"sub": sub("alice")}, {"sub": sub("dave")}], quorum="all",
                           title="Rotate the payments signing key")
    assert api.decide(approval, "approve", sub("dave"), username="dave").json()["status"] == "pending"
    with Tab(browser, viewport=MOBILE, bypass_csp=True) as t:
        page = t.open_signed_in(stack, f"/a/{approval}", "alice", base_url=url)
        timeline = t.approval.by("timeline")
        timeline.wait_for()
        kinds = [e.get_attribute("data-kind") for e in t.approval.by("timeline-event").all()]
        assert kinds == ["registered", "voted", "viewed"], kinds
        assert t.approval.by("timeline-event").nth(1).get_by_test_id("timeline-actor").inner_text() == USERS["dave"]["username"]
        assert not t.approval.by("audit-link").count(), "alice is no operator"
        timeline.scroll_into_view_if_needed()
        page.screenshot(path=str(ARTIFACTS / "audit-timeline-mobile.png"), full_page=True)
        axe_check(page, "approval timeline")
        t.approval.switch_language()
        assert t.approval.by("timeline").get_by_text("アクティビティ").count() == 1
        assert t.approval.by("timeline-event").first.locator("strong").inner_text() == "申請"

    for viewport, name in [(MOBILE, "mobile"), (DESKTOP, "desktop")]:
        with Tab(browser, viewport=viewport, bypass_csp=True) as t:
            page = t.open_signed_in(stack, "/audit", "dave", base_url=url)
            t.inbox.by("audit-list").wait_for()
            # The shell links the page for operators.
            assert t.inbox.by("audit-link").get_attribute("href") == "/audit"
            assert t.inbox.by("audit-event").count() >= 3
            assert page.locator(f'[data-testid=audit-event] a[href="/a/{approval}"]').count() >= 2
            page.screenshot(path=str(ARTIFACTS / f"audit-page-{name}.png"), full_page=True)
            axe_check(page, f"audit page ({name})")
            if name == "mobile":
                with page.expect_download() as download:
                    t.inbox.by("audit-download").click()
                text = open(download.value.path(), encoding="utf-8").read()
                assert text.startswith("at,approval_id,kind,") and approval in text
                assert download.value.suggested_filename.startswith("ringi-audit-")
                # An empty range says so; a reversed one is refused before asking the worker.
                page.fill("[data-testid=audit-from]", "2001-01-01")
                page.fill("[data-testid=audit-to]", "2001-01-02")
                t.inbox.by("audit-show").click()
                t.inbox.by("audit-empty").wait_for()
                page.fill("[data-testid=audit-to]", "2000-12-01")
                t.inbox.by("audit-show").click()
                t.inbox.by("audit-range-invalid").wait_for()
                axe_check(page, "audit page, invalid range")
            assert not t.csp_problems(), t.problems

    # A signed-in non-operator who finds the address is told, not shown anything.
    with Tab(browser, viewport=MOBILE, bypass_csp=True) as t:
        page = t.open_signed_in(stack, "/audit", "alice", base_url=url)
        t.inbox.by("audit-forbidden").wait_for()
        page.screenshot(path=str(ARTIFACTS / "audit-forbidden-mobile.png"))
        axe_check(page, "audit page forbidden")


def test_the_chain_of_an_export_verifies_and_names_an_edited_removed_or_reordered_event(stack, workflows, audited,
                                                                                        tmp_path):
    """Every event is sealed into its approval's hash chain as it is written; deploy/verify_audit.py checks an
    export from this worker (a saved file, or fetched with the operator's token from the environment) and names
    the first broken link of an export edited, cut or reordered afterwards."""
    url, api = audited
    approval, arn = register(workflows, api, [{"sub": "alice"}, {"sub": "carol"}], quorum="all")
    assert api.get(approval, "alice").status_code == 200
    assert api.decide(approval, "approve", "alice").json()["status"] == "pending"
    assert api.decide(approval, "approve", "carol").json()["status"] == "approved"
    assert workflows.wait_done(arn)["status"] == "SUCCEEDED"
    events = chained_events(stack, url, approval, count=4)
    assert [e["chain"]["n"] for e in events] == list(range(1, len(events) + 1)), events
    assert events[0]["chain"]["prevDigest"] == verify_audit.genesis(approval)
    assert verify_audit.check(events)[approval]["ok"]

    script = [sys.executable, str(verify_audit.__file__)]
    saved = tmp_path / "export.json"
    saved.write_text(json.dumps(export(stack, url, limit=1000).json()))
    ok = subprocess.run([*script, str(saved)], capture_output=True, text=True, timeout=60)
    assert ok.returncode == 0 and f"ok      {approval}: {len(events)} chained" in ok.stdout, ok
    # Fetched by the script itself; the token from the environment, never the command line.
    token = operator(stack)["authorization"].removeprefix("Bearer ")
    fetched = subprocess.run([*script, "--url", url], capture_output=True, text=True, timeout=60,
                             env={**os.environ, "RINGI_AUDIT_TOKEN": token})
    assert fetched.returncode == 0 and f"ok      {approval}" in fetched.stdout, fetched
    assert token not in fetched.stdout + fetched.stderr

    def tampered(change) -> str:
        page = json.loads(saved.read_text())
        mine = [e for e in page["items"] if e["approvalId"] == approval]
        change(page, mine)
        path = tmp_path / "tampered.json"
        path.write_text(json.dumps(page))
        r = subprocess.run([*script, str(path)], capture_output=True, text=True, timeout=60)
        assert r.returncode == 1, r
        return next(line for line in r.stdout.splitlines() if approval in line)

    voted = next(e for e in events if e["kind"] == "voted")
    n = voted["chain"]["n"]
    # Edited: the vote said to be a rejection.
    line = tampered(lambda page, mine: next(e for e in mine if e["kind"] == "voted")["detail"].update(verdict="reject"))
    assert f"event #{n} voted at {voted['at']} was altered" in line, line
    # Removed: the vote taken out.
    line = tampered(lambda page, mine: page["items"].remove(next(e for e in mine if e["kind"] == "voted")))
    assert f"event #{n} is missing (removed)" in line, line

    # Reordered: the vote and the view exchange places in the chain.
    def reorder(page, mine):
        a, b = (next(e for e in mine if e["kind"] == k) for k in ("viewed", "voted"))
        a["chain"], b["chain"] = b["chain"], a["chain"]
    line = tampered(reorder)
    assert "was altered or moved" in line and ("voted" in line or "viewed" in line), line
