"""Faults between the worker and Step Functions, and in D1 at the same time, lose nothing and duplicate nothing;
a worker killed between claim and callback leaves the approval decidable after the lease (on both storage
backends: `backend`, D1 then DynamoDB)."""
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests

from support.api import Api
from support.faultproxy import FaultProxy

N = 200


@pytest.fixture(scope="module")
def proxy(stack):
    p = FaultProxy(stack.ports.moto).start()
    yield p
    p.stop()


def test_two_hundred_decisions_through_faults(stack, workflows, proxy, clock):
    """Step Functions answers 500 / throttles / resets / stalls (proxy "mix") while 10 % of D1 calls fail
    (seeded per request): a third of the requests with calls that fail on every try, a third with writes that
    ran but whose answer was lost (every try), a third with first tries only (the retry succeeds). (D1 only: the
    storage faults are D1's injection, `D1_FAULTS`.)"""
    url = stack.extra_worker("faults", {"SFN_ENDPOINT": f"http://127.0.0.1:{proxy.port}", "D1_FAULTS": "header"})
    api = Api(stack, url)
    runs = workflows.start_many(N)
    seq = iter(range(10**6))

    def d1_fault():
        i = next(seq)
        return {"x-ringi-d1-fault": f"pct=10,seed={i}" + ("", ",after", ",once")[i % 3]}

    def register(run):
        arn, token = run
        for _ in range(6):  # the sender redelivers until it gets an answer
            r = api.register(token, headers=d1_fault())
            if r.status_code in (200, 201):
                return r.json()["id"], (arn, token)
            assert r.status_code == 503 and r.json()["error"]["code"] == "storage_unavailable", r.text
        raise AssertionError("registration never went through")

    with ThreadPoolExecutor(max_workers=8) as pool:
        ids = dict(pool.map(register, runs))
    assert len(ids) == N, "one approval per task"
    proxy.mode = "mix"

    answers = Counter()

    def decide(approval_id):
        # A user who retries a few times when told "unavailable, retry later".
        for _ in range(4):
            r = api.decide(approval_id, headers=d1_fault())
            body = r.json()
            answers[f"{r.status_code} {body.get('error', {}).get('code') or body.get('status')}"] += 1
            if r.status_code != 503:
                return r.status_code, body
        return r.status_code, body

    # Sixteen at a time: a stalled call holds its request for the worker's attempt timeout (3 s), so the run's
    # length is the stalls' time over the concurrency.
    with ThreadPoolExecutor(max_workers=16) as pool:
        outcomes = dict(zip(ids, pool.map(decide, ids)))
    codes = Counter(f"{s} {b.get('error', {}).get('code') or b.get('status')}" for s, b in outcomes.values())
    print("injected:", dict(proxy.injected), "every answer:", dict(answers), "after up to 4 tries:", dict(codes))
    assert {s for s, _ in outcomes.values()} <= {200, 409, 503}, outcomes
    # Nothing lost: every approval is decided (possibly unconfirmed) or still decidable …
    proxy.mode = "ok"
    clock.advance(stack.claim_lease_seconds + 1)  # a claim left by a failed final write runs out its lease
    states = {i: api.get(i).json()["status"] for i in ids}
    assert set(states.values()) <= {"approved", "pending", "decided_unconfirmed"}, states
    # … and the still-pending ones go through once both are healthy again.
    for i in [i for i, s in states.items() if s == "pending"]:
        r = api.decide(i)
        assert r.status_code in (200, 409), r.text
    final = Counter()
    for i, (arn, token) in ids.items():
        view = api.get(i).json()
        final[view["status"]] += 1
        assert view["status"] in ("approved", "decided_unconfirmed"), view
        assert view["verdict"] == "approve", view
        assert proxy.forwarded[token] == 1, f"{i}: {proxy.forwarded[token]} callbacks reached Step Functions"
    print("final states:", dict(final))
    # Every workflow resumed exactly once, with the decision ringi shows.
    for arn, _ in ids.values():
        done = workflows.wait_done(arn)
        assert done["status"] == "SUCCEEDED"
        assert [e["type"] for e in workflows.history(arn)].count("TaskSucceeded") == 1
    assert sum(proxy.injected[f] for f in ("500", "throttle", "reset", "stall")) >= N // 4, proxy.injected


def test_worker_killed_between_claim_and_callback(stack, backend, workflows, proxy, clock):
    url = backend.extra_worker("crash", {"SFN_ENDPOINT": f"http://127.0.0.1:{proxy.port}"})
    api = Api(stack, url)
    arn, token = workflows.start_paused()
    approval_id = api.register(token).json()["id"]
    proxy.mode = "hold"
    proxy.received.clear()
    inflight = threading.Thread(target=lambda: _swallow(lambda: api.decide(approval_id)), daemon=True)
    inflight.start()
    assert proxy.received.wait(20), "the worker never called Step Functions"
    # The claim is taken and the callback is in flight: crash the worker.
    assert backend.stored(approval_id, "status", worker="crash") == {"status": "claimed"}
    backend.kill("crash")
    proxy.mode = "ok"
    url = backend.extra_worker("crash", {"SFN_ENDPOINT": f"http://127.0.0.1:{proxy.port}"})
    api = Api(stack, url)
    assert api.get(approval_id).json()["status"] == "pending", "a claim in flight is shown as pending"
    r = api.decide(approval_id)
    if r.status_code == 409:  # the lease is not over yet: the answer says how long it has left
        assert r.json()["error"]["code"] == "in_progress"
        wait = int(r.headers["retry-after"])
        assert 1 <= wait <= stack.claim_lease_seconds, wait
        clock.advance(wait)
        r = api.decide(approval_id)
    assert r.status_code == 200, r.text
    assert workflows.wait_done(arn)["status"] == "SUCCEEDED"
    assert [e["type"] for e in workflows.history(arn)].count("TaskSucceeded") == 1
    assert proxy.forwarded[token] == 1


def test_a_claim_left_behind_is_waited_out_not_refused(stack, workflows, proxy, clock):
    """Step Functions unavailable, and storage failing when the claim is given back: the claim stays until its
    lease ends, so the 503 asks for the lease, not the usual second or two; a retry before that is told
    `in_progress` with the time left; one when `Retry-After` says goes through. (D1 only: `D1_FAULTS`.)"""
    url = stack.extra_worker("held", {"SFN_ENDPOINT": f"http://127.0.0.1:{proxy.port}", "D1_FAULTS": "header"})
    api = Api(stack, url)
    arn, token = workflows.start_paused()
    approval_id = api.register(token).json()["id"]
    proxy.mode = "500"
    try:
        r = api.decide(approval_id, headers={"x-ringi-d1-fault": "what=release"})
    finally:
        proxy.mode = "ok"
    assert (r.status_code, r.json()["error"]["code"]) == (503, "sfn_unavailable"), r.text
    assert int(r.headers["retry-after"]) == stack.claim_lease_seconds
    early = api.decide(approval_id)
    assert (early.status_code, early.json()["error"]["code"]) == (409, "in_progress"), early.text
    left = int(early.headers["retry-after"])
    assert 1 <= left <= stack.claim_lease_seconds
    clock.advance(left)
    r = api.decide(approval_id)
    assert r.status_code == 200, r.text
    assert workflows.wait_done(arn)["status"] == "SUCCEEDED"
    assert proxy.forwarded[token] == 1


def _swallow(fn):
    try:
        fn()
    except requests.RequestException:
        pass
