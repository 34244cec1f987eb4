"""The round-trip budget: how many sequential remote round trips (D1 — a batch is one —, Step Functions, SES) each
kind of request makes, as the worker itself counts them (`x-ringi-round-trips`, sent while a dev switch is on; a
cron run logs its count). Once the worker runs far from D1's primary and the AWS region, each of these costs a
WAN round trip: a regression here is a latency regression in production, whatever a loopback timing says."""
from __future__ import annotations

import json
import re
import secrets
import time

import pytest
import requests

from support.api import Api, d1, round_trips

# What each request may cost: the budget of docs/design.md §7 ("Round trips").
BUDGET = {
    "register": {"d1": 1, "sfn": 0, "ses": 0},  # the request mail goes after the response
    "view": {"d1": 1, "sfn": 0, "ses": 0},
    "inbox": {"d1": 1, "sfn": 0, "ses": 0},
    # One round trip checks the caller and takes the claim (or records the vote and re-counts); one writes the
    # outcome after Step Functions answered.
    "decision approve": {"d1": 2, "sfn": 1, "ses": 0},
    "decision reject": {"d1": 2, "sfn": 1, "ses": 0},
    "quorum vote (not final)": {"d1": 1, "sfn": 0, "ses": 0},
    "quorum vote (final)": {"d1": 2, "sfn": 1, "ses": 0},
    # The 7th: the audit retention; the 8th: the schedules' look-up (`schedule_due`); the 9th: the look-up of
    # approvals whose outcome on expiry (`onExpiry`) is due.
    "cron tick (nothing due)": {"d1": 9, "sfn": 0, "ses": 0},
}


@pytest.fixture(scope="module")
def counted(stack):
    """A worker with the latency switch on (per-request header, none sent here: no delay), so that its responses
    carry their round-trip counts."""
    url = stack.extra_worker("trips", {"INJECT_LATENCY": "header"})
    return url, Api(stack, url)


def test_round_trips_per_request_type(stack, workflows, counted):
    url, api = counted
    seen = {}
    (a1, t1), (a2, t2), (a3, t3) = workflows.start_many(3)
    r = api.register(t1)
    assert r.status_code == 201, r.text
    seen["register"] = round_trips(r)
    single = r.json()["id"]
    seen["view"] = round_trips(api.get(single))
    inbox = requests.get(f"{url}/api/v1/approvals", params={"status": "pending"}, headers=api.auth("alice"), timeout=30)
    assert inbox.status_code == 200
    seen["inbox"] = round_trips(inbox)
    d = api.decide(single, "approve")
    assert d.status_code == 200 and d.json()["status"] == "approved", d.text
    seen["decision approve"] = round_trips(d)

    rejected = api.register(t2).json()["id"]
    d = api.decide(rejected, "reject")
    assert d.status_code == 200 and d.json()["status"] == "rejected", d.text
    seen["decision reject"] = round_trips(d)

    quorum = api.register(t3, approvers=[{"sub": "alice"}, {"sub": "bob"}], quorum="all").json()["id"]
    d = api.decide(quorum, "approve", as_user="alice")
    assert d.status_code == 200 and d.json()["status"] == "pending", d.text
    seen["quorum vote (not final)"] = round_trips(d)
    d = api.decide(quorum, "approve", as_user="bob")
    assert d.status_code == 200 and d.json()["status"] == "approved", d.text
    seen["quorum vote (final)"] = round_trips(d)
    for arn in (a1, a2, a3):
        assert workflows.wait_done(arn)["status"] == "SUCCEEDED"

    # A cron run with nothing due counts its round trips in its log line.
    log = stack.state / "worker-trips.log"
    before = log.stat().st_size
    stack.run_cron(url)
    deadline = time.monotonic() + 10
    line = None
    while line is None and time.monotonic() < deadline:
        line = next((json.loads(m) for m in re.findall(r'\{[^\n]*"event":"cron"[^\n]*\}',
                                                       log.read_bytes()[before:].decode(errors="replace"))), None)
        time.sleep(0.2)
    assert line is not None, "no cron log line"
    seen["cron tick (nothing due)"] = {k: int(v) for k, v in (p.split("=") for p in line["roundTrips"].split(";"))}

    print("\nround trips per request type:\n" + "\n".join(
        f"  {kind:<26} " + ";".join(f"{k}={v}" for k, v in counts.items()) for kind, counts in seen.items()))
    assert seen == BUDGET


def test_the_latency_header_is_refused_when_malformed(counted):
    url, api = counted
    r = api.get("x" * 22, headers={"x-ringi-latency": "d1=forever"})
    assert r.status_code == 400 and r.json()["error"]["field"] == "x-ringi-latency", r.text
    r = api.get(secrets.token_urlsafe(16), headers={"x-ringi-latency": "d1=1,aws=1"})
    assert r.status_code == 404 and round_trips(r)["d1"] == 1


def test_a_decision_that_is_refused_takes_nothing(stack, workflows, counted):
    """The first round trip writes only for a listed approver whose request the rules accept (the conditions are in
    the SQL): a non-approver, or an approver whose group is already satisfied, leaves no claim and no attempt behind,
    in that one round trip."""
    url, api = counted
    (_, t1), (_, t2) = workflows.start_many(2)
    single = api.register(t1).json()["id"]
    groups = api.register(t2, approvers=[{"group": "eng"}, {"group": "finance"}], quorum="all").json()["id"]
    r = api.decide(single, "approve", as_user="mallory")
    assert r.status_code == 404 and round_trips(r) == {"d1": 1, "sfn": 0, "ses": 0}, r.text
    r = api.decide(single, "reject", as_user="mallory", groups=["eng"])
    assert r.status_code == 404 and round_trips(r)["d1"] == 1, r.text
    assert api.decide(groups, "approve", as_user="e1", groups=["eng"]).json()["status"] == "pending"
    r = api.decide(groups, "approve", as_user="e2", groups=["eng"])
    assert r.status_code == 409 and r.json()["error"]["code"] == "already_satisfied", r.text
    assert round_trips(r) == {"d1": 1, "sfn": 0, "ses": 0}
    # Separation of duty: a listed approver who requested it is refused in that one round trip as well.
    [(_, t3)] = workflows.start_many(1)
    own = api.register(t3, approvers=[{"group": "finance"}], requestedBy=[{"sub": "rita"}]).json()["id"]
    for verdict in ("approve", "reject"):
        r = api.decide(own, verdict, as_user="rita", groups=["finance"])
        assert r.status_code == 403 and r.json()["error"]["code"] == "self_approval", r.text
        assert round_trips(r) == {"d1": 1, "sfn": 0, "ses": 0}
    rows = d1(stack, f"SELECT id, status, claim_id, attempt_id FROM approvals WHERE id IN ('{single}', '{groups}', "
                     f"'{own}')", persist=stack.state / "worker-trips-d1")
    assert len(rows) == 3
    assert all((x["status"], x["claim_id"], x["attempt_id"]) == ("pending", None, None) for x in rows), rows
    assert d1(stack, f"SELECT count(*) AS n FROM decisions WHERE approval_id = '{own}'",
              persist=stack.state / "worker-trips-d1") == [{"n": 0}]
    # Still decidable at once by who may decide it.
    assert api.decide(single, "approve").json()["status"] == "approved"
    assert api.decide(groups, "approve", as_user="f1", groups=["finance"]).json()["status"] == "approved"
    assert api.decide(own, "approve", as_user="f1", groups=["finance"]).json()["status"] == "approved"
