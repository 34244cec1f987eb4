"""D1 faults: every D1 call of a decision, a registration and a cron run is made to fail in turn (the worker's
dev-only `D1_FAULTS=header` switch, `x-ringi-d1-fault` per request), both as "storage gone from this call on"
(`from=N`) and as "the write ran but its answer was lost" (`call=N,after`). Step Functions sits behind a
counting proxy: it never gets more than one callback per task, nothing is lost, and what ringi finally shows
is what the workflow did. The observed matrix is printed (pytest -s) and written to
tests/artifacts/d1-fault-matrix.md."""
from __future__ import annotations

import secrets
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests

from support import ARTIFACTS
from support.api import Api, d1, round_trips
from support.faultproxy import FaultProxy

HEADER = "x-ringi-d1-fault"
MODES = ("from={n}", "call={n},after")
# (scenario, approvers, quorum, who decides under faults, verdict, earlier fault-free votes)
SCENARIOS = [
    ("single", ["alice"], "any", "alice", "approve", []),
    ("single", ["alice"], "any", "alice", "reject", []),
    ("quorum vote", ["alice", "bob"], "all", "alice", "approve", []),
    ("quorum final", ["alice", "bob"], "all", "bob", "approve", ["alice"]),
    ("quorum final", ["alice", "bob"], "all", "bob", "reject", ["alice"]),
]


@pytest.fixture(scope="module")
def proxy(stack):
    p = FaultProxy(stack.ports.moto).start()
    p.mode = "ok"
    yield p
    p.stop()


@pytest.fixture(scope="module")
def faulty(stack, proxy):
    """A worker with the D1 fault switch (header) and Step Functions behind the counting proxy."""
    url = stack.extra_worker("d1faults", {"D1_FAULTS": "header", "SFN_ENDPOINT": f"http://127.0.0.1:{proxy.port}"})
    return url, Api(stack, url)


def _error_code(r):
    try:
        body = r.json()
    except ValueError:
        raise AssertionError(f"not JSON: {r.status_code} {r.text[:200]}")
    return body.get("error", {}).get("code") if r.status_code >= 400 else body.get("status")


def _outcome(workflows, arn):
    """What the workflow did with its approval task: 'approve', 'reject' or None (it never resumed)."""
    events = workflows.history(arn)
    assert [e["type"] for e in events].count("TaskSucceeded") <= 1
    entered = [e["stateEnteredEventDetails"]["name"] for e in events if "stateEnteredEventDetails" in e]
    assert not ("Approved" in entered and "Rejected" in entered), entered
    return "approve" if "Approved" in entered else "reject" if "Rejected" in entered else None


def test_every_d1_call_of_a_decision_fails_in_turn(stack, workflows, proxy, faulty, clock):
    url, api = faulty
    # How many D1 calls each kind of decision makes (fault-free, counted by the worker).
    probes = workflows.start_many(len(SCENARIOS))
    calls = {}
    for (name, approvers, quorum, who, verdict, earlier), (arn, token) in zip(SCENARIOS, probes):
        r = api.register(token, approvers=[{"sub": a} for a in approvers], quorum=quorum)
        assert r.status_code == 201, r.text
        for e in earlier:
            assert api.decide(r.json()["id"], "approve", as_user=e).status_code == 200
        d = api.decide(r.json()["id"], verdict, as_user=who, headers={HEADER: "what=none"})
        assert d.status_code == 200, d.text
        calls[(name, verdict)] = round_trips(d)["d1"]
    print("D1 calls per decision:", calls)

    # +1: the write a failed call is followed by (release after a failed claim, the second finish).
    cases = [(s, mode.format(n=n)) for s in SCENARIOS for mode in MODES for n in range(1, calls[(s[0], s[4])] + 2)]
    runs = workflows.start_many(len(cases))

    def run(case_and_run):
        (scenario, spec), (arn, token) = case_and_run
        name, approvers, quorum, who, verdict, earlier = scenario
        r = api.register(token, approvers=[{"sub": a} for a in approvers], quorum=quorum)
        assert r.status_code == 201, r.text
        approval_id = r.json()["id"]
        for e in earlier:
            assert api.decide(approval_id, "approve", as_user=e).status_code == 200
        first = api.decide(approval_id, verdict, as_user=who, headers={HEADER: spec})
        return dict(scenario=scenario, spec=spec, arn=arn, token=token, id=approval_id,
                    first=(first.status_code, _error_code(first)))

    t0 = time.monotonic()
    with ThreadPoolExecutor(max_workers=6) as pool:
        results = list(pool.map(run, zip(cases, runs)))
    for res in results:
        assert res["first"][0] in (200, 409, 503), res
        assert proxy.forwarded[res["token"]] <= 1, res
    # Storage is back. A claim left behind runs out its lease; then each approver tries again.
    clock.advance(stack.claim_lease_seconds + 1)

    def settle(res):
        name, approvers, quorum, who, verdict, earlier = res["scenario"]
        approval_id = res["id"]
        view = api.get(approval_id, as_user=who).json()
        res["after_fault"] = view["status"]
        again = None
        if view["status"] == "pending":
            r = api.decide(approval_id, verdict, as_user=who)
            again = (r.status_code, _error_code(r))
            assert r.status_code in (200, 409), (res, r.text)
        if name == "quorum vote":
            # The other approver completes the quorum.
            r = api.decide(approval_id, "approve", as_user="bob")
            assert r.status_code in (200, 409), (res, r.text)
        res["again"] = again
        final = api.get(approval_id, as_user=who).json()
        res["final"] = (final["status"], final.get("verdict"))
        return res

    with ThreadPoolExecutor(max_workers=6) as pool:
        results = list(pool.map(settle, results))

    rows = []
    for res in results:
        status, verdict = res["final"]
        name, _, _, who, wanted, _ = res["scenario"]
        assert proxy.forwarded[res["token"]] == 1, f"{res}: {proxy.forwarded[res['token']]} callbacks"
        workflows.wait_done(res["arn"])
        did = _outcome(workflows, res["arn"])
        # What ringi shows is what the workflow did.
        assert status in ("approved", "rejected", "decided_unconfirmed"), res
        shown = {"approved": "approve", "rejected": "reject"}.get(status, verdict)
        assert shown == did, f"{res}: ringi shows {status}/{verdict}, the workflow took {did}"
        if name != "quorum vote":
            assert did == wanted, res
        rows.append((f"{name} {wanted}", res["spec"], f"{res['first'][0]} {res['first'][1]}",
                     res["after_fault"], "-" if res["again"] is None else f"{res['again'][0]} {res['again'][1]}",
                     status + (f" ({verdict})" if status == "decided_unconfirmed" else "")))
    _write_matrix("Decision", ("decision", "fault", "first answer", "then shown", "retry answer", "final"), rows,
                  calls, time.monotonic() - t0)


def test_lost_answer_then_task_closed_in_the_same_request_is_unconfirmed(stack, workflows, proxy, faulty):
    """The first try reaches Step Functions but its answer is lost; the retry hears "task closed". Before, ringi
    presumed the decision delivered and said `approved`; now it says what it knows."""
    url, api = faulty
    arn, token = workflows.start_paused()
    approval_id = api.register(token).json()["id"]
    proxy.script = ["lost"]
    r = api.decide(approval_id, "approve")
    assert r.status_code == 200, r.text
    assert (r.json()["status"], r.json()["verdict"]) == ("decided_unconfirmed", "approve")
    view = api.get(approval_id).json()
    assert (view["status"], view["verdict"], view["attemptedBy"]) == ("decided_unconfirmed", "approve", "alice")
    again = api.decide(approval_id, "reject")
    assert again.status_code == 409 and again.json()["error"]["code"] == "already_decided"
    assert workflows.wait_done(arn)["status"] == "SUCCEEDED" and _outcome(workflows, arn) == "approve"
    assert proxy.forwarded[token] == 1


def test_ambiguous_callback_then_task_closed_in_a_later_request_is_unconfirmed(stack, workflows, proxy, faulty):
    """alice's approval reaches Step Functions, every answer is lost (503); bob then rejects and Step Functions
    says the task is closed: the approval shows alice's verdict, unconfirmed — not `expired`."""
    url, api = faulty
    arn, token = workflows.start_paused()
    approval_id = api.register(token, approvers=[{"sub": "alice"}, {"sub": "bob"}]).json()["id"]
    proxy.script = ["lost", "500", "500"]
    r = api.decide(approval_id, "approve", as_user="alice")
    assert r.status_code == 503 and r.json()["error"]["code"] == "sfn_unavailable", r.text
    assert api.get(approval_id, as_user="bob").json()["status"] == "pending", "released: still decidable"
    r = api.decide(approval_id, "reject", as_user="bob")
    assert r.status_code == 409 and r.json()["error"]["code"] == "already_decided", r.text
    view = api.get(approval_id, as_user="bob").json()
    assert (view["status"], view["verdict"], view["attemptedBy"]) == ("decided_unconfirmed", "approve", "alice")
    assert workflows.wait_done(arn)["status"] == "SUCCEEDED" and _outcome(workflows, arn) == "approve"
    inbox = requests.get(f"{url}/api/v1/approvals", params={"status": "decided"}, headers=api.auth("bob"), timeout=30)
    item = next(i for i in inbox.json()["items"] if i["id"] == approval_id)
    assert (item["status"], item["verdict"]) == ("decided_unconfirmed", "approve")


def test_a_refused_callback_forgets_its_attempt(stack, workflows, proxy, faulty):
    """Throttled on every try: nothing reached Step Functions, so nothing is on record; a later timeout of the
    task is then an honest `expired`."""
    url, api = faulty
    arn, token = workflows.start_paused(timeout=3)
    approval_id = api.register(token, timeoutSeconds=300).json()["id"]
    proxy.script = ["throttle", "throttle", "throttle"]
    r = api.decide(approval_id, "approve")
    assert r.status_code == 503 and r.json()["error"]["code"] == "sfn_unavailable", r.text
    workflows.wait_done(arn)  # the task times out in Step Functions (3 s)
    r = api.decide(approval_id, "approve")
    assert r.status_code == 409 and r.json()["error"]["code"] == "expired", r.text
    assert api.get(approval_id).json()["status"] == "expired"


def test_every_d1_call_of_a_registration_fails_in_turn(stack, faulty):
    url, api = faulty
    rows = []
    for n in range(1, 4):
        for mode in MODES:
            spec = mode.format(n=n)
            who = f"reg-{secrets.token_hex(4)}@example.com"
            token = "tok-" + secrets.token_hex(8)
            first = api.register(token, approvers=[{"email": who}], headers={HEADER: spec})
            assert first.status_code in (200, 201, 503), first.text
            _error_code(first)
            # The sender redelivers (EventBridge: at least once) until it gets an answer.
            again = api.register(token, approvers=[{"email": who}])
            assert again.status_code in (200, 201), again.text
            if first.status_code in (200, 201):
                assert again.json()["id"] == first.json()["id"], "same token, same body: the same approval"
            rows.append((spec, first, again, who, token))
    time.sleep(3)  # the request mails go out after the responses; a duplicate would too (a wait, not a poll)
    persist = stack.state / "worker-d1faults-d1"
    fingerprints = [__import__("hashlib").sha256(t.encode()).hexdigest() for *_, t in rows]
    stored = d1(stack, "SELECT token_sha256, id, mail_state FROM approvals WHERE token_sha256 IN ("
                + ",".join(f"'{f}'" for f in fingerprints) + ")", persist=persist)
    by_fp = Counter(r["token_sha256"] for r in stored)
    mails = Counter(d for m in stack.sent_mail() for d in m["destinations"]["ToAddresses"])
    table = []
    for (spec, first, again, who, _), fp in zip(rows, fingerprints):
        assert by_fp[fp] == 1, f"{spec}: {by_fp[fp]} approvals for one task token"
        state = next(r["mail_state"] for r in stored if r["token_sha256"] == fp)
        # Planned: one request mail. At most one more; none yet only if the cron is to send it.
        assert mails[who] <= 2, (spec, mails[who])
        assert mails[who] >= 1 or state in ("pending", "failed"), (spec, state)
        answer = f"{first.status_code}" + (f" {_error_code(first)}" if first.status_code >= 400 else "")
        table.append((spec, answer, f"{again.status_code}", state, str(mails[who])))
    _write_matrix("Registration", ("fault", "first answer", "redelivery", "mail_state", "mails"), table)


def test_every_d1_call_of_a_cron_run_fails_in_turn(stack, clock):
    url = stack.extra_worker("d1cron", {"D1_FAULTS": "header"})
    api = Api(stack, url)
    persist = stack.state / "worker-d1cron-d1"
    who = f"cron-{secrets.token_hex(4)}@example.com"
    remind_id = api.register("tok-" + secrets.token_hex(8), approvers=[{"email": who}],
                             timeoutSeconds=3 * 86400).json()["id"]
    retry_who = f"cronretry-{secrets.token_hex(4)}@example.com"
    retry_id = api.register("tok-" + secrets.token_hex(8), approvers=[{"email": retry_who}]).json()["id"]
    # Both request mails out (they follow the responses) before the runs count mails.
    stack.wait_mail(lambda ms: {who, retry_who} <= {d for m in ms for d in m["destinations"]["ToAddresses"]})

    def reminders():
        return sum(1 for m in stack.sent_mail() if who in m["destinations"]["ToAddresses"]
                   and m["subject"].startswith("[ringi] Reminder"))

    def requests_mailed():
        return sum(1 for m in stack.sent_mail() if retry_who in m["destinations"]["ToAddresses"])

    # Calls of this run: 1 release_stale_claims, 2 expire_due, 3 close_due, 4 purge, 5 mail_retries,
    # 6 set_mail_state (after the retried mail), 7 reminders_due, 8 mark_reminded (after the reminder),
    # 9 purge_events (the audit retention), 10 schedule_due (no schedule here), 11 on_expiry_due (nothing due here:
    # its own failure touches nothing else).
    table = []
    for n in range(1, 12):
        spec = f"call={n}"
        expiring = api.register("tok-" + secrets.token_hex(8), approvers=[{"sub": "alice"}], timeoutSeconds=2).json()["id"]
        soon = int(time.time() * 1000) + 2 * 3600 * 1000
        d1(stack, f"UPDATE approvals SET expires_at = {soon}, reminded_at = NULL WHERE id = '{remind_id}'; "
                  f"UPDATE approvals SET mail_state = 'failed', mail_attempts = 0 WHERE id = '{retry_id}'",
           persist=persist)
        clock.advance(3)  # past the 2 s expiry
        r0, m0 = reminders(), requests_mailed()
        stack.run_cron(url, d1_fault=spec)
        r1, m1 = reminders(), requests_mailed()
        after_fault = d1(stack, f"SELECT status FROM approvals WHERE id = '{expiring}'", persist=persist)[0]["status"]
        # Every step is independent: only the step whose call failed did nothing.
        assert (after_fault == "expired") == (n != 2), (spec, after_fault)
        assert r1 - r0 == (0 if n == 7 else 1) and m1 - m0 == (0 if n == 5 else 1), (spec, r1 - r0, m1 - m0)
        stack.run_cron(url)
        r2, m2 = reminders(), requests_mailed()
        state = d1(stack, f"SELECT a.status, b.reminded_at IS NOT NULL AS reminded, c.mail_state FROM approvals a, "
                          f"approvals b, approvals c WHERE a.id = '{expiring}' AND b.id = '{remind_id}' "
                          f"AND c.id = '{retry_id}'", persist=persist)[0]
        # Nothing lost once a clean run followed …
        assert state["status"] == "expired" and state["reminded"] == 1 and state["mail_state"] == "sent", (spec, state)
        assert r2 - r0 >= 1 and m2 - m0 >= 1, (spec, r0, r2, m0, m2)
        # … and at most one mail more than planned.
        assert r2 - r0 <= 2 and m2 - m0 <= 2, (spec, r0, r2, m0, m2)
        table.append((spec, after_fault, str(r1 - r0), str(m1 - m0), state["status"], str(r2 - r0), str(m2 - m0)))
    _write_matrix("Cron", ("fault", "expiring after faulty run", "reminders (faulty run)", "request mail retries (faulty run)",
                           "after a clean run", "reminders total", "mail retries total"), table)


def _write_matrix(title, header, rows, calls=None, seconds=None):
    lines = [f"### {title}: D1 fault matrix (observed)", ""]
    if calls:
        lines += ["D1 calls per fault-free request: " + ", ".join(f"{k[0]} {k[1]}: {v}" for k, v in calls.items()), ""]
    lines += ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    if seconds is not None:
        lines += ["", f"({len(rows)} cases in {seconds:.0f} s)"]
    text = "\n".join(lines) + "\n"
    print("\n" + text)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / "d1-fault-matrix.md"
    old = path.read_text() if path.exists() and title != "Decision" else ""
    path.write_text(old + text + "\n")
