"""The rules, on both backends (`backend`: D1, then DynamoDB): a quorum counts listed principals — one person
counts once, and two members of one group approving at the same moment satisfy that group once, never the
other group's slot; one decision reaches Step Functions once. Real paused executions in moto."""
from __future__ import annotations

import secrets
from concurrent.futures import ThreadPoolExecutor

import requests

from support.api import Api
from support.audit import OPS, chained_events, events_of, verify_audit
from support.backends import api  # noqa: F401  (fixture: the module's backend's)

ROUNDS = 25


def test_two_members_of_one_group_approving_at_once_satisfy_it_once(backend, api, workflows):
    eng, fin = "eng-" + secrets.token_hex(3), "fin-" + secrets.token_hex(3)
    executions = workflows.start_many(ROUNDS)
    ids = []
    for _, token in executions:
        r = api.register(token, approvers=[{"group": eng}, {"group": fin}], quorum="all")
        assert r.status_code in (200, 201), r.text  # 200: a write retried after a slow answer had landed
        ids.append(r.json()["id"])

    def decide(job):
        approval_id, user, group = job
        tok = backend.stack.mint(user, groups=[group])
        return requests.post(f"{backend.url}/api/v1/approvals/{approval_id}/decision", json={"decision": "approve"},
                             headers={"authorization": f"Bearer {tok}"}, timeout=60)

    # Each round: two engineers at the same moment (every round's pair in flight together).
    jobs = [(i, user, eng) for i in ids for user in (f"e1-{i}", f"e2-{i}")]
    with ThreadPoolExecutor(max_workers=10) as pool:
        answers = list(pool.map(decide, jobs))
    for n, approval_id in enumerate(ids):
        pair = answers[2 * n:2 * n + 2]
        counted = [r for r in pair if r.status_code == 200]
        assert len(counted) == 1, [(r.status_code, r.text) for r in pair]
        assert counted[0].json()["status"] == "pending", counted[0].text
        assert counted[0].json()["progress"] == {"approvals": 1, "required": 2}, counted[0].text
        refused = next(r for r in pair if r.status_code != 200)
        assert refused.status_code == 409, refused.text
        assert refused.json()["error"]["code"] in ("already_satisfied", "in_progress"), refused.text
        assert backend.stored(approval_id, "status", "votes") == {"status": "pending", "votes": 1}
        view = api.get(approval_id, as_user=f"fin-{n}", groups=[fin]).json()
        assert view["progress"] == {"approvals": 1, "required": 2}, view

    # Finance completes each: the execution resumes, once.
    with ThreadPoolExecutor(max_workers=10) as pool:
        done = list(pool.map(decide, [(i, f"f-{i}", fin) for i in ids]))
    for (arn, _), approval_id, r in zip(executions, ids, done):
        assert r.status_code == 200 and r.json()["status"] == "approved", r.text
        assert workflows.wait_done(arn)["status"] == "SUCCEEDED"
        assert [e["type"] for e in workflows.history(arn)].count("TaskSucceeded") == 1
        assert backend.stored(approval_id, "status", "votes") == {"status": "approved", "votes": 2}


FORM_ROUNDS = 8


def test_the_feedback_path_completes_a_quorum_once_under_its_guards(backend, api, workflows):
    """With a form there is no guessed first round trip: the vote and the claim are separate writes, and the
    claim that completes the quorum commits under the rules' guards on both backends."""
    eng, fin = "eng-" + secrets.token_hex(3), "fin-" + secrets.token_hex(3)
    form = [{"name": "note", "label": "Note", "type": "text"}]
    executions = workflows.start_many(FORM_ROUNDS)
    ids = []
    for _, token in executions:
        r = api.register(token, approvers=[{"group": eng}, {"group": fin}], quorum="all", form=form)
        assert r.status_code in (200, 201), r.text  # 200: a write retried after a slow answer had landed
        ids.append(r.json()["id"])

    def decide(job):
        approval_id, user, group = job
        tok = backend.stack.mint(user, groups=[group])
        return requests.post(f"{backend.url}/api/v1/approvals/{approval_id}/decision",
                             json={"decision": "approve", "feedback": {"note": user}},
                             headers={"authorization": f"Bearer {tok}"}, timeout=60)

    for approval_id in ids:
        r = decide((approval_id, f"e-{approval_id}", eng))
        assert r.status_code == 200 and r.json()["status"] == "pending", r.text
    # Two members of finance complete each at the same moment: one decision, one execution resumed once.
    jobs = [(i, user, fin) for i in ids for user in (f"f1-{i}", f"f2-{i}")]
    with ThreadPoolExecutor(max_workers=10) as pool:
        answers = list(pool.map(decide, jobs))
    for n, ((arn, _), approval_id) in enumerate(zip(executions, ids)):
        pair = answers[2 * n:2 * n + 2]
        won = [r for r in pair if r.status_code == 200]
        assert len(won) == 1 and won[0].json()["status"] == "approved", [(r.status_code, r.text) for r in pair]
        refused = next(r for r in pair if r.status_code != 200)
        assert refused.status_code == 409, refused.text
        assert workflows.wait_done(arn)["status"] == "SUCCEEDED"
        assert [e["type"] for e in workflows.history(arn)].count("TaskSucceeded") == 1
        assert backend.stored(approval_id, "status", "votes") == {"status": "approved", "votes": 2}


CHAIN_ROUNDS = 2
CHAIN_VOTERS = 5


def test_votes_at_the_same_moment_extend_the_approvals_hash_chain_without_forking_it(backend, workflows):
    """Five approvers of each of two approvals vote at the same moment (ten writers of events, five per chain):
    each approval's events still form one chain — places 1..n, each event following the one before — that the
    operators' checker verifies; then the last vote decides it and the chain goes on."""
    url = backend.extra_worker("chain", {"ADMIN_GROUP": OPS})
    api = Api(backend.stack, url)
    voters = [f"v{k}" for k in range(CHAIN_VOTERS)] + ["last"]
    executions = workflows.start_many(CHAIN_ROUNDS)
    ids = []
    for _, token in executions:
        r = api.register(token, approvers=[{"sub": v} for v in voters], quorum="all")
        assert r.status_code in (200, 201), r.text
        ids.append(r.json()["id"])

    def vote(job):
        approval_id, user = job
        return requests.post(f"{url}/api/v1/approvals/{approval_id}/decision", json={"decision": "approve"},
                             headers={"authorization": f"Bearer {backend.stack.mint(user)}"}, timeout=60)

    with ThreadPoolExecutor(max_workers=CHAIN_ROUNDS * CHAIN_VOTERS) as pool:
        answers = list(pool.map(vote, [(i, v) for i in ids for v in voters[:-1]]))
    assert all(r.status_code == 200 and r.json()["status"] == "pending" for r in answers), \
        [(r.status_code, r.text) for r in answers if r.status_code != 200]
    for (arn, _), approval_id in zip(executions, ids):
        events = chained_events(backend.stack, url, approval_id, count=1 + CHAIN_VOTERS)
        assert [e["kind"] for e in events].count("voted") == CHAIN_VOTERS, events
        assert sorted(e["chain"]["n"] for e in events) == list(range(1, len(events) + 1)), events
        assert verify_audit.check(events)[approval_id]["ok"], verify_audit.check(events)
        r = vote((approval_id, "last"))
        assert r.status_code == 200 and r.json()["status"] == "approved", r.text
        assert workflows.wait_done(arn)["status"] == "SUCCEEDED"
        after = chained_events(backend.stack, url, approval_id, count=len(events) + 1)
        decided = next(e for e in after if e["kind"] == "decided")
        assert decided["chain"]["n"] == len(after) and verify_audit.check(after)[approval_id]["ok"], after


def test_an_event_left_unsealed_is_sealed_by_the_next_cron_run(backend, workflows):
    """A request that wrote an event and died before sealing it (or whose seal failed) leaves the event out of
    the chain: the next cron run finds it — on D1 by its index, on DynamoDB by its mark — and seals it, and the
    approval's chain verifies with it at the end."""
    url = backend.extra_worker("chain", {"ADMIN_GROUP": OPS})
    api = Api(backend.stack, url)
    arn, token = workflows.start_paused()
    r = api.register(token, approvers=[{"sub": "alice"}])
    assert r.status_code == 201, r.text
    approval_id = r.json()["id"]
    sealed = chained_events(backend.stack, url, approval_id, count=1)
    backend.leave_unsealed(approval_id, "chain")
    left = events_of(backend.stack, url, approval_id)
    assert len(left) == len(sealed) + 1 and left[-1].get("chain") is None, left
    backend.run_cron(url)
    after = chained_events(backend.stack, url, approval_id, count=len(left), timeout=5)
    assert [e["chain"]["n"] for e in after] == list(range(1, len(after) + 1)), after
    assert verify_audit.check(after)[approval_id]["ok"], verify_audit.check(after)
