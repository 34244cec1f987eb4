"""Registration → email with the short link → inbox → decision → workflow; quorum, groups,
cron expiry and reminders, against workerd + moto (SES v2 and Step Functions). The decision path and the mail
retry run on both storage backends (`backend`: D1, then DynamoDB); reminders, the slow-SES timing and the
cron's batches are D1's (each test says why)."""
import json
import secrets
import time

import pytest
import requests

from support.api import Api, d1
from support.backends import Backend, api, paused  # noqa: F401  (fixtures: the module's backend's)
from support.faultproxy import FaultProxy


def mails_to(stack, address):
    return [m for m in stack.sent_mail() if address in m["destinations"]["ToAddresses"]]


def wait_mails(stack, address, n, timeout=15.0):
    """The request mail goes out after the registration's response: wait until `n` mails are there (then
    a moment longer, so that an unexpected extra one would show up too)."""
    mine = lambda ms: [m for m in ms if address in m["destinations"]["ToAddresses"]]  # noqa: E731
    stack.wait_mail(lambda ms: len(mine(ms)) >= n, timeout)
    time.sleep(0.5)
    return mine(stack.sent_mail())


def mail_state(backend, approval_id, worker=None, settled=True):
    """`mail_state`/`mail_attempts` of an approval; with `settled`, once the sender has finished."""
    deadline = time.monotonic() + 30
    while True:
        row = backend.stored(approval_id, "mail_state", "mail_attempts", worker=worker)
        if not settled or row["mail_state"] != "pending" or time.monotonic() > deadline:
            return row
        time.sleep(0.5)


def test_register_mail_inbox_decide_resume(stack, backend, api, workflows):
    who = f"erin-{secrets.token_hex(4)}@example.com"
    arn, token = workflows.start_paused()
    r = api.register(token, approvers=[{"email": who}], summary="Rolls out <b>v2</b> & migrates",
                     context={"executionArn": arn, "stateName": "RequestApproval"})
    assert r.status_code == 201, r.text
    approval_id = r.json()["id"]
    # The mail: one message, subject with the title, the short link, no decision links, HTML escaped.
    [mail] = wait_mails(stack, who, 1)
    assert mail["source"] == "ringi@example.com"
    assert "Deploy v2 to production" in mail["subject"]
    assert f"{backend.url}/a/{approval_id}" in mail["body"]
    assert "decision" not in mail["body"].lower() and token not in mail["body"]
    assert "&lt;b&gt;v2&lt;/b&gt; &amp; migrates" in mail["body"]
    assert arn in mail["body"], "requested by"
    # The approver (identified by verified email) sees it in the inbox, decides, the workflow resumes.
    page = backend.inbox("erin-sub", email=who)
    assert [i["id"] for i in page["items"]] == [approval_id]
    assert page["items"][0]["progress"] == {"approvals": 0, "required": 1}
    assert api.decide(approval_id, as_user="erin-sub", email=who).json()["status"] == "approved"
    assert workflows.wait_done(arn)["status"] == "SUCCEEDED"
    assert backend.inbox("erin-sub", email=who)["items"] == []
    decided = backend.inbox("erin-sub", status="decided", email=who)["items"]
    assert [(i["id"], i["status"]) for i in decided] == [(approval_id, "approved")]


def test_quorum_all_of_two(stack, api, paused, workflows):
    approval_id, arn = paused(approvers=[{"sub": "alice"}, {"sub": "bob"}], quorum="all")
    first = api.decide(approval_id, as_user="alice", body={"decision": "approve", "comment": "ok from alice"})
    assert first.status_code == 200 and first.json()["status"] == "pending"
    assert first.json()["progress"] == {"approvals": 1, "required": 2}
    assert workflows.status(arn) == "RUNNING"
    # Repeating the same vote is idempotent (a retried request); changing it is refused.
    again = api.decide(approval_id, as_user="alice")
    assert again.status_code == 200 and again.json()["progress"] == {"approvals": 1, "required": 2}
    changed = api.decide(approval_id, "reject", as_user="alice")
    assert changed.status_code == 409 and changed.json()["error"]["code"] == "already_voted"
    second = api.decide(approval_id, as_user="bob")
    assert second.status_code == 200 and second.json()["status"] == "approved"
    out = json.loads(workflows.wait_done(arn)["output"])["approval"]
    assert out["approvedBy"]["sub"] == "bob"
    assert [a["sub"] for a in out["approvals"]] == ["alice"]
    assert [e["type"] for e in workflows.history(arn)].count("TaskSucceeded") == 1
    view = api.get(approval_id, as_user="bob").json()
    assert view["progress"] == {"approvals": 2, "required": 2}
    assert [d["decision"] for d in view["decisions"]] == ["approve", "approve"]


def test_quorum_counts_listed_principals_not_people(api, paused, workflows):
    """Separation of duty: `all` over two groups needs a member of each; a second engineer cannot stand in
    for finance, and one person with two accounts (same verified email) counts once."""
    approval_id, arn = paused(approvers=[{"group": "eng"}, {"group": "finance"}, {"email": "pat@example.com"}],
                              quorum="all")
    first = api.decide(approval_id, as_user="eng-1", groups=["eng"])
    assert first.json()["status"] == "pending" and first.json()["progress"] == {"approvals": 1, "required": 3}
    second = api.decide(approval_id, as_user="eng-2", groups=["eng"])
    assert second.status_code == 409 and second.json()["error"]["code"] == "already_satisfied", second.text
    # pat approves through the email slot (the most specific one), not the finance group she is also in …
    pat = api.decide(approval_id, as_user="pat-1", email="pat@example.com", groups=["finance"])
    assert pat.json()["progress"] == {"approvals": 2, "required": 3}
    # … and her second account cannot fill the finance slot as well.
    twin = api.decide(approval_id, as_user="pat-2", email="pat@example.com", groups=["finance"])
    assert twin.status_code == 409 and twin.json()["error"]["code"] == "already_voted", twin.text
    assert workflows.status(arn) == "RUNNING"
    last = api.decide(approval_id, as_user="fin-1", groups=["finance"])
    assert last.status_code == 200 and last.json()["status"] == "approved", last.text
    out = json.loads(workflows.wait_done(arn)["output"])["approval"]
    assert out["approvedBy"]["sub"] == "fin-1"
    assert sorted(a["sub"] for a in out["approvals"]) == ["eng-1", "pat-1"]


def test_quorum_rejection_by_any_approver_rejects(api, paused, workflows):
    approval_id, arn = paused(approvers=[{"sub": "alice"}, {"sub": "bob"}], quorum="all")
    assert api.decide(approval_id, as_user="alice").json()["status"] == "pending"
    assert api.decide(approval_id, "reject", as_user="bob").json()["status"] == "rejected"
    assert json.loads(workflows.wait_done(arn)["output"])["rejection"]["Error"] == "Rejected"


def test_group_approver_sees_it_in_the_inbox(backend, api, paused):
    group = "ops-" + secrets.token_hex(3)
    approval_id, _ = paused(approvers=[{"group": group}])
    assert [i["id"] for i in backend.inbox("frank", **{"cognito:groups": [group]})["items"]] == [approval_id]
    assert approval_id not in [i["id"] for i in backend.inbox("frank")["items"]]
    assert api.decide(approval_id, as_user="frank", **{"cognito:groups": [group]}).status_code == 200


def test_inbox_is_sorted_by_expiry_and_paginates(stack, backend, api):
    user = "pager-" + secrets.token_hex(3)
    ids = []
    for i in range(27):
        r = api.register("tok-" + secrets.token_hex(6), approvers=[{"sub": user}], timeoutSeconds=3600 + (27 - i) * 60)
        ids.append(r.json()["id"])
    expected = list(reversed(ids))  # later registered = sooner expiry
    first = backend.inbox(user)
    assert len(first["items"]) == 25 and first["nextCursor"]
    second = backend.inbox(user, cursor=first["nextCursor"])
    assert second["nextCursor"] is None
    assert [i["id"] for i in first["items"] + second["items"]] == expected
    bad = requests.get(f"{backend.url}/api/v1/approvals", params={"cursor": "garbage"},
                       headers={"authorization": f"Bearer {stack.mint(user)}"}, timeout=30)
    assert bad.status_code == 400 and bad.json()["error"]["field"] == "cursor"


def test_cron_marks_expired_and_the_decision_then_gets_409(backend, api, workflows):
    """On the real clock (as are the concurrent schedule runs in test_schedule.py): expiry by the host's time,
    with no test clock involved, on both backends."""
    arn, token = workflows.start_paused()
    approval_id = api.register(token, timeoutSeconds=2).json()["id"]
    time.sleep(2.5)
    backend.run_cron()
    assert backend.stored(approval_id, "status", "task_token") == {"status": "expired", "task_token": None}
    r = api.decide(approval_id)
    assert r.status_code == 409 and r.json()["error"]["code"] == "expired"
    assert api.get(approval_id).json()["status"] == "expired"
    assert workflows.status(arn) == "RUNNING", "ringi never answered the task"


def test_the_test_clock_moves_now_per_request_and_per_cron_run(backend, api, clock):
    """The dev-only test clock where the worker reads the time: the header moves one request's "now", the cron
    string's `clock=` one run's; a malformed offset is a typed 400; without either, the real clock. (Refused off
    loopback: core's config tests.)"""
    approval_id = api.register("tok-" + secrets.token_hex(6), timeoutSeconds=30).json()["id"]
    late = api.get(approval_id, headers={"x-ringi-clock": "31"}).json()
    assert late["status"] == "expired", "past its deadline for the request that is 31 s later"
    assert api.get(approval_id).json()["status"] == "pending", "on the real clock, not yet"
    bad = api.get(approval_id, headers={"x-ringi-clock": "-31"})
    assert bad.status_code == 400 and bad.json()["error"]["field"] == "x-ringi-clock", bad.text
    backend.run_cron()
    assert backend.stored(approval_id, "status") == {"status": "pending"}
    clock.advance(31)
    backend.run_cron()
    assert backend.stored(approval_id, "status") == {"status": "expired"}
    r = api.decide(approval_id)
    assert r.status_code == 409 and r.json()["error"]["code"] == "expired", r.text


def test_cron_sends_one_reminder_inside_the_window(stack, backend, api, clock):
    who = f"rem-{secrets.token_hex(4)}@example.com"
    approval_id = api.register("tok-" + secrets.token_hex(6), approvers=[{"email": who}],
                               timeoutSeconds=3 * 86400).json()["id"]
    assert len(wait_mails(stack, who, 1)) == 1
    backend.run_cron()
    assert len(mails_to(stack, who)) == 1, "not inside the 24 h window yet"
    # 70 of its 72 hours pass: 2 hours left.
    clock.advance(70 * 3600)
    backend.run_cron()
    backend.run_cron()
    mails = mails_to(stack, who)
    assert len(mails) == 2, [m["subject"] for m in mails]
    assert mails[1]["subject"].startswith("[ringi] Reminder") and approval_id in mails[1]["body"]
    assert [e["detail"] for e in backend.events(approval_id, "reminded")] == [{"recipients": 1}]


def test_mail_failure_never_loses_the_approval_and_the_cron_retries(stack, backend, workflows):
    """SES refuses (unverified sender): the approval is stored, decidable, and the mail marked for retry; the
    cron retries it (and, SES still refusing, counts the attempt)."""
    url = backend.extra_worker("badmail", {"MAIL_FROM": "unverified@example.com"})
    api = Api(stack, url)
    who = f"retry-{secrets.token_hex(4)}@example.com"
    arn, token = workflows.start_paused()
    r = api.register(token, approvers=[{"email": who}])
    assert r.status_code == 201
    approval_id = r.json()["id"]
    assert mail_state(backend, approval_id, "badmail") == {"mail_state": "failed", "mail_attempts": 1}
    backend.run_cron(url)
    assert mail_state(backend, approval_id, "badmail") == {"mail_state": "failed", "mail_attempts": 2}
    [*_, cron] = [json.loads(line) for line in backend.log_lines('"event":"cron"', worker="badmail")]
    assert cron["mailRetried"] == 1 and cron["failedSteps"] == [], cron
    if backend.name == "dynamodb":
        # Six Scans side by side or in turn (expiry; mails and chat; reminders; schedules; outcomes on expiry), one
        # BatchGetItem, the record.
        assert cron["roundTrips"].endswith("ddb=8"), cron["roundTrips"]
    assert api.decide(approval_id, as_user="x", email=who).json()["status"] == "approved"
    assert not [m for m in stack.sent_mail() if m["source"] == "unverified@example.com"]


@pytest.fixture(scope="module")
def slow_ses(stack):
    proxy = FaultProxy(stack.ports.moto).start()
    proxy.mode, proxy.slow_seconds = "slow", 10.0
    yield proxy
    proxy.stop()


def test_registration_answers_before_a_slow_ses_and_the_mail_follows_once(stack, workflows, slow_ses):
    """An EventBridge API destination waits 5 s at most: the answer must not wait for SES. With SES taking
    10 s, the registration answers at once, the mail arrives later, once, and neither the cron nor a
    redelivery of the same registration sends it again. (D1 only: the answer's timing is the mailer's, the same
    on both backends; the mail bookkeeping on DynamoDB is the retry test's.)"""
    url = stack.extra_worker("slowses", {"SES_ENDPOINT": f"http://127.0.0.1:{slow_ses.port}"})
    api = Api(stack, url)
    d1_backend = Backend("d1", stack, stack.base_url, workflows)
    who = f"slow-{secrets.token_hex(4)}@example.com"
    arn, token = workflows.start_paused()
    t0 = time.monotonic()
    r = api.register(token, approvers=[{"email": who}])
    took = time.monotonic() - t0
    assert r.status_code == 201, r.text
    print(f"registration answered in {took * 1000:.0f} ms with SES {slow_ses.slow_seconds:.0f} s late")
    assert took < 1.0, f"registration took {took:.2f}s"
    approval_id = r.json()["id"]
    assert mails_to(stack, who) == [], "SES has not answered yet"
    assert mail_state(d1_backend, approval_id, "slowses", settled=False)["mail_state"] == "pending"
    # The same registration again, as EventBridge redelivers it: the same approval, nothing new to mail.
    again = api.register(token, approvers=[{"email": who}])
    assert again.status_code == 200 and again.json() == r.json()
    assert mail_state(d1_backend, approval_id, "slowses") == {"mail_state": "sent", "mail_attempts": 1}
    assert time.monotonic() - t0 >= slow_ses.slow_seconds
    stack.run_cron(url)
    [mail] = wait_mails(stack, who, 1)
    assert f"{url}/a/{approval_id}" in mail["body"]
    assert api.decide(approval_id, as_user="slow-sub", email=who).json()["status"] == "approved"


def test_cron_works_in_bounded_batches(stack):
    """A backlog (here 700 approvals past their expiry) drains over cron runs, 500 rows a step at most,
    instead of one unbounded statement. (D1 only: the backlog is written in SQL.)"""
    url = stack.extra_worker("backlog", {})
    persist = stack.state / "worker-backlog-d1"
    just_expired = int(time.time() * 1000) - 1000  # expired, but far from the retention purge
    d1(stack, "WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 700) "
              "INSERT INTO approvals (id, task_token, token_sha256, status, title, approver_count, created_at, "
              f"expires_at) SELECT 'backlog-' || i, 't' || i, 'h' || i, 'pending', 'old', 1, 0, {just_expired} FROM c",
       persist=persist)
    count = "SELECT status, count(*) AS n FROM approvals GROUP BY status ORDER BY status"
    stack.run_cron(url)
    assert d1(stack, count, persist=persist) == [{"status": "expired", "n": 500}, {"status": "pending", "n": 200}]
    stack.run_cron(url)
    assert d1(stack, count, persist=persist) == [{"status": "expired", "n": 700}]
